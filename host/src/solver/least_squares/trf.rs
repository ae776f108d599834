//! The trust-region-reflective method for bounded least squares: scipy's
//! `least_squares(method='trf')` with bounds, the method `curve_fit` runs when it is given
//! bounds (Branch, Coleman & Li 1999), with scipy's steps, tests, statuses and counts.
//!
//! Every iterate stays strictly inside the box. The variables are scaled by Coleman and Li's
//! `v` (the distance to the bound the gradient points to), which shrinks steps toward a bound
//! that attracts them; a step that would leave the box is cut at the bound or reflected off it
//! ([`step`]). As for Levenberg–Marquardt, `J` is never stored: each accepted point's residual
//! pass gives `R` and `Qᵀr` (`J = Q·R`), and the trust-region problem is solved on them.

mod step;

use super::checks::{check_start, finite_jacobian, gradient};
use super::options::{LmOptions, XScale};
use super::result::{LeastSquaresResult, LmStatus};
use super::trials::Trials;
use crate::backend::Factor;
use crate::linalg::vector;
use crate::objective::LeastSquaresObjective;
use crate::solver::bounds::Bounds;
use crate::solver::result::{Iterate, SolveError};
use std::borrow::Cow;
use std::ops::ControlFlow;
use step::ScaledModel;

