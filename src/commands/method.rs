//! The solver options `solve` and `fit` share, and one run of the chosen method, reported the
//! same way whichever it was.

use super::parse::{Fix, Numbers, Variable};
use super::plot::Step;
use super::progress::Progress;
use crate::{GradArg, LossArg, MethodArg};
use cudamin::Bounds;
use cudamin::problems::Solvable;
use cudamin::{Factor, GradientError, Options};
use cudamin::{LmOptions, LsqMethod, XScale};
use std::borrow::Cow;
use std::ops::ControlFlow;

/// A start with the `--fix` values in, and which variables they hold.
pub type HeldStart<'x> = (Cow<'x, [f64]>, Option<Vec<bool>>);

#[derive(clap::Args, Clone, Debug)]
pub struct MethodArgs {
    /// How the gradient (or the Jacobian, for lm) is computed: exact (default), or forward /
    /// central differences.
    #[arg(long, value_enum, default_value_t)]
    pub grad: GradArg,
    /// bfgs / lbfgs: stop when ‖∇f‖∞ <= gtol (scipy's default 1e-5); lbfgsb: the projected
    /// gradient's (scipy's pgtol). lm: stop when every column of the Jacobian is within gtol of
    /// orthogonal to the residuals (scipy's default 1e-8); with bounds (trf), when the gradient
    /// scaled by the distances to the bounds it points to is below gtol.
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::tolerance)]
    pub gtol: Option<f64>,
    /// lbfgs / lbfgsb: stop when a step reduces f by at most ftol relative to max(|f|, 1)
    /// (scipy L-BFGS-B's 2.22e-9). lm: the same rule on the sum of squares (scipy's 1e-8).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::tolerance)]
    pub ftol: Option<f64>,
    /// lm: stop when the trust region is at most xtol relative to x (1e-8); with bounds (trf),
    /// when a step is.
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::tolerance)]
    pub xtol: Option<f64>,
    /// bfgs / lbfgs / lbfgsb: iteration limit (default 200·n for bfgs and lbfgs, as scipy;
    /// 15000 for lbfgsb).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::count)]
    pub maxiter: Option<usize>,
    /// lbfgsb: stop once more than this many evaluations were made (scipy's maxfun, 15000).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::count)]
    pub maxfun: Option<usize>,
    /// lbfgsb: the most evaluations one line search makes (scipy's maxls, 20); a search that
    /// ends without a step restarts from steepest descent, or ends the solve (status 2) when
    /// the memory was already empty.
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::at_least_one)]
    pub maxls: Option<usize>,
    /// lbfgs / lbfgsb: how many curvature pairs the inverse Hessian keeps (scipy's maxcor, 10).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::at_least_one)]
    pub maxcor: Option<usize>,
    /// lbfgsb and lm: lower bounds, one per variable or one for all (comma-separated; -inf for
    /// none). lbfgsb moves a start outside them into them, as scipy's minimize does; lm refuses
    /// it, as scipy's least_squares does. With bounds, lm is scipy's trust-region-reflective
    /// method (trf), as curve_fit is with bounds.
    #[arg(long, allow_hyphen_values = true, value_parser = super::parse::bounds)]
    pub lower: Option<Numbers>,
    /// lbfgsb and lm: upper bounds, as --lower (inf for none).
    #[arg(long, allow_hyphen_values = true, value_parser = super::parse::bounds)]
    pub upper: Option<Numbers>,
    /// Every method: hold variable VAR at VALUE, e.g. --fix 2=0.5 (repeatable). VAR is a 0-based
    /// index (or a report's label for it, x2 or θ2), or for fit a parameter's name where the
    /// model names them (exp-decay's a0, b0, …, gauss-peaks' c, a0, mu0, s0, …). The solve is
    /// in the others; a fit's dof counts the free parameters and its pcov has zero rows and
    /// columns for the fixed ones.
    #[arg(long, value_name = "VAR=VALUE", allow_negative_numbers = true, value_parser = super::parse::fix)]
    pub fix: Vec<Fix>,
    /// lm: limit on evaluations of the sum of squares (default 100·n, as scipy).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::count)]
    pub max_nfev: Option<usize>,
    /// lm: scipy's robust loss. The cost becomes ½·Σ C²·ρ(r²/C²), C = --f-scale, each point's
    /// residual and Jacobian row rescaled as scipy's least_squares(loss=…) does, on either backend.
    #[arg(long, value_enum)]
    pub loss: Option<LossArg>,
    /// lm: the loss's scale C, scipy's f_scale: residuals past it count as outliers (1).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::tolerance)]
    pub f_scale: Option<f64>,
    /// trf: how the variables are scaled, scipy's x_scale: `jac` (from the Jacobian's column
    /// norms) or one positive number per variable, comma-separated (1 for each by default).
    #[arg(long, value_parser = super::parse::x_scale)]
    pub x_scale: Option<XScale>,
    /// Show progress on stderr even when it is not a terminal, or with --json.
    #[arg(long)]
    pub progress: bool,
    /// Write a plot (SVG) of the convergence: f − f_final and ‖∇f‖∞ against the iteration; for
    /// fit, also the data against the model, and the residuals.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// The bounds to use where neither --lower nor --upper is given (a fit model's natural
    /// bounds), for the methods that take bounds.
    #[arg(skip)]
    pub default_bounds: Option<Bounds>,
    /// The variables' names, by which --fix may give them (a fit model's parameters, where it
    /// names them); `None`: by index alone.
    #[arg(skip)]
    pub variable_names: Option<Vec<String>>,
}

