//! The Python half's arguments in cudamin's types: names to kinds (each looked up in its own
//! table: [`Gradient::ALL`], [`Loss::ALL`], [`Method`]), numpy arrays to slices, the two bound
//! arrays to [`Bounds`].

use crate::errors::Failure;
use cudamin::Bounds;
use cudamin::{BackendChoice, DataType, Gradient, LmOptions, Loss, LsqMethod, Method, XScale};
use numpy::PyReadonlyArray1;

/// A 1-D float64 array read where it lies. The Python half makes every array contiguous
/// float64 first, so a refusal here is a bug there, reported rather than assumed away.
pub fn slice<'a>(name: &str, array: &'a PyReadonlyArray1<'_, f64>) -> Result<&'a [f64], Failure> {
    array
        .as_slice()
        .map_err(|_| Failure::Input(format!("{name} must be a contiguous float64 array")))
}

/// How a fit's data are stored on the backend: `"f64"` or `"f32"` ([`DataType::name`]).
pub fn data_type(name: &str) -> Result<DataType, Failure> {
    DataType::from_name(name).ok_or_else(|| {
        Failure::Input(format!(
            "data_dtype must be float64 or float32, not {name:?}"
        ))
    })
}

/// An optional array, copied: what outlives the GIL.
pub fn owned(
    name: &str,
    array: Option<PyReadonlyArray1<'_, f64>>,
) -> Result<Option<Vec<f64>>, Failure> {
    array
        .map(|a| slice(name, &a).map(<[f64]>::to_vec))
        .transpose()
}

/// `minimize`'s method: `"bfgs"`, `"lbfgs"` or `"lbfgsb"` ([`Method::name`]).
pub fn method(name: &str) -> Result<Method, Failure> {
    [Method::Bfgs, Method::Lbfgs, Method::LbfgsB]
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| Failure::Input(format!("unknown method `{name}`: BFGS, L-BFGS or L-BFGS-B")))
}

/// The largest `n` (held variables included) at which BFGS returns its `n×n` `hess_inv`
/// unasked: 10⁶ entries (8 MB), made at the end from an implicit BFGS's `k` pairs in `k·n²`,
/// which a dense BFGS (scipy's) spends over its `k` iterations anyway. At the limit, making the
/// matrix costs the same order as a short solve.
pub const BFGS_HESS_INV_MAX_N: usize = 1000;

/// Whether `minimize` returns `hess_inv` when not told: always from L-BFGS-B (its pairs, as
/// scipy's always does), from BFGS up to [`BFGS_HESS_INV_MAX_N`] variables (scipy's always
/// does; past that size the matrix would cost more than the solve, and `n²` memory, only for
/// this), never from L-BFGS (not scipy's).
pub fn hess_inv_by_default(method: Method, n: usize) -> bool {
    match method {
        Method::LbfgsB => true,
        Method::Bfgs => n <= BFGS_HESS_INV_MAX_N,
        Method::Lbfgs => false,
    }
}

/// A gradient scheme by its name in the scheme table (`"exact"`, `"forward"`, `"central"`).
pub fn gradient(name: &str) -> Result<Gradient, Failure> {
    Gradient::ALL
        .into_iter()
        .find(|g| g.name() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = Gradient::ALL.iter().map(|g| g.name()).collect();
            Failure::Input(format!("unknown jac `{name}`: {}", known.join(", ")))
        })
}

/// A robust loss by scipy's name.
pub fn loss(name: &str) -> Result<Loss, Failure> {
    Loss::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Loss::ALL.iter().map(|l| l.name()).collect();
        Failure::Input(format!("unknown loss `{name}`: {}", known.join(", ")))
    })
}

