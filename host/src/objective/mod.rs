//! Objectives: what a solver minimizes.
//!
//! [`Objective`] is the solver's view: a value and a gradient at `x`. [`TermObjective`] is the
//! one built from a registered term: a [`TermProblem`](crate::TermProblem) (term, `n`, data)
//! loaded on a [`Backend`](crate::Backend), with gradients computed per term by the kernels,
//! exactly or by finite differences ([`Gradient`]). Implement [`Objective`] yourself for a
//! function with an analytic gradient.

mod device;
mod fixed;
mod least_squares;

pub use device::{DeviceVector, DeviceVectors, OnDevice, checked_against};
pub use fixed::{FixedObjective, Held, free_factor};
pub use least_squares::LeastSquaresObjective;

use crate::backend::{Evaluator, Gradient, PieceEvaluator, StepBounds};
pub use crate::error::EvalError;

/// A function to minimize, with its gradient.
pub trait Objective {
    /// The number of variables.
    fn dim(&self) -> usize;
    /// `f(x)`.
    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError>;
    /// `∇f(x)`, written to `g`.
    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError>;

    /// `f(x)`, and `∇f(x)` written to `g`: what the solver asks for when it needs both at one
    /// point. The default calls [`value`](Objective::value) then
    /// [`gradient`](Objective::gradient); implement it when both share work.
    fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let f = self.value(x)?;
        self.gradient(x, g)?;
        Ok(f)
    }

    /// A more accurate gradient at `x` than [`gradient`](Objective::gradient) gives, written
    /// to `into`, and which one it is; `None` (and `into` as it was) when the gradient is
    /// exact. The solver asks once, at the solution, measures its gradient's distance from
    /// this one in its own norm ([`GradientError`]) and reports success only when that is at
    /// most `gtol` (or, for a stop on `ftol`, under a tenth of the gradient's norm). The
    /// default says exact: implement it when your gradient is approximate.
    fn reference_gradient(
        &mut self,
        x: &[f64],
        into: &mut [f64],
    ) -> Result<Option<Gradient>, EvalError> {
        let _ = (x, into);
        Ok(None)
    }

    /// What a backend offers a solver beyond values and gradients, where one evaluates this
    /// objective ([`OnBackend`]): its device, its pieces, its box for finite differences. Only
    /// cudamin's term objectives have it; leave the default for your own.
    fn on_backend(&mut self) -> Option<&mut dyn OnBackend> {
        None
    }
}

/// What a solver may ask of an objective that a backend evaluates, beyond values and
/// gradients ([`Objective::on_backend`]). Each answer has a default that asks for nothing:
/// the solver then does without.
pub trait OnBackend {
    /// The device this objective's problem lives on, when it does: the solver then keeps its
    /// vectors there too. Term objectives loaded on a GPU backend have one, and through theirs
    /// the solvers' view of one with variables held fixed. An error where the device has the
    /// problem but cannot take the solve's vectors: the solve ends with it rather than moving
    /// to host memory unseen.
    fn device(&mut self) -> Result<Option<OnDevice<'_>>, EvalError> {
        Ok(None)
    }

    /// This objective's value and gradient by pieces of `x` ([`PieceEvaluator`]), where it is
    /// a sum of terms that allow it: L-BFGS then evaluates its first trial point in the sweep
    /// that forms it (see `solver::trial_sweep`). `None` keeps the separate passes.
    fn pieces(&self) -> Option<&dyn PieceEvaluator> {
        None
    }

    /// Keeps the points of finite-difference gradients within `bounds` until called again
    /// (L-BFGS-B sets its box for the solve, then lifts it). The default does nothing: a
    /// gradient that takes no points outside `x` has nothing to confine.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        let _ = bounds;
        Ok(())
    }
}

/// `objective`'s finite-difference points kept within `bounds`, where a backend evaluates it.
pub(crate) fn confine_steps(
    objective: &mut (dyn Objective + '_),
    bounds: &StepBounds,
) -> Result<(), EvalError> {
    match objective.on_backend() {
        Some(backed) => backed.confine_steps(bounds),
        None => Ok(()),
    }
}

/// How far an approximate gradient is from the true one, measured against a more accurate
/// gradient at the same point ([`Objective::reference_gradient`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradientError {
    /// `‖g − g_reference‖` in the solver's norm; for L-BFGS-B, the distance between the two
    /// projected gradients, the quantity its `gtol` test reads.
    pub estimate: f64,
    /// The gradient measured against (see `backend::checked_against`).
    pub reference: Gradient,
}