/// What a run ended with, in the vocabulary of the method's scipy counterpart
/// (`minimize` or `least_squares`).
pub struct Outcome {
    /// The method that ran: `--method`'s name, or `"trf"` for lm given bounds.
    pub method: &'static str,
    pub x: Vec<f64>,
    /// `f(x)`; for lm, `Σr²`.
    pub fun: f64,
    /// A gradient's ∞-norm: `‖∇f(x)‖∞` (bfgs, lbfgs; for lm of `Σr²`, `2‖Jᵀr‖∞`, shown
    /// beside MINPACK's test on the columns' cosines), and where bounds hold the one the `gtol`
    /// test reads: the projected gradient's (lbfgsb), the gradient scaled by the distances to
    /// the bounds it points to (trf, `2·optimality`: `f` is `Σr²`).
    pub grad_inf_norm: f64,
    pub jac_error: Option<GradientError>,
    pub nit: usize,
    pub nfev: usize,
    pub njev: usize,
    /// scipy's `status`: `minimize`'s codes for bfgs / lbfgs, `least_squares`' for lm.
    pub status: i32,
    pub success: bool,
    pub message: String,
    /// For lm, `J`'s triangle at `x`.
    pub factor: Option<Factor>,
    /// With bounds, which each variable ends at: −1 its lower bound, 1 its upper, 0 neither
    /// (scipy's `active_mask`).
    pub active_mask: Option<Vec<i32>>,
    /// With `--fix`, the variables held.
    pub fixed: Option<Vec<bool>>,
    /// Every iteration, as the observer saw it.
    pub history: Vec<Step>,
}

impl MethodArgs {
    /// Refuses options that the method does not take, rather than ignoring them.
    fn check(&self, method: MethodArg) -> anyhow::Result<()> {
        use MethodArg::{Bfgs, Lbfgs, Lbfgsb, Lm, Trf};
        let quasi_newton: &[MethodArg] = &[Bfgs, Lbfgs, Lbfgsb];
        let flags: [(&str, bool, &[MethodArg], &str); 12] = [
            (
                "--ftol",
                self.ftol.is_some(),
                &[Lbfgs, Lbfgsb, Lm, Trf],
                "lbfgs, lbfgsb, lm and trf",
            ),
            ("--xtol", self.xtol.is_some(), &[Lm, Trf], "lm and trf"),
            (
                "--max-nfev",
                self.max_nfev.is_some(),
                &[Lm, Trf],
                "lm and trf",
            ),
            ("--loss", self.loss.is_some(), &[Lm, Trf], "lm and trf"),
            (
                "--f-scale",
                self.f_scale.is_some(),
                &[Lm, Trf],
                "lm and trf",
            ),
            (
                "--maxiter",
                self.maxiter.is_some(),
                quasi_newton,
                "bfgs, lbfgs and lbfgsb",
            ),
            ("--x-scale", self.x_scale.is_some(), &[Trf], "trf"),
            ("--maxfun", self.maxfun.is_some(), &[Lbfgsb], "lbfgsb"),
            ("--maxls", self.maxls.is_some(), &[Lbfgsb], "lbfgsb"),
            (
                "--maxcor",
                self.maxcor.is_some(),
                &[Lbfgs, Lbfgsb],
                "lbfgs and lbfgsb",
            ),
            (
                "--lower",
                self.lower.is_some(),
                &[Lbfgsb, Lm, Trf],
                "lbfgsb, lm and trf",
            ),
            (
                "--upper",
                self.upper.is_some(),
                &[Lbfgsb, Lm, Trf],
                "lbfgsb, lm and trf",
            ),
        ];
        for (flag, given, methods, takes) in flags {
            if given && !methods.contains(&method) {
                anyhow::bail!("{flag} applies to --method {takes} only");
            }
        }
        // The plot is SVG whatever the name; a name for another format is refused before the
        // solve rather than given SVG under it.
        if let Some(path) = &self.plot
            && let Some(extension) = path.extension()
            && !extension.eq_ignore_ascii_case("svg")
        {
            anyhow::bail!(
                "--plot {}: the plot is written as SVG; give a file name ending in .svg",
                path.display()
            );
        }
        Ok(())
    }

