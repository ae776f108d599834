//! Solvers: BFGS and L-BFGS with scipy's semantics (`scipy.optimize.minimize`).
//!
//! For sums of squares, [`least_squares`] is Levenberg–Marquardt with MINPACK's semantics
//! (`scipy.optimize.least_squares(method='lm')`), on the triangle `R` of the residuals'
//! Jacobian: the loop is `gpu_kernels::lm`, which a GPU thread also runs for each fit of a
//! batch. With bounds, `least_squares` runs scipy's trust-region-reflective method (`trf`) on
//! the same triangle; [`covariance`] is `curve_fit`'s `pcov` from it.
//!
//! BFGS and L-BFGS share one driver (`quasi_newton`): scipy's loop, stopping rules and status codes, with
//! a strong Wolfe line search (`line_search`: Moré–Thuente, then a bracketing/zoom fallback).
//! They differ in how they apply the inverse-Hessian approximation `H`: [`bfgs`] keeps the full
//! BFGS matrix (implicitly while that is cheaper, then dense), [`lbfgs`] the last `m` curvature
//! pairs. [`lbfgsb`] is L-BFGS-B, for box bounds, with its own iteration (Cauchy point,
//! subspace step, a line search that stays in the box).
//!
//! ```ignore
//! let result = minimize(&mut objective, &x0, Method::Bfgs, &Options::default())?;
//! assert!(result.success);
//! ```

pub mod bfgs;
mod bounds;
mod correction_pairs;
mod covariance;
mod dense;
mod fixed;
pub mod lbfgs;
pub mod lbfgsb;
mod least_squares;
mod line_search;
mod memory;
mod options;
mod quasi_newton;
mod result;
mod start;
mod trial_sweep;
mod two_loop;
mod workspace;

pub use bounds::Bounds;
pub use correction_pairs::{CorrectionPairs, DevicePairs};
pub use covariance::{Covariance, covariance, covariance_in, covariance_of_free, spread_in};
pub use least_squares::{
    LeastSquaresResult, LmOptions, LmStatus, LsqMethod, XScale, least_squares,
    least_squares_with_observer,
};
pub use options::{Method, Options};
pub use result::{DeviceSolution, Iterate, OptimizeResult, SolveError, Status};

use crate::backend::DeviceArray;
use crate::objective::{EvalError, Objective};
use start::Start;
use std::ops::ControlFlow;

/// Minimizes `objective` from `x0` by `method`: scipy's `minimize(fun, x0, method=…,
/// jac=…, options=…)`, the gradient being the objective's own.
pub fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    method: Method,
    options: &Options,
) -> Result<OptimizeResult, SolveError> {
    minimize_with_observer(objective, x0, method, options, &mut |_| {
        ControlFlow::Continue(())
    })
}

/// [`minimize`], with `observer` run after every iteration (scipy's `callback`): it sees the
/// iterate and may stop the run (status 99) by returning `ControlFlow::Break(())`.
pub fn minimize_with_observer(
    objective: &mut dyn Objective,
    x0: &[f64],
    method: Method,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    if let Some(bounds) = &options.bounds {
        if method != Method::LbfgsB {
            return Err(result::invalid_option(
                "method",
                method.name(),
                "takes no bounds; lbfgsb (L-BFGS-B) does",
            ));
        }
        bounds.check(x0.len())?;
        bounds.check_held(x0, options.fixed.as_deref())?;
    }
    match options::held(options.fixed.as_deref(), x0)? {
        Some(held) => {
            // The whole start, held variables too: the method sees only the free ones.
            options::check_start(objective, x0, options)?;
            if method == Method::Bfgs {
                bfgs::check_hess_inv_fits(x0.len(), options)?;
            }
            fixed::minimize(objective, x0, method, options, observer, held, run)
        }
        None => run(objective, x0, method, options, observer),
    }
}

/// [`minimize_with_observer`] from a start kept on a GPU backend's device
/// ([`Backend::to_device`](crate::backend::Backend::to_device)). L-BFGS, BFGS past its dense
/// limit and L-BFGS-B keep their vectors on that device for a term problem loaded there with
/// at least 2¹⁵ variables: `x0` is copied on the device and checked finite (and clipped into
/// the box) there, and nothing but scalars and the Cauchy walk's rows crosses to the host until
/// the end (see [`Options::keep_on_device`](Options::keep_on_device)). Every other solve
/// (fixed variables, a smaller or host problem) copies `x0` to the host once first.
pub fn minimize_from_device(
    objective: &mut dyn Objective,
    x0: &DeviceArray,
    method: Method,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    let start = Start::Device(x0);
    let free = options.bounds.is_none() && options.fixed.is_none();
    match method {
        Method::Bfgs if free => {
            let switch = bfgs::Switch::SKI_RENTAL;
            bfgs::minimize_with(objective, start, options, observer, switch)
        }
        Method::Lbfgs if free => lbfgs::minimize_from(objective, start, options, observer),
        Method::LbfgsB if options.fixed.is_none() => {
            lbfgsb::minimize_from(objective, start, options, observer)
        }
        _ => {
            let x0 = x0.to_host().map_err(EvalError::from)?;
            minimize_with_observer(objective, &x0, method, options, observer)
        }
    }
}

/// `method` itself.
pub(super) fn run(
    objective: &mut dyn Objective,
    x0: &[f64],
    method: Method,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    match method {
        Method::Bfgs => bfgs::minimize(objective, x0, options, observer),
        Method::Lbfgs => lbfgs::minimize(objective, x0, options, observer),
        Method::LbfgsB => lbfgsb::minimize(objective, x0, options, observer),
    }
}
