//! [`LmOptions`]: the options of a least-squares solve, with scipy's defaults and checks.

use crate::backend::{Loss, RobustLoss};
use crate::shown::Shown;
use crate::solver::bounds::Bounds;
use crate::solver::result::{SolveError, invalid_option};

/// Which method solves least squares: scipy's `least_squares(method=…)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LsqMethod {
    /// MINPACK's Levenberg–Marquardt: no bounds and the linear loss only.
    Lm,
    /// The trust-region-reflective method, with or without bounds, under any loss.
    Trf,
}

/// How trf scales the variables: scipy's `x_scale`. The trust region is a ball in `x / scale`.
#[derive(Clone, Debug, PartialEq)]
pub enum XScale {
    /// Each variable's scale from `J`: the inverse of its column's norm, never growing, as
    /// scipy's `x_scale='jac'`.
    Jac,
    /// One positive scale per variable, as scipy's array `x_scale`.
    Fixed(Vec<f64>),
}

/// Options, with scipy's `least_squares(method='lm')` defaults (and `method='trf'`'s, with
/// [`bounds`](LmOptions::bounds)).
#[derive(Clone, Debug)]
pub struct LmOptions {
    /// Stop when both the actual and the predicted relative reductions of `Σr²` are at most
    /// `ftol`; with bounds (trf), when a step's reduction is below `ftol·cost` and at least a
    /// quarter of the predicted one. scipy: 1e-8. At least machine epsilon for lm; trf takes
    /// less as that test off (scipy's `None`: 0), while another tolerance is on.
    pub ftol: f64,
    /// Stop when the trust region is at most `xtol·‖D·x‖`; with bounds (trf), when a step is
    /// below `xtol·(xtol + ‖x‖)`. Also the tolerance of trf's `active_mask`. scipy: 1e-8. As
    /// `ftol`, at least machine epsilon for lm.
    pub xtol: f64,
    /// Stop when every column of `J` is within `gtol` of orthogonal to `r` (the cosine of the
    /// angle); with bounds (trf), when `‖v∘Jᵀr‖∞ < gtol`, `v` Coleman and Li's distances to
    /// the bounds the gradient points to. scipy: 1e-8. As `ftol`, at least machine epsilon
    /// for lm.
    pub gtol: f64,
    /// Evaluations of `Σr²` allowed (the normal equations' passes are `njev`); `None` is scipy's
    /// `100·n`.
    pub max_nfev: Option<usize>,
    /// The first trust region is `factor·‖D·x0‖` (or `factor` when that is 0). MINPACK: 100.
    /// Levenberg–Marquardt only (trf starts from `‖x0/√v‖`, as scipy's does).
    pub factor: f64,
    /// scipy's robust `loss`: the cost becomes `½·Σ C²·ρ(r_k²/C²)` and each point's residual
    /// and Jacobian row are rescaled as scipy rescales them, so that the steps are
    /// Gauss–Newton steps on that cost, by scipy's `trf` (as scipy takes a loss), bounded or
    /// not. [`Loss::Linear`] (the default) is least squares.
    pub loss: Loss,
    /// `C`, scipy's `f_scale`: the residual size past which a point counts as an outlier. 1.
    /// The linear loss ignores it (any value), as scipy's does.
    pub f_scale: f64,
    /// The variables held at their values in `x0` (`true`: fixed), one entry per variable, as
    /// [`Options::fixed`](crate::solver::Options::fixed): the solve is in the free ones; the
    /// result's
    /// `x` is whole, its `grad` 0 at the fixed variables, its `factor` over all of them, and
    /// its covariance that of the free ones with zero rows and columns for the fixed.
    pub fixed: Option<Vec<bool>>,
    /// Box bounds ([`Bounds`]); with any finite bound the solve is scipy's trust-region
    /// reflective method (`method='trf'`, what `curve_fit` runs when given bounds), with the
    /// same tolerances, statuses and counts, from an `x0` that must lie within the box (scipy
    /// refuses one outside). `None`, or bounds that bound nothing: Levenberg–Marquardt.
    pub bounds: Option<Bounds>,
    /// The method. `None`, as `curve_fit` picks it: Levenberg–Marquardt, or trf with a finite
    /// bound on a free variable or a robust loss. `Some(Trf)` runs trf without either, as
    /// scipy's `least_squares(method='trf')` does; `Some(Lm)` refuses bounds and losses, as
    /// scipy does.
    pub method: Option<LsqMethod>,
    /// trf's scaling of the variables. `None`: 1 for every variable, scipy's default for trf.
    /// Levenberg–Marquardt always scales by `J`, as MINPACK does: it refuses a fixed scale.
    pub x_scale: Option<XScale>,
}

impl Default for LmOptions {
    fn default() -> Self {
        LmOptions {
            ftol: 1e-8,
            xtol: 1e-8,
            gtol: 1e-8,
            max_nfev: None,
            factor: 100.0,
            loss: Loss::Linear,
            f_scale: 1.0,
            fixed: None,
            bounds: None,
            method: None,
            x_scale: None,
        }
    }
}