/// scipy's `least_squares(fun, x0, method='trf', bounds=…)` from `x0` (checked to lie in the
/// box, whose lower bounds are below its upper ones).
pub(super) fn least_squares(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
    bounds: &Bounds,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<LeastSquaresResult, SolveError> {
    let n = x0.len();
    let m = objective.residuals();
    // A trial's pass may be a factor pass, kept for the step that accepts it.
    let objective = &mut Trials::new(objective, n);
    let loss = options.robust_loss();
    let max_nfev = options.max_nfev.unwrap_or(n.saturating_mul(100));
    let mut x = bounds.strictly_feasible(x0, 1e-10);
    let mut factor = Factor::new(n);
    let sum_of_squares = objective.factor(&x, loss, &mut factor)?;
    check_start(sum_of_squares, &factor)?;
    finite_jacobian(&factor, 0)?;
    let (mut nfev, mut njev, mut nit) = (1, 1, 0);
    let mut cost = 0.5 * sum_of_squares;
    let mut g = gradient(&factor);
    let mut scale = Scale::new(options, &factor);
    let (mut v, dv) = bounds.coleman_li(&x, &g);
    scale.rescale(&mut v, &dv);
    let mut delta = vector::norm2(
        &(x.iter().zip(&v).zip(&scale.inverse))
            .map(|((x, v), inverse)| x * inverse / v.sqrt())
            .collect::<Vec<_>>(),
    );
    if delta == 0.0 {
        delta = 1.0;
    }
    let mut alpha = 0.0;
    let mut ended = None;
    let (status, optimality) = loop {
        let (mut v, dv) = bounds.coleman_li(&x, &g);
        let optimality = scaled_gradient_norm(&g, &v);
        if optimality < options.gtol {
            ended = Some(LmStatus::Gtol);
        }
        if let Some(status) = ended {
            break (status, optimality);
        }
        if nfev >= max_nfev {
            break (LmStatus::MaxNfev, optimality);
        }
        scale.rescale(&mut v, &dv);
        let model = ScaledModel::new(&factor, &g, (&v, &dv), &scale.scale, m);
        // How far toward a bound a step may go: nearer as the scaled gradient vanishes.
        let theta = 0.995f64.max(1.0 - optimality);
        let mut actual_reduction = -1.0;
        // The last trial point and its cost: read only once one has reduced the cost.
        let (mut trial, mut trial_cost) = (Vec::new(), cost);
        while actual_reduction <= 0.0 && nfev < max_nfev {
            let (scaled, damping) = model.trust_region_minimizer(delta, alpha);
            alpha = damping;
            let step = model.step(&x, bounds, scaled, delta, theta);
            let moved: Vec<f64> = x.iter().zip(&step.x).map(|(x, p)| x + p).collect();
            trial = bounds.strictly_feasible(&moved, 0.0);
            trial_cost = 0.5 * objective.sum_of_squares(&trial, loss)?;
            nfev += 1;
            let scaled_norm = vector::norm2(&step.scaled);
            if !trial_cost.is_finite() {
                delta = 0.25 * scaled_norm;
                continue;
            }
            actual_reduction = cost - trial_cost;
            let predicted = step.predicted_reduction;
            let ratio = if predicted > 0.0 {
                actual_reduction / predicted
            } else if predicted == 0.0 && actual_reduction == 0.0 {
                1.0
            } else {
                0.0
            };
            let new_delta = if ratio < 0.25 {
                0.25 * scaled_norm
            } else if ratio > 0.75 && scaled_norm > 0.95 * delta {
                2.0 * delta
            } else {
                delta
            };
            let ftol_met = actual_reduction < options.ftol * cost && ratio > 0.25;
            let xtol_met =
                vector::norm2(&step.x) < options.xtol * (options.xtol + vector::norm2(&x));
            ended = match (ftol_met, xtol_met) {
                (true, true) => Some(LmStatus::FtolXtol),
                (true, false) => Some(LmStatus::Ftol),
                (false, true) => Some(LmStatus::Xtol),
                (false, false) => None,
            };
            if ended.is_some() {
                break;
            }
            alpha *= delta / new_delta;
            delta = new_delta;
        }
        if actual_reduction > 0.0 {
            x = trial;
            cost = trial_cost;
            objective.factor(&x, loss, &mut factor)?;
            njev += 1;
            nit += 1;
            finite_jacobian(&factor, nit)?;
            g = gradient(&factor);
            scale.update(&factor);
            let iterate = Iterate {
                nit,
                fun: 2.0 * cost,
                grad_norm: 2.0 * vector::norm(&g, f64::INFINITY),
                nfev,
                njev,
                x: &|| Ok(Cow::Borrowed(&x[..])),
            };
            if observer(&iterate).is_break() {
                let (v, _) = bounds.coleman_li(&x, &g);
                break (LmStatus::Stopped, scaled_gradient_norm(&g, &v));
            }
        }
    };
    let active_mask = Some(bounds.active_within(&x, options.xtol));
    let counts = [nfev, njev, nit];
    Ok(LeastSquaresResult {
        optimality,
        active_mask,
        ..LeastSquaresResult::at(x, factor, cost, m, counts, status)
    })
}

/// The variables' scale `s` and its inverse: the trust region is a ball in `x / s`.
struct Scale {
    scale: Vec<f64>,
    inverse: Vec<f64>,
    /// Whether it follows `J` (`x_scale='jac'`).
    from_jacobian: bool,
}

impl Scale {
    /// `options.x_scale` at the start, whose residual pass gave `factor`.
    fn new(options: &LmOptions, factor: &Factor) -> Scale {
        let reciprocals = |v: &[f64]| v.iter().map(|v| 1.0 / v).collect::<Vec<_>>();
        let (scale, inverse) = match &options.x_scale {
            Some(XScale::Fixed(scale)) => (scale.clone(), reciprocals(scale)),
            Some(XScale::Jac) => {
                // A zero column's inverse scale is 1, as scipy's `compute_jac_scale`.
                let norms = column_norms(factor).map(|c| if c == 0.0 { 1.0 } else { c });
                let inverse: Vec<f64> = norms.collect();
                (reciprocals(&inverse), inverse)
            }
            None => (vec![1.0; factor.qtr.len()], vec![1.0; factor.qtr.len()]),
        };
        Scale {
            scale,
            inverse,
            from_jacobian: options.x_scale == Some(XScale::Jac),
        }
    }

    /// Coleman and Li's `v` in the variables `x / scale`: unchanged where it is 1 (`dv = 0`).
    fn rescale(&self, v: &mut [f64], dv: &[f64]) {
        for ((v, dv), inverse) in v.iter_mut().zip(dv).zip(&self.inverse) {
            if *dv != 0.0 {
                *v *= inverse;
            }
        }
    }

    /// At a new point: a scale from `J` follows its column norms, never shrinking the inverse.
    fn update(&mut self, factor: &Factor) {
        if !self.from_jacobian {
            return;
        }
        for ((inverse, scale), c) in
            (self.inverse.iter_mut().zip(&mut self.scale)).zip(column_norms(factor))
        {
            *inverse = inverse.max(c);
            *scale = 1.0 / *inverse;
        }
    }
}

/// `J`'s column norms, which are `R`'s: `Q` is orthogonal.
fn column_norms(factor: &Factor) -> impl Iterator<Item = f64> + '_ {
    let n = factor.qtr.len();
    (0..n).map(move |j| {
        let column = (0..=j).map(|i| factor.r[i * n + j]);
        column.map(|v| v * v).sum::<f64>().sqrt()
    })
}

/// `‖v∘g‖∞`, the first-order optimality within bounds (scipy's `optimality` for `trf`): 0 at a
/// minimum inside the box and at one on its boundary alike.
fn scaled_gradient_norm(g: &[f64], v: &[f64]) -> f64 {
    (g.iter().zip(v)).fold(0.0f64, |m, (g, v)| m.max((g * v).abs()))
}
