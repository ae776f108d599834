//! A sum of term problems before it is loaded: its parts, each a [`TermProblem`] of its own
//! term type, checked to share `n`.

use crate::backend::evaluator::{Evaluator, LeastSquaresEvaluator};
use crate::backend::gpu::Launcher;
use crate::backend::load;
use crate::backend::problem::{ProblemError, TermProblem};
use crate::error::BackendError;
use gpu_kernels::{Kernels, ResidualKernels, SumOfSquares};
use std::fmt;
use std::sync::Arc;

/// One part of a [`TermSum`]: a term problem whose term type is erased, ready to load.
/// Implemented by every [`TermProblem`] of a registered term.
pub trait Part: fmt::Debug + Send {
    /// The number of variables.
    fn n(&self) -> usize;
    /// The term's registered name.
    fn name(&self) -> &'static str;
    /// Loads the part on the GPU of `launcher`, or on the CPU for `None`.
    fn load(
        self: Box<Self>,
        launcher: Option<&Arc<Launcher>>,
    ) -> Result<Box<dyn Evaluator>, BackendError>;
}

/// A part of a [`ResidualSum`]: a sum of squares of a residual term, which loads with its
/// normal-equations pass.
pub trait ResidualPart: Part {
    /// Loads the part with its residuals on the GPU of `launcher`, or on the CPU for `None`.
    fn load_residuals(
        self: Box<Self>,
        launcher: Option<&Arc<Launcher>>,
    ) -> Result<Box<dyn LeastSquaresEvaluator>, BackendError>;
}

impl<T: Kernels + 'static> Part for TermProblem<T> {
    fn n(&self) -> usize {
        TermProblem::n(self)
    }

    fn name(&self) -> &'static str {
        T::NAME
    }

    fn load(
        self: Box<Self>,
        launcher: Option<&Arc<Launcher>>,
    ) -> Result<Box<dyn Evaluator>, BackendError> {
        load::terms(*self, launcher)
    }
}

impl<T: ResidualKernels + 'static> ResidualPart for TermProblem<SumOfSquares<T>> {
    fn load_residuals(
        self: Box<Self>,
        launcher: Option<&Arc<Launcher>>,
    ) -> Result<Box<dyn LeastSquaresEvaluator>, BackendError> {
        load::residuals(*self, launcher)
    }
}

/// A term problem as a part of a sum whose parts are `P`s.
pub trait IntoPart<P: ?Sized> {
    /// The part, boxed.
    fn into_part(self) -> Box<P>;
}

impl<T: Kernels + 'static> IntoPart<dyn Part> for TermProblem<T> {
    fn into_part(self) -> Box<dyn Part> {
        Box::new(self)
    }
}

impl<T: ResidualKernels + 'static> IntoPart<dyn ResidualPart> for TermProblem<SumOfSquares<T>> {
    fn into_part(self) -> Box<dyn ResidualPart> {
        Box::new(self)
    }
}

/// A sum of term problems over the same `n` variables, `f(x) = Σ_parts Σ_k φ_k(x)`: a data
/// term with a penalty or a prior beside it, say. Each part keeps its own term type, window,
/// size and data; [`Backend::load_sum`](crate::Backend::load_sum) loads them all on one
/// backend as one objective.
///
/// ```
/// use cudamin_host::{Backend, TermProblem, TermSum};
/// use gpu_kernels::L2Penalty;
/// use gpu_kernels::terms::SeedExpSum;
///
/// let n = 3;
/// // Σ xᵢ² + e^{xᵢ}, plus ½·Σ wᵢ·(xᵢ − cᵢ)² with w = 2, c = 1: columns w, then c.
/// let data = TermProblem::<SeedExpSum>::new(n)?;
/// let penalty = TermProblem::<L2Penalty>::with_data(n, [[2.0; 3], [1.0; 3]].concat(), n)?;
/// let mut evaluator = Backend::Cpu.load_sum(TermSum::of(data).plus(penalty)?)?;
/// let f = evaluator.value(&[0.0; 3])?;
/// assert_eq!(f, 3.0 * (1.0 + 1.0)); // e⁰ per variable, and ½·2·1² per variable
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TermSum<P: ?Sized = dyn Part> {
    n: usize,
    parts: Vec<Box<P>>,
}

/// A sum of residual terms' sums of squares, `f(x) = Σ_parts Σ_k r_k(x)²`: a data fit with
/// residuals of a penalty beside it, say. Levenberg–Marquardt takes it
/// ([`Backend::load_least_squares_sum`](crate::Backend::load_least_squares_sum)).
pub type ResidualSum = TermSum<dyn ResidualPart>;

impl TermSum {
    /// A sum of one part, to which [`plus`](TermSum::plus) adds others.
    pub fn of<T: Kernels + 'static>(first: TermProblem<T>) -> Self {
        Self {
            n: first.n(),
            parts: vec![Box::new(first)],
        }
    }
}

impl ResidualSum {
    /// A sum of squares of one residual term, to which [`plus`](TermSum::plus) adds others.
    pub fn of_residuals<T: ResidualKernels + 'static>(first: TermProblem<SumOfSquares<T>>) -> Self {
        Self {
            n: first.n(),
            parts: vec![Box::new(first)],
        }
    }
}

impl<T: Kernels + 'static> TermProblem<T> {
    /// This problem plus `other` over the same variables: [`TermSum::of`]`(self).plus(other)`.
    pub fn plus<U: Kernels + 'static>(
        self,
        other: TermProblem<U>,
    ) -> Result<TermSum, ProblemError> {
        TermSum::of(self).plus(other)
    }
}

impl<P: Part + ?Sized> TermSum<P> {
    /// The sum with `next` added as its last part; refused unless it has the sum's `n`.
    pub fn plus<U: Kernels + 'static>(mut self, next: TermProblem<U>) -> Result<Self, ProblemError>
    where
        TermProblem<U>: IntoPart<P>,
    {
        if next.n() != self.n {
            return Err(ProblemError::PartSize {
                term: U::NAME,
                n: next.n(),
                first: self.parts[0].name(),
                expected: self.n,
            });
        }
        self.parts.push(next.into_part());
        Ok(self)
    }

    /// The number of variables.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The parts, in the sum's order.
    pub fn parts(&self) -> &[Box<P>] {
        &self.parts
    }

    pub(crate) fn into_parts(self) -> Vec<Box<P>> {
        self.parts
    }
}

impl<P: Part + ?Sized> fmt::Debug for TermSum<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TermSum")
            .field("n", &self.n)
            .field("parts", &self.parts)
            .finish()
    }
}