    /// `curve_fit`'s start inside the bounds where bounds are given and no `p0`
    /// ([`Bounds::curve_fit_start`]); `None` without bounds.
    pub fn bounded_start(&self, n: usize) -> anyhow::Result<Option<Vec<f64>>> {
        Ok(self.bounds(n)?.map(|b| b.curve_fit_start()))
    }

    /// The box `--lower` and `--upper` give `n` variables: each a value per variable or one
    /// for all, the missing side unbounded. [`default_bounds`](Self::default_bounds) without
    /// either.
    fn bounds(&self, n: usize) -> anyhow::Result<Option<Bounds>> {
        if !self.bounds_given() {
            return Ok(self.default_bounds.clone());
        }
        let side = |flag: &str, values: &Option<Numbers>, none: f64| match values {
            None => Ok(vec![none; n]),
            Some(Numbers(v)) if v.len() == 1 => Ok(vec![v[0]; n]),
            Some(Numbers(v)) if v.len() == n => Ok(v.clone()),
            Some(Numbers(v)) => Err(anyhow::anyhow!(
                "{flag} has {} values for {n} variables: give one per variable, or one for all",
                v.len()
            )),
        };
        Ok(Some(Bounds {
            lower: side("--lower", &self.lower, f64::NEG_INFINITY)?,
            upper: side("--upper", &self.upper, f64::INFINITY)?,
        }))
    }

    /// Whether `--lower` or `--upper` was given.
    pub fn bounds_given(&self) -> bool {
        self.lower.is_some() || self.upper.is_some()
    }

