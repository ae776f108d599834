//! Why a fit's data or parameter count is refused, and the rule that refuses too few points.

use crate::problems::problem::LoadError;
use cudamin_host::plumbing::Shown;
use std::borrow::Cow;

/// Why a fit's data or parameter count was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// No built-in model has this name.
    #[error("unknown model `{name}`; the built-in models are: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The built-in models' names, comma-separated.
        known: String,
    },
    /// Fewer points than free parameters.
    #[error("{points} data points cannot determine {}", free_parameters(*.params, *.held))]
    Underdetermined {
        /// The number of data points.
        points: usize,
        /// The number of parameters `p`.
        params: usize,
        /// How many of them are held at their start.
        held: usize,
    },
    /// A standard deviation is not a positive finite number.
    #[error("sigma at index {index} is {}; every sigma must be positive", Shown(*.value))]
    Sigma {
        /// Its 0-based index.
        index: usize,
        /// The value given.
        value: f64,
    },
    /// The predictors differ in length.
    #[error("x's predictor {index} has {len} points, predictor 0 has {points}; they must match")]
    Predictors {
        /// The length of the first predictor.
        points: usize,
        /// The 0-based index of the first that differs.
        index: usize,
        /// Its length.
        len: usize,
    },
    /// `x`, `y` and `σ` differ in length.
    #[error("x has {x} points, y {y}{}; they must match", sigma.map_or(String::new(), |s| format!(" and sigma {s}")))]
    Lengths {
        /// The length of `x`.
        x: usize,
        /// The length of `y`.
        y: usize,
        /// The length of `σ`, where one is given.
        sigma: Option<usize>,
    },
    /// The starting parameters `p0` are not `p` values.
    #[error("p0 has {got} values, the model has {params} parameters")]
    StartLength {
        /// The length of `p0`.
        got: usize,
        /// The number of parameters `p`.
        params: usize,
    },
    /// The model does not take this many parameters, or these data (its term's `check`).
    #[error("{model} with {params} parameters: {reason}")]
    Params {
        /// The model's name.
        model: &'static str,
        /// The number of parameters asked for.
        params: usize,
        /// The model's rule, in words.
        reason: Cow<'static, str>,
    },
    /// Single precision asked of fits that run only in `f64`.
    #[error(
        "{model}: single-precision fits run on the model's batch kernel, one fit per thread: at most {} parameters, no bounds, the linear loss; fit these in float64",
        gpu_kernels::lm::batch::PARAMS_MAX
    )]
    SinglePrecision {
        /// The model's name.
        model: &'static str,
    },
    /// A ragged batch's offsets do not rise from 0 to its points.
    #[error("the offsets must rise from 0 to y's {points} points, one more than the fits")]
    Offsets {
        /// The batch's points, `y`'s length.
        points: usize,
    },
    /// A Poisson fit asked of data or a model that cannot take one.
    #[error("{model}: poisson fits {reason}")]
    Poisson {
        /// The model's name.
        model: &'static str,
        /// Why not, in words.
        reason: &'static str,
    },
    /// Setting the model up failed (memory, the data, the backend).
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Refuses `params` parameters, `held` of them held at their start, that `points` data points
/// cannot determine: fewer points than free parameters (whatever the method: scipy's
/// `curve_fit` refuses them for `lm`, and with `trf` they leave no degree of freedom for
/// `pcov`).
pub fn check_determined(points: usize, params: usize, held: usize) -> Result<(), FitError> {
    if points < params.saturating_sub(held) {
        return Err(FitError::Underdetermined {
            points,
            params,
            held,
        });
    }
    Ok(())
}

/// "`p` parameters", or with some held "`p − held` free parameters (`held` held)".
fn free_parameters(params: usize, held: usize) -> String {
    match held {
        0 => format!("{params} parameters"),
        _ => format!(
            "{} free parameters ({held} of {params} held)",
            params.saturating_sub(held)
        ),
    }
}