/// How far a gradient at `x` is from `objective`'s reference gradient there, as `distance`
/// measures it given the reference (in the solver's own terms); `None` where the gradient is
/// exact.
pub(crate) fn gradient_error(
    objective: &mut (dyn Objective + '_),
    x: &[f64],
    distance: impl FnOnce(&mut [f64]) -> f64,
) -> Result<Option<GradientError>, EvalError> {
    let n = x.len();
    let mut reference = crate::linalg::try_zeros(n).ok_or(EvalError::OutOfMemory {
        what: "the reference gradient that checks a finite-difference one",
        bytes: n.saturating_mul(size_of::<f64>()),
    })?;
    let kind = objective.reference_gradient(x, &mut reference)?;
    Ok(kind.map(|reference_kind| GradientError {
        estimate: distance(&mut reference),
        reference: reference_kind,
    }))
}

/// A term objective on a backend: value and gradient each one pass of the kernels.
///
/// `E` is what was loaded: any sum of terms (`dyn Evaluator`, from
/// [`Backend::load`](crate::Backend::load)), or a sum of squares with its residuals
/// (`dyn LeastSquaresEvaluator`, from
/// [`Backend::load_least_squares`](crate::Backend::load_least_squares)), which is also a
/// [`LeastSquaresObjective`] that [`least_squares`](crate::least_squares) accepts.
pub struct TermObjective<E: Evaluator + ?Sized = dyn Evaluator> {
    evaluator: Box<E>,
    gradient: Gradient,
}

impl<E: Evaluator + ?Sized> TermObjective<E> {
    /// `gradient`: [`Gradient::Exact`], or a finite-difference scheme ([`Gradient::Forward`],
    /// [`Gradient::Central`]).
    pub fn new(evaluator: Box<E>, gradient: impl Into<Gradient>) -> Self {
        Self {
            evaluator,
            gradient: gradient.into(),
        }
    }

    /// How the gradient is computed.
    pub fn gradient_kind(&self) -> Gradient {
        self.gradient
    }

    /// The one rule both objective traits follow: the evaluator keeps the box for its
    /// finite-difference passes; an exact gradient (or Jacobian) takes no point but `x`.
    fn confine_evaluator_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        if self.gradient == Gradient::Exact {
            return Ok(());
        }
        Ok(self.evaluator.confine_steps(bounds)?)
    }

    fn check_len(&self, got: usize) -> Result<(), EvalError> {
        let expected = self.evaluator.dim();
        if got == expected {
            Ok(())
        } else {
            Err(EvalError::WrongLength { expected, got })
        }
    }
}

impl<E: Evaluator + ?Sized> Objective for TermObjective<E> {
    fn dim(&self) -> usize {
        self.evaluator.dim()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        Ok(self.evaluator.value(x)?)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        self.check_len(x.len())?;
        self.check_len(g.len())?;
        Ok(self.evaluator.gradient(x, self.gradient, g)?)
    }

    /// One pass of the gradient kernels, which take the value too.
    fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        self.check_len(g.len())?;
        Ok(self.evaluator.value_and_gradient(x, self.gradient, g)?)
    }

    /// Finite-difference gradients are checked against the exact one (or another scheme, see
    /// `backend::checked_against`): one more gradient pass.
    fn reference_gradient(
        &mut self,
        x: &[f64],
        into: &mut [f64],
    ) -> Result<Option<Gradient>, EvalError> {
        self.check_len(x.len())?;
        self.check_len(into.len())?;
        let evaluator = &mut self.evaluator;
        let checked = crate::backend::checked_against(self.gradient, |kind| {
            evaluator.gradient(x, kind, into)
        })?;
        Ok(checked.map(|(kind, ())| kind))
    }

    fn on_backend(&mut self) -> Option<&mut dyn OnBackend> {
        Some(self)
    }
}

impl<E: Evaluator + ?Sized> OnBackend for TermObjective<E> {
    fn device(&mut self) -> Result<Option<OnDevice<'_>>, EvalError> {
        let gradient = self.gradient;
        Ok(self
            .evaluator
            .device()
            .map(|evaluator| OnDevice::new(evaluator, gradient)))
    }

    fn pieces(&self) -> Option<&dyn PieceEvaluator> {
        self.evaluator.pieces(self.gradient)
    }

    /// The evaluator keeps the box for its finite-difference passes. An exact gradient takes
    /// no point but `x`, so it keeps none (on a GPU, the box's two `n`-vectors uploaded).
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        self.confine_evaluator_steps(bounds)
    }
}
