//! Least squares, `Σ_k r_k(x)²`: scipy's `least_squares`. Without bounds and with the
//! linear loss the solve is MINPACK's Levenberg–Marquardt (`lm`); with a finite bound on a
//! free variable, or a robust loss, scipy's trust-region-reflective method (`trf`). This
//! file checks the call and picks the method; held variables go through `solver::fixed`.

mod checks;
mod lm;
pub(super) mod options;
pub(super) mod result;
mod trf;
mod trials;

pub use options::{LmOptions, LsqMethod, XScale};
pub use result::{LeastSquaresResult, LmStatus};

use crate::linalg::{try_zeros, vector};
use crate::objective::LeastSquaresObjective;
use crate::solver::bounds::Bounds;
use crate::solver::result::{Iterate, SolveError};
use std::ops::ControlFlow;

/// Minimizes `Σ r_k(x)²` from `x0` by Levenberg–Marquardt: scipy's
/// `least_squares(fun, x0, method='lm')`. Its `cost` is `½ Σ r²`, as scipy's is; the
/// objective's value, which [`minimize`](crate::solver::minimize) would report as `fun`, is `Σ r²`.
/// With [`LmOptions::bounds`], scipy's `least_squares(fun, x0, method='trf', bounds=…)`.
///
/// With a robust [`LmOptions::loss`] the solve is scipy's `trf`, bounded or not, as scipy
/// takes a loss with `trf` alone: the cost is `½ Σ C²ρ(r²/C²)` and the rows are rescaled as
/// scipy's `least_squares(loss=…)` rescales them (tests/fit.rs: scipy's minimum, status and
/// counts for every loss).
///
/// ```
/// use cudamin_host::{LmOptions, least_squares};
/// use cudamin_host::{Backend, Gradient, TermObjective, TermProblem};
/// use gpu_kernels::SumOfSquares;
/// use gpu_kernels::terms::fit::Poly;
///
/// // Points on y = 1 + 2x, and the built-in `Poly` residual with 2 parameters: a straight
/// // line. Its data are three columns, one after the other: x, y and the weights 1/σ.
/// let x: Vec<f64> = (0..50).map(|i| i as f64 / 10.0).collect();
/// let y: Vec<f64> = x.iter().map(|x| 1.0 + 2.0 * x).collect();
/// let columns = [x, y, vec![1.0; 50]].concat();
/// let problem = TermProblem::<SumOfSquares<Poly>>::with_data(2, columns, 50)?;
/// let residuals = Backend::Cpu.load_least_squares(problem)?;
/// let mut objective = TermObjective::new(residuals, Gradient::Exact);
/// let result = least_squares(&mut objective, &[1.0, 1.0], &LmOptions::default())?;
/// assert!(result.success, "{}", result.message);
/// assert!((result.x[0] - 1.0).abs() < 1e-10 && (result.x[1] - 2.0).abs() < 1e-10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn least_squares(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
) -> Result<LeastSquaresResult, SolveError> {
    least_squares_with_observer(objective, x0, options, &mut |_| ControlFlow::Continue(()))
}

/// [`least_squares`], with `observer` run after every accepted step: it sees the iterate and
/// may stop the solve (status −2) by returning `ControlFlow::Break(())`.
pub fn least_squares_with_observer(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<LeastSquaresResult, SolveError> {
    let n = objective.dim();
    if x0.len() != n {
        return Err(SolveError::WrongLength {
            expected: n,
            got: x0.len(),
        });
    }
    if let Some(index) = vector::first_non_finite(x0) {
        let value = x0[index];
        return Err(SolveError::NonFiniteX0 { index, value });
    }
    options.check(n)?;
    // `fixed`'s length first: the bounds' checks read it by variable.
    let held = crate::solver::options::held(options.fixed.as_deref(), x0)?;
    if let Some(bounds) = &options.bounds {
        bounds.check_for_least_squares(x0, options.fixed.as_deref())?;
    }
    if let Some(held) = held {
        return crate::solver::fixed::least_squares(
            objective,
            x0,
            options,
            observer,
            held,
            least_squares_with_observer,
        );
    }
    if try_zeros(3 * n * n).is_none() {
        return Err(SolveError::OutOfMemory {
            what: "the triangle of J and its factorizations",
            bytes: 3 * n * n * size_of::<f64>(),
        });
    }
    // A robust loss runs trf with or without a box, as in scipy: MINPACK's rules on rows
    // rescaled afresh at each point stopped short of the robust minimum and called it success
    // (Rosenbrock under huber, f_scale 0.5: cost 0.93 and status 4 where trf reaches 0).
    if options.runs_trf() {
        let unbounded = Bounds::unbounded(n);
        let bounds = options.bounds.as_ref().unwrap_or(&unbounded);
        return bounds.confining(
            objective,
            |o, box_| o.confine_steps(box_),
            |o| trf::least_squares(o, x0, options, bounds, observer),
        );
    }
    lm::least_squares(objective, x0, options, observer)
}
