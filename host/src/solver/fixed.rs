//! Solves with some variables held fixed ([`Options::fixed`], [`LmOptions::fixed`]): the
//! method runs on the free variables through a [`FixedObjective`]; the observer and the result
//! see whole points.

use super::least_squares::options::{LmOptions, XScale};
use super::least_squares::result::LeastSquaresResult;
use super::options::{Method, Options};
use super::result::{Iterate, OptimizeResult, SolveError};
use crate::backend::Factor;
use crate::linalg::try_zeros;
use crate::objective::{EvalError, FixedObjective, Held, LeastSquaresObjective, Objective};
use ndarray::Array2;
use std::borrow::Cow;
use std::ops::ControlFlow;

/// A method minimizing an objective: `super::run`.
pub(super) type Minimize = fn(
    &mut dyn Objective,
    &[f64],
    Method,
    &Options,
    &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError>;

/// A least-squares solve: `least_squares_with_observer`.
pub(super) type LeastSquares = fn(
    &mut dyn LeastSquaresObjective,
    &[f64],
    &LmOptions,
    &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<LeastSquaresResult, SolveError>;

/// `method` on the free variables of `held`, run by `run`.
pub(super) fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    method: Method,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    held: Held,
    run: Minimize,
) -> Result<OptimizeResult, SolveError> {
    let free_options = options.for_free(&held);
    let mut free = FixedObjective::new(objective, held.clone());
    let mut whole = |it: &Iterate<'_>| observe_whole(&held, it, observer);
    let mut result = run(
        &mut free,
        &held.gather(x0),
        method,
        &free_options,
        &mut whole,
    )?;
    let hess_inv = (result.hess_inv.take())
        .map(|h| whole_matrix(&h, &held))
        .transpose()?;
    // Pairs left on the device are over the free variables: copied here to be expanded.
    let on_device = (result.hess_inv_pairs_on_device.take())
        .map(|pairs| pairs.to_host())
        .transpose()
        .map_err(EvalError::from)?;
    let hess_inv_pairs = (result.hess_inv_pairs.take().or(on_device))
        .map(|pairs| pairs.expanded(&held))
        .transpose()?;
    Ok(OptimizeResult {
        x: held.expand(&result.x)?,
        jac: held.expand_with(&result.jac, 0.0)?,
        hess_inv,
        hess_inv_pairs,
        ..result
    })
}

/// The free variables' `h` as a matrix over all of them, zero in the held ones' rows and
/// columns.
fn whole_matrix(h: &Array2<f64>, held: &Held) -> Result<Array2<f64>, SolveError> {
    let n = held.whole_dim();
    let entries = n.checked_mul(n).and_then(try_zeros);
    let mut whole = (entries.and_then(|e| Array2::from_shape_vec((n, n), e).ok())).ok_or(
        SolveError::OutOfMemory {
            what: "hess_inv over every variable",
            bytes: n.saturating_mul(n).saturating_mul(size_of::<f64>()),
        },
    )?;
    for (a, &i) in held.free().iter().enumerate() {
        for (b, &j) in held.free().iter().enumerate() {
            whole[[i, j]] = h[[a, b]];
        }
    }
    Ok(whole)
}

/// Least squares, by `solve`, on the free variables of `held`; the result's factor is over all
/// the variables (the last one the objective made, at the solution), for the covariance.
pub(super) fn least_squares(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    held: Held,
    solve: LeastSquares,
) -> Result<LeastSquaresResult, SolveError> {
    let free_options = LmOptions {
        fixed: None,
        bounds: options.bounds.as_ref().map(|b| b.of_free(&held)),
        x_scale: match &options.x_scale {
            Some(XScale::Fixed(scale)) => Some(XScale::Fixed(held.gather(scale))),
            other => other.clone(),
        },
        ..options.clone()
    };
    let mut free = FixedObjective::new(objective, held.clone());
    let mut whole = |it: &Iterate<'_>| observe_whole(&held, it, observer);
    let result = solve(&mut free, &held.gather(x0), &free_options, &mut whole)?;
    Ok(LeastSquaresResult {
        x: held.expand(&result.x)?,
        grad: held.expand_with(&result.grad, 0.0)?,
        // Least squares factors at least once (at x0) before it returns a result.
        factor: (free.full_factor().cloned()).unwrap_or_else(|| Factor::new(x0.len())),
        fixed: options.fixed.clone(),
        active_mask: result.active_mask.map(|free_mask| {
            let mut whole = vec![0; x0.len()];
            for (&i, mask) in held.free().iter().zip(free_mask) {
                whole[i] = mask;
            }
            whole
        }),
        ..result
    })
}

/// Shows `observer` the iterate `it` of a solve in the free variables, with whole points.
fn observe_whole(
    held: &Held,
    it: &Iterate<'_>,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let whole = || -> Result<Cow<'_, [f64]>, EvalError> { Ok(Cow::Owned(held.expand(&it.x()?)?)) };
    observer(&Iterate {
        nit: it.nit,
        fun: it.fun,
        grad_norm: it.grad_norm,
        nfev: it.nfev,
        njev: it.njev,
        x: &whole,
    })
}
