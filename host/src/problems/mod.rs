//! The built-in problems the command line knows by name: a registered term, the rule for `n`,
//! the starting point, generated data, and the known minimum where there is one.

mod builtin;
mod mgh;
pub mod random;

pub use builtin::{
    LSQ_EXPSIN_SEED, QUADRATIC_SEED, lsq_expsin_data, lsq_expsin_theta_true, quadratic_data,
};

use crate::backend::{Backend, BackendError, Evaluator};
use crate::launcher::abi::Launch;
use crate::objective::{ProblemError, TermProblem};
use gpu_kernels::Kernels;

/// Why a named problem could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("unknown problem `{name}`; `cudamin list` shows the built-in ones: {known}")]
    UnknownProblem { name: String, known: String },
    #[error("{problem} has no data points; drop --points")]
    NoPoints { problem: &'static str },
    #[error("{problem}: --points must be at least 1")]
    NoData { problem: &'static str },
    #[error("n = {n}{} needs more memory than this machine can allocate", with_points(*.points))]
    TooLarge { n: usize, points: usize },
    #[error(transparent)]
    Problem(#[from] ProblemError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// `TooLarge`'s mention of the data points, for the problems that have them.
fn with_points(points: usize) -> String {
    match points {
        0 => String::new(),
        points => format!(" with {points} data points"),
    }
}

/// A problem set up on a backend, ready to solve.
pub struct Instance {
    pub evaluator: Box<dyn Evaluator>,
    pub x0: Vec<f64>,
    /// The known minimum of this instance, when there is one.
    pub f_star: Option<f64>,
    /// Other documented local minima, where a descent method legitimately stops.
    pub alternative_minima: &'static [f64],
}

/// A built-in problem.
pub struct Problem {
    pub name: &'static str,
    pub title: &'static str,
    /// Which `n` are allowed, in words.
    pub n_rule: &'static str,
    pub default_n: usize,
    /// `Some(default)` for problems with generated data points (`--points`).
    pub default_points: Option<usize>,
    pub x0_rule: &'static str,
    /// The known minimum, in words.
    pub f_star_rule: &'static str,
    setup: fn(&Backend, usize, usize) -> Result<Instance, LoadError>,
    /// Every kernel launch the problem's term makes on the GPU, for the PTX signature test.
    pub launches: fn() -> Vec<Launch>,
}

impl Problem {
    /// Sets the problem up with `n` variables (default [`default_n`](Problem::default_n)) and,
    /// for data problems, `points` data points.
    pub fn instantiate(
        &self,
        backend: &Backend,
        n: Option<usize>,
        points: Option<usize>,
    ) -> Result<Instance, LoadError> {
        let n = n.unwrap_or(self.default_n);
        let points = match (self.default_points, points) {
            (None, Some(_)) => return Err(LoadError::NoPoints { problem: self.name }),
            (None, None) => 0,
            (Some(_), Some(0)) => return Err(LoadError::NoData { problem: self.name }),
            (Some(default), points) => points.unwrap_or(default),
        };
        check_memory(n, points)?;
        (self.setup)(backend, n, points)
    }
}

/// Refuses sizes whose vectors could not even be allocated, before anything is built: an
/// allocation failure would abort the process. The estimate (ten n-vectors for `x0`, the
/// gradient and the solver's work vectors) is a floor, not a promise; data arrays are checked
/// where they are made, by [`zeros`].
fn check_memory(n: usize, points: usize) -> Result<(), LoadError> {
    let bytes = n
        .checked_mul(10)
        .and_then(|values| values.checked_mul(size_of::<f64>()));
    let fits = bytes.is_some_and(|bytes| Vec::<u8>::new().try_reserve_exact(bytes).is_ok());
    if fits {
        Ok(())
    } else {
        Err(LoadError::TooLarge { n, points })
    }
}

/// `len` zeros (`None`: a length that overflowed) for a problem's data, or [`LoadError::TooLarge`]
/// where `vec!` would abort the process.
fn zeros(len: Option<usize>, n: usize, points: usize) -> Result<Vec<f64>, LoadError> {
    let mut values = Vec::new();
    match len {
        Some(len) if values.try_reserve_exact(len).is_ok() => {
            values.resize(len, 0.0);
            Ok(values)
        }
        _ => Err(LoadError::TooLarge { n, points }),
    }
}

/// Loads a term problem and pairs it with its starting point and known minimum.
fn load<T: Kernels + 'static>(
    backend: &Backend,
    problem: TermProblem<T>,
    x0: Vec<f64>,
    f_star: Option<f64>,
) -> Result<Instance, LoadError> {
    Ok(Instance {
        evaluator: backend.load(problem)?,
        x0,
        f_star,
        alternative_minima: &[],
    })
}

/// `pattern` repeated to `n` entries.
fn repeating(pattern: &[f64], n: usize) -> Vec<f64> {
    pattern.iter().copied().cycle().take(n).collect()
}

/// Every built-in problem, in `cudamin list` order.
pub fn all() -> impl Iterator<Item = &'static Problem> {
    builtin::PROBLEMS.iter().chain(mgh::PROBLEMS)
}

/// The built-in problem called `name`.
pub fn find(name: &str) -> Result<&'static Problem, LoadError> {
    all()
        .find(|p| p.name == name)
        .ok_or_else(|| LoadError::UnknownProblem {
            name: name.to_owned(),
            known: all().map(|p| p.name).collect::<Vec<_>>().join(", "),
        })
}