/// `least_squares`' and `curve_fit`'s method and trf's `x_scale`. The method is `"lm"` or
/// `"trf"`; `None` runs lm, or trf with bounds or a robust loss, as `curve_fit` picks. The
/// scale is from `J` (`jac`), one per variable (`scale`), or `None` (1 for each).
pub fn lsq_method(
    name: Option<&str>,
    jac: bool,
    scale: Option<PyReadonlyArray1<'_, f64>>,
) -> Result<(Option<LsqMethod>, Option<XScale>), Failure> {
    let method = match name {
        None => None,
        Some("lm") => Some(LsqMethod::Lm),
        Some("trf") => Some(LsqMethod::Trf),
        Some(other) => {
            return Err(Failure::Input(format!(
                "unknown method `{other}`: 'lm' or 'trf' ('dogbox' is not in cudamin)"
            )));
        }
    };
    let x_scale = match (jac, owned("x_scale", scale)?) {
        (true, _) => Some(XScale::Jac),
        (false, scale) => scale.map(XScale::Fixed),
    };
    Ok((method, x_scale))
}

/// `"auto"`, `"cpu"`, `"cuda"` or `"sim"` (the PTX simulator), as the command line's `--backend`.
pub fn backend(name: &str) -> Result<BackendChoice, Failure> {
    match name {
        "auto" => Ok(BackendChoice::Auto),
        "cpu" => Ok(BackendChoice::Cpu),
        "cuda" => Ok(BackendChoice::Cuda),
        "sim" => Ok(BackendChoice::Simulated),
        _ => Err(Failure::Input(format!(
            "unknown backend `{name}`: auto, cpu, cuda or sim"
        ))),
    }
}

/// The box from two arrays of `n` values each, or of one value for all `n` (a scalar bound,
/// when the Python half did not know `n`); `None` when neither is given. The solvers check
/// them and name a bad variable.
pub fn bounds(
    lower: Option<Vec<f64>>,
    upper: Option<Vec<f64>>,
    n: usize,
) -> Result<Option<Bounds>, Failure> {
    if lower.is_none() && upper.is_none() {
        return Ok(None);
    }
    let side = |name: &str, values: Option<Vec<f64>>, none: f64| match values {
        None => Ok(vec![none; n]),
        Some(values) if values.len() == n => Ok(values),
        Some(values) if values.len() == 1 => Ok(vec![values[0]; n]),
        Some(values) => Err(Failure::Input(format!(
            "{name} bounds have {} values for {n} variables",
            values.len()
        ))),
    };
    Ok(Some(Bounds {
        lower: side("lower", lower, f64::NEG_INFINITY)?,
        upper: side("upper", upper, f64::INFINITY)?,
    }))
}

/// The mask of held variables from their indices, checked against `n`.
pub fn fixed(indices: Option<Vec<usize>>, n: usize) -> Result<Option<Vec<bool>>, Failure> {
    let Some(indices) = indices else {
        return Ok(None);
    };
    let mut mask = vec![false; n];
    for index in indices {
        match mask.get_mut(index) {
            None => {
                return Err(Failure::Input(format!(
                    "fixed index {index} is out of range: there are {n} variables"
                )));
            }
            Some(true) => {
                return Err(Failure::Input(format!(
                    "fixed index {index} is given twice"
                )));
            }
            Some(held) => *held = true,
        }
    }
    Ok(Some(mask))
}

/// The Levenberg–Marquardt options from the Python half's keywords (scipy's defaults for
/// those not given).
#[allow(clippy::too_many_arguments)]
pub fn lm_options(
    ftol: Option<f64>,
    xtol: Option<f64>,
    gtol: Option<f64>,
    max_nfev: Option<usize>,
    loss: &str,
    f_scale: f64,
    fixed: Option<Vec<bool>>,
    bounds: Option<Bounds>,
    (method, x_scale): (Option<LsqMethod>, Option<XScale>),
) -> Result<LmOptions, Failure> {
    let defaults = LmOptions::default();
    Ok(LmOptions {
        ftol: ftol.unwrap_or(defaults.ftol),
        xtol: xtol.unwrap_or(defaults.xtol),
        gtol: gtol.unwrap_or(defaults.gtol),
        max_nfev,
        loss: self::loss(loss)?,
        f_scale,
        fixed,
        bounds,
        method,
        x_scale,
        ..defaults
    })
}