    /// `x0` with the `--fix` values in, and which variables they hold (`None` without `--fix`).
    /// Borrowed without `--fix`: copying a large `x0` would fault in fresh pages for nothing.
    pub fn held_start<'x>(&self, x0: &'x [f64]) -> anyhow::Result<HeldStart<'x>> {
        if self.fix.is_empty() {
            return Ok((Cow::Borrowed(x0), None));
        }
        let n = x0.len();
        let (mut x, mut fixed) = (x0.to_vec(), vec![false; n]);
        for Fix { variable, value } in &self.fix {
            let index = self
                .index_of(variable, n)
                .map_err(|why| anyhow::anyhow!("--fix {variable}={value}: {why}"))?;
            if fixed[index] {
                anyhow::bail!("--fix {variable}: variable {index} is given twice");
            }
            (fixed[index], x[index]) = (true, *value);
        }
        Ok((Cow::Owned(x), Some(fixed)))
    }

    /// The index of `variable` among `n`, or why there is none.
    fn index_of(&self, variable: &Variable, n: usize) -> Result<usize, String> {
        match (variable, &self.variable_names) {
            (&Variable::Index(index), _) if index < n => Ok(index),
            (Variable::Index(_), _) => Err(format!("there are {n} variables, 0 to {}", n - 1)),
            (Variable::Name(name), Some(names)) => (names.iter().position(|known| known == name))
                .ok_or_else(|| {
                    let shown = names.iter().take(8).cloned().collect::<Vec<_>>();
                    let more = if names.len() > 8 { ", …" } else { "" };
                    format!(
                        "no parameter is called `{name}`; they are {}{more}",
                        shown.join(", ")
                    )
                }),
            // The labels reports show for variables without names: `x3` (solve), `θ3` (fit).
            (Variable::Name(name), None) => (name.strip_prefix('x'))
                .or_else(|| name.strip_prefix('θ'))
                .and_then(super::parse::index)
                .map_or_else(
                    || {
                        Err(format!(
                            "these variables have no names: give a 0-based index, 0 to {}",
                            n - 1
                        ))
                    },
                    |index| self.index_of(&Variable::Index(index), n),
                ),
        }
    }

    /// Levenberg–Marquardt's options from the flags (trf's with `--method trf`), for `n`
    /// variables of which `fixed` holds some.
    pub fn lm_options(
        &self,
        method: MethodArg,
        fixed: Option<Vec<bool>>,
        n: usize,
    ) -> anyhow::Result<LmOptions> {
        let defaults = LmOptions::default();
        Ok(LmOptions {
            ftol: self.ftol.unwrap_or(defaults.ftol),
            xtol: self.xtol.unwrap_or(defaults.xtol),
            gtol: self.gtol.unwrap_or(defaults.gtol),
            max_nfev: self.max_nfev,
            loss: self.loss.map_or(defaults.loss, |arg| arg.0),
            f_scale: self.f_scale.unwrap_or(defaults.f_scale),
            fixed,
            bounds: self.bounds(n)?,
            method: (method == MethodArg::Trf).then_some(LsqMethod::Trf),
            x_scale: self.x_scale.clone(),
            ..defaults
        })
    }

    /// Runs `method` on `objective` from `x0`, with progress as asked.
    pub fn run(
        &self,
        method: MethodArg,
        objective: &mut Solvable,
        x0: &[f64],
        json: bool,
    ) -> anyhow::Result<Outcome> {
        self.check(method)?;
        let (x0, fixed) = self.held_start(x0)?;
        let x0 = &*x0;
        let mut progress = Progress::new(self.progress, json);
        let mut history = Vec::new();
        let mut observer = |it: &cudamin::Iterate<'_>| {
            progress.show(it);
            history.push(Step {
                nit: it.nit,
                fun: it.fun,
                grad_norm: it.grad_norm,
            });
            ControlFlow::Continue(())
        };
        let outcome = match method {
            MethodArg::Lm | MethodArg::Trf => {
                let options = self.lm_options(method, fixed.clone(), x0.len())?;
                let Some(least_squares) = objective.least_squares() else {
                    anyhow::bail!(
                        "--method {} needs a sum of squares loaded with its residuals (fit models, terms registered with register_residuals!, most mgh-* problems); this objective is a scalar term: use --method bfgs, lbfgs or lbfgsb",
                        method.name()
                    );
                };
                let r = cudamin::least_squares_with_observer(
                    least_squares,
                    x0,
                    &options,
                    &mut observer,
                )?;
                Outcome {
                    // Only trf reports an active set.
                    method: if r.active_mask.is_some() { "trf" } else { "lm" },
                    fun: 2.0 * r.cost,
                    grad_inf_norm: 2.0 * r.optimality,
                    jac_error: None,
                    nit: r.nit,
                    nfev: r.nfev,
                    njev: r.njev,
                    status: r.status.code(),
                    success: r.success,
                    message: r.message,
                    factor: Some(r.factor),
                    active_mask: r.active_mask,
                    fixed: r.fixed,
                    x: r.x,
                    history: Vec::new(),
                }
            }
            MethodArg::Bfgs | MethodArg::Lbfgs | MethodArg::Lbfgsb => {
                let defaults = Options::default();
                let bounds = self.bounds(x0.len())?;
                let options = Options {
                    gtol: self.gtol.unwrap_or(defaults.gtol),
                    ftol: self.ftol.unwrap_or(defaults.ftol),
                    maxiter: self.maxiter,
                    maxfun: self.maxfun,
                    maxls: self.maxls.unwrap_or(defaults.maxls),
                    memory: self.maxcor.unwrap_or(defaults.memory),
                    bounds: bounds.clone(),
                    fixed: fixed.clone(),
                    // Where the solve kept its vectors on a device, the gradient's norm is
                    // taken there, and only x is copied back.
                    keep_on_device: true,
                    ..defaults
                };
                let quasi_newton = method.quasi_newton().unwrap_or_default();
                let mut r = cudamin::minimize_with_observer(
                    objective.objective(),
                    x0,
                    quasi_newton,
                    &options,
                    &mut observer,
                )?;
                let grad_inf_norm = match (&bounds, r.on_device.take()) {
                    (None, Some(kept)) => {
                        r.x = kept.x.to_host()?;
                        kept.jac.max_abs()?
                    }
                    (bounds, kept) => {
                        if let Some(kept) = kept {
                            (r.x, r.jac) = (kept.x.to_host()?, kept.jac.to_host()?);
                        }
                        match bounds {
                            Some(bounds) => bounds.projected_gradient_norm(&r.x, &r.jac),
                            None => cudamin::plumbing::inf_norm(&r.jac),
                        }
                    }
                };
                Outcome {
                    method: method.name(),
                    grad_inf_norm,
                    fun: r.fun,
                    jac_error: r.jac_error,
                    nit: r.nit,
                    nfev: r.nfev,
                    njev: r.njev,
                    status: r.status.code(),
                    success: r.success,
                    message: r.message,
                    factor: None,
                    active_mask: bounds.map(|b| b.active_mask(&r.x, fixed.as_deref())),
                    fixed,
                    x: r.x,
                    history: Vec::new(),
                }
            }
        };
        progress.finish();
        Ok(Outcome { history, ..outcome })
    }
}