impl LmOptions {
    /// Whether the solve is trust-region reflective's: asked for, or with a finite bound on a
    /// free variable, or under a robust loss (scipy takes a loss with trf alone); else
    /// MINPACK's Levenberg–Marquardt. Held variables' bounds play no part: the solve is the
    /// free ones'.
    pub(super) fn runs_trf(&self) -> bool {
        match self.method {
            Some(LsqMethod::Trf) => true,
            Some(LsqMethod::Lm) => false,
            None => self.bounded() || !self.robust_loss().is_linear(),
        }
    }

    /// Checks these options for `n` variables as a solve would, and says whether the solve
    /// is MINPACK's Levenberg–Marquardt over every variable: no variable held, no bound, a
    /// linear loss. Such a solve needs only `ftol`, `xtol`, `gtol`, `factor` and `max_nfev`, so
    /// a small fit of a batch can run it whole on one thread.
    pub fn plain_lm(&self, n: usize) -> Result<bool, SolveError> {
        self.check(n)?;
        let held = self.fixed.as_ref().is_some_and(|f| f.iter().any(|&h| h));
        Ok(!held && !self.runs_trf() && self.bounds.is_none())
    }

    /// Whether a free variable has a finite bound.
    fn bounded(&self) -> bool {
        let fixed = self.fixed.as_deref();
        self.bounds.as_ref().is_some_and(|b| b.any_free(fixed))
    }

    /// scipy's refusals of a method that cannot take the problem, and of a bad `x_scale` for
    /// `n` variables.
    fn check_method(&self, n: usize) -> Result<(), SolveError> {
        if self.method == Some(LsqMethod::Lm) && self.bounded() {
            return Err(invalid_option(
                "method",
                "lm",
                "only works without bounds: use trf",
            ));
        }
        if self.method == Some(LsqMethod::Lm) && !self.robust_loss().is_linear() {
            return Err(invalid_option(
                "method",
                "lm",
                "supports only the linear loss: use trf",
            ));
        }
        let Some(XScale::Fixed(scale)) = &self.x_scale else {
            return Ok(());
        };
        if !self.runs_trf() {
            return Err(invalid_option(
                "x_scale",
                "(an array)",
                "lm scales by J, as MINPACK does; a fixed scale needs trf",
            ));
        }
        if scale.len() != n {
            return Err(invalid_option(
                "x_scale",
                format!("{} values for {n} variables", scale.len()),
                "must hold one value per variable",
            ));
        }
        match scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            Some(&bad) => Err(invalid_option(
                "x_scale",
                Shown(bad),
                "must be positive and finite",
            )),
            None => Ok(()),
        }
    }

    pub(super) fn check(&self, n: usize) -> Result<(), SolveError> {
        self.check_method(n)?;
        let tolerances = [
            ("ftol", self.ftol),
            ("xtol", self.xtol),
            ("gtol", self.gtol),
        ];
        // scipy's rule: MINPACK needs every test on; trf takes a tolerance below ε (0 is
        // scipy's None) as that test off, so long as one is on.
        let trf = self.runs_trf();
        for (name, tol) in tolerances {
            if trf && !(tol.is_finite() && tol >= 0.0) {
                return Err(invalid_option(name, Shown(tol), "must be finite and >= 0"));
            }
            if !trf && !(tol.is_finite() && tol >= f64::EPSILON) {
                return Err(invalid_option(
                    name,
                    Shown(tol),
                    "must be finite and at least machine epsilon (2.2e-16) for lm (trf takes 0: that test off)",
                ));
            }
        }
        if tolerances.iter().all(|&(_, tol)| tol < f64::EPSILON) {
            return Err(invalid_option(
                "(ftol, xtol, gtol)",
                format!(
                    "({}, {}, {})",
                    Shown(self.ftol),
                    Shown(self.xtol),
                    Shown(self.gtol)
                ),
                "one of them must be at least machine epsilon (2.2e-16)",
            ));
        }
        if self.max_nfev == Some(0) {
            return Err(invalid_option("max_nfev", 0, "must be at least 1"));
        }
        if !(self.factor.is_finite() && self.factor > 0.0) {
            return Err(invalid_option(
                "factor",
                Shown(self.factor),
                "must be positive",
            ));
        }
        // The linear loss never reads f_scale (scipy ignores it there too).
        let robust = self.loss != Loss::Linear;
        if robust && !(self.f_scale.is_finite() && self.f_scale > 0.0) {
            return Err(invalid_option(
                "f_scale",
                Shown(self.f_scale),
                "must be positive and finite",
            ));
        }
        // A robust loss sums C²·ρ(r²/C²): past these ends C² underflows to 0 (a fit reported
        // with rss 0 and zero errors) or overflows.
        if robust && !(self.f_scale * self.f_scale).is_normal() {
            return Err(invalid_option(
                "f_scale",
                Shown(self.f_scale),
                "must lie between about 1.5e-154 and 1.3e154 with a robust loss (its square is used)",
            ));
        }
        Ok(())
    }

    /// The loss with its scale; the linear loss with a scale of 1, whatever `f_scale` says
    /// (its cost `C²·(r²/C²)` is `r²` for any `C` but 0, which [`check`](Self::check) lets
    /// through for it).
    pub(super) fn robust_loss(&self) -> RobustLoss {
        let f_scale = if self.loss == Loss::Linear {
            1.0
        } else {
            self.f_scale
        };
        RobustLoss {
            loss: self.loss,
            f_scale,
        }
    }
}
