//! What a built-in problem is: a registered term with its rule for `n`, its starting point,
//! generated data and known minimum, set up on a backend as an [`Instance`].

use cudamin_host::plumbing::gpu::abi::{Launch, residual_launches, term_launches};
use cudamin_host::{Backend, BackendError, Evaluator, LeastSquaresEvaluator};
use cudamin_host::{DataType, ProblemError, TermProblem};
use cudamin_host::{Gradient, LeastSquaresObjective, Objective, TermObjective};
use gpu_kernels::{Kernels, ResidualKernels, SumOfSquares, Window};

/// Why a named problem could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No built-in problem has this name.
    #[error("unknown problem `{name}`; `cudamin list` shows the built-in ones: {known}")]
    UnknownProblem {
        /// The name asked for.
        name: String,
        /// The built-in problems' names, comma-separated.
        known: String,
    },
    /// `--points` was given for a problem without generated data.
    #[error("{problem} has no data points: give it no point count (--points, points=)")]
    NoPoints {
        /// The problem's name.
        problem: &'static str,
    },
    /// Data stored as f32 were asked for a problem without generated data points.
    #[error("{problem} has no data points to store as {}: drop --data-dtype", .data_type.name())]
    NoDataToStore {
        /// The problem's name.
        problem: &'static str,
        /// The type asked for.
        data_type: DataType,
    },
    /// `--points 0` was given for a problem with generated data.
    #[error("{problem}: the point count (--points, points=) must be at least 1")]
    NoData {
        /// The problem's name.
        problem: &'static str,
    },
    /// The problem's vectors or data would not fit in memory: refused with this error, where a
    /// failed allocation would abort the process.
    #[error(
        "n = {n}{} needs more memory than this process may take ({})",
        with_points(*.points),
        gigabytes(*.bytes)
    )]
    TooLarge {
        /// The number of variables asked for.
        n: usize,
        /// The number of data points asked for (0 for a problem without data).
        points: usize,
        /// What the problem needs, or the refused allocation asked for; `None` past
        /// `usize::MAX`.
        bytes: Option<usize>,
    },
    /// The caller's data columns differ in length.
    #[error("the data columns differ in length ({lengths}); give one value per row in each")]
    Columns {
        /// Their lengths, comma-separated.
        lengths: String,
    },
    /// The term refused the instance (its `n` or its data).
    #[error(transparent)]
    Problem(#[from] ProblemError),
    /// The backend could not load the problem.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// `TooLarge`'s estimate, in the units a user reads, with the room the tightest memory limit
/// leaves and which limit that is.
fn gigabytes(bytes: Option<usize>) -> String {
    let room = match cudamin_host::plumbing::memory_room() {
        Some(room) => format!("; {room}"),
        None => String::new(),
    };
    match bytes {
        Some(bytes) => format!("{:.3} GB needed{room}", bytes as f64 / 1e9),
        None => format!("over 2⁶⁴ bytes needed{room}"),
    }
}

/// `TooLarge`'s mention of the data points, for the problems that have them.
fn with_points(points: usize) -> String {
    match points {
        0 => String::new(),
        points => format!(" with {points} data points"),
    }
}

/// A problem loaded on a backend: a sum of terms, or a sum of squares loaded with its residuals,
/// which Levenberg–Marquardt can solve too.
pub enum Loaded {
    /// A sum of terms: BFGS and L-BFGS.
    Sum(Box<dyn Evaluator>),
    /// A sum of squares with its residuals: BFGS, L-BFGS and Levenberg–Marquardt.
    SumOfSquares(Box<dyn LeastSquaresEvaluator>),
}

impl Loaded {
    /// The problem as a sum, which every problem is.
    pub fn into_sum(self) -> Box<dyn Evaluator> {
        match self {
            Loaded::Sum(sum) => sum,
            Loaded::SumOfSquares(squares) => squares,
        }
    }

    /// The problem as a sum, borrowed.
    pub fn as_sum(&mut self) -> &mut dyn Evaluator {
        match self {
            Loaded::Sum(sum) => sum.as_mut(),
            Loaded::SumOfSquares(squares) => squares.as_mut(),
        }
    }

    /// The problem as a sum of squares with its residuals, when it is one.
    pub fn into_least_squares(self) -> Option<Box<dyn LeastSquaresEvaluator>> {
        match self {
            Loaded::Sum(_) => None,
            Loaded::SumOfSquares(squares) => Some(squares),
        }
    }

    /// The residuals' view, for a sum of squares.
    pub fn least_squares(&mut self) -> Option<&mut dyn LeastSquaresEvaluator> {
        match self {
            Loaded::Sum(_) => None,
            Loaded::SumOfSquares(squares) => Some(squares.as_mut()),
        }
    }
}

/// A loaded problem as the solvers take it: every one is an [`Objective`]; a sum of squares
/// loaded with its residuals is a [`LeastSquaresObjective`] too.
pub enum Solvable {
    /// A sum of terms: the quasi-Newton methods take it.
    Sum(TermObjective),
    /// A sum of squares with its residuals: least squares takes it too.
    SumOfSquares(TermObjective<dyn LeastSquaresEvaluator>),
}

impl Solvable {
    /// `loaded`, with gradients (and Jacobians) computed by `gradient`.
    pub fn new(loaded: Loaded, gradient: Gradient) -> Self {
        match loaded {
            Loaded::Sum(sum) => Solvable::Sum(TermObjective::new(sum, gradient)),
            Loaded::SumOfSquares(squares) => {
                Solvable::SumOfSquares(TermObjective::new(squares, gradient))
            }
        }
    }

    /// The problem as an objective, which every problem is.
    pub fn objective(&mut self) -> &mut dyn Objective {
        match self {
            Solvable::Sum(sum) => sum,
            Solvable::SumOfSquares(squares) => squares,
        }
    }

    /// The residuals' view, for a sum of squares.
    pub fn least_squares(&mut self) -> Option<&mut dyn LeastSquaresObjective> {
        match self {
            Solvable::Sum(_) => None,
            Solvable::SumOfSquares(squares) => Some(squares),
        }
    }
}

/// A problem set up on a backend, ready to solve.
pub struct Instance {
    /// The problem, loaded on the backend.
    pub evaluator: Loaded,
    /// The starting point, `n` values.
    pub x0: Vec<f64>,
    /// The known minimum of this instance, when there is one.
    pub f_star: Option<f64>,
    /// Other documented local minima, where a descent method legitimately stops.
    pub alternative_minima: &'static [f64],
    /// Which variables each term reads (the term's [`Window`]).
    pub window: Window,
    /// Every kernel launch the term makes on the GPU (placeholder addresses), for the PTX
    /// signature test.
    pub launches: Vec<Launch>,
    /// The number of terms, the points of a data fit: what `eval --cost` counts per.
    pub terms: usize,
    /// The bytes of the problem's data, as stored (0 for none).
    pub data_bytes: usize,
}

/// How big a problem is set up, and how its data are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// The number of variables.
    pub n: usize,
    /// The number of data points (0 for a problem without generated data).
    pub points: usize,
    /// How the problem's data are stored on the backend: f32 halves the bytes every pass reads.
    pub data_type: DataType,
}

/// How a problem is set up: with the backend and its [`Size`].
pub type Setup = fn(&Backend, Size) -> Result<Instance, LoadError>;

/// The f64 values a problem's setup holds at once beside its vectors, from `n` and the number
/// of data points: its data, and any factor it computes them with. `None`: past `usize::MAX`.
pub type Footprint = fn(usize, usize) -> Option<usize>;

/// A built-in problem. Listed with the builder, as `Problem::new(name, title, setup)` followed
/// by its rules, for example:
///
/// ```ignore
/// Problem::new("seed-expsum", "Σ x_i² + e^{x_i}", |backend, Size { n, .. }| {
///     load(backend, TermProblem::<SeedExpSum>::new(n)?, vec![0.5; n], None)
/// })
/// .n("n >= 1", 10_000)
/// .x0("0.5 everywhere")
/// .f_star("n · 0.827184026128")
/// ```
pub struct Problem {
    /// The name the command line knows it by, e.g. `"seed-expsum"`.
    pub name: &'static str,
    /// What it minimizes, in a line (`cudamin list`).
    pub title: &'static str,
    /// Which `n` are allowed, in words.
    pub n_rule: &'static str,
    /// The `n` when none is asked for.
    pub default_n: usize,
    /// `Some(default)` for problems with generated data points (`--points`).
    pub default_points: Option<usize>,
    /// The starting point, in words (empty when nothing is said).
    pub x0_rule: &'static str,
    /// The known minimum, in words.
    pub f_star_rule: &'static str,
    footprint: Footprint,
    setup: Setup,
}

impl Problem {
    /// A problem called `name`: `setup` builds it on a backend (with the module's `load`). The rules below
    /// default to "n >= 1" with n = 1, no data points, and nothing said of x0 or the minimum.
    pub const fn new(name: &'static str, title: &'static str, setup: Setup) -> Self {
        Problem {
            name,
            title,
            n_rule: "n >= 1",
            default_n: 1,
            default_points: None,
            x0_rule: "",
            f_star_rule: "unknown",
            footprint: |_, _| Some(0),
            setup,
        }
    }

    /// Which `n` are allowed, in words, and the default.
    pub const fn n(self, rule: &'static str, default: usize) -> Self {
        Problem {
            n_rule: rule,
            default_n: default,
            ..self
        }
    }

    /// The problem has generated data points (`--points`), `default` of them unless asked.
    pub const fn points(self, default: usize) -> Self {
        Problem {
            default_points: Some(default),
            ..self
        }
    }

    /// The starting point, in words.
    pub const fn x0(self, rule: &'static str) -> Self {
        Problem {
            x0_rule: rule,
            ..self
        }
    }

    /// The known minimum, in words.
    pub const fn f_star(self, rule: &'static str) -> Self {
        Problem {
            f_star_rule: rule,
            ..self
        }
    }

    /// What the setup holds beside the problem's vectors (none unless said): checked against
    /// the memory the process may take before any of it is made.
    pub const fn footprint(self, footprint: Footprint) -> Self {
        Problem { footprint, ..self }
    }

    /// Sets the problem up with `n` variables (default [`default_n`](Problem::default_n)) and,
    /// for data problems, `points` data points, stored as f64.
    pub fn instantiate(
        &self,
        backend: &Backend,
        n: Option<usize>,
        points: Option<usize>,
    ) -> Result<Instance, LoadError> {
        self.instantiate_as(backend, n, points, DataType::F64)
    }

    /// As [`instantiate`](Problem::instantiate), with the problem's data stored as
    /// `data_type`.
    pub fn instantiate_as(
        &self,
        backend: &Backend,
        n: Option<usize>,
        points: Option<usize>,
        data_type: DataType,
    ) -> Result<Instance, LoadError> {
        let n = n.unwrap_or(self.default_n);
        let points = match (self.default_points, points) {
            (None, Some(_)) => return Err(LoadError::NoPoints { problem: self.name }),
            (None, None) if data_type != DataType::F64 => {
                return Err(LoadError::NoDataToStore {
                    problem: self.name,
                    data_type,
                });
            }
            (None, None) => 0,
            (Some(_), Some(0)) => return Err(LoadError::NoData { problem: self.name }),
            (Some(default), points) => points.unwrap_or(default),
        };
        check_memory(n, points, (self.footprint)(n, points))?;
        let size = Size {
            n,
            points,
            data_type,
        };
        (self.setup)(backend, size).map_err(|error| match error {
            LoadError::Problem(error) => LoadError::Problem(error.named(self.name)),
            other => other,
        })
    }
}

/// Refuses a size whose memory the process may not take, before any of it is made: `values`
/// (the problem's [`Footprint`]) and ten n-vectors for `x0`, the gradient and the solver's work
/// vectors. Filling memory for a minute and failing on the last allocation helps nobody.
fn check_memory(n: usize, points: usize, values: Option<usize>) -> Result<(), LoadError> {
    let bytes = n
        .checked_mul(10)
        .and_then(|vectors| vectors.checked_add(values?))
        .and_then(|values| values.checked_mul(size_of::<f64>()));
    let fits = bytes.is_some_and(|bytes| {
        cudamin_host::plumbing::memory_room().is_none_or(|room| bytes <= room.bytes)
            && Vec::<u8>::new().try_reserve_exact(bytes).is_ok()
    });
    if fits {
        Ok(())
    } else {
        Err(LoadError::TooLarge { n, points, bytes })
    }
}

/// `len` zeros (`None`: a length that overflowed) for a problem's data, or [`LoadError::TooLarge`]
/// where `vec!` would abort the process.
pub(super) fn zeros(len: Option<usize>, n: usize, points: usize) -> Result<Vec<f64>, LoadError> {
    len.and_then(cudamin_host::plumbing::try_zeros)
        .ok_or(LoadError::TooLarge {
            n,
            points,
            bytes: len.and_then(|len| len.checked_mul(size_of::<f64>())),
        })
}

/// Loads a term problem and pairs it with its starting point and known minimum.
pub(super) fn load<T: Kernels + 'static>(
    backend: &Backend,
    problem: TermProblem<T>,
    x0: Vec<f64>,
    f_star: Option<f64>,
) -> Result<Instance, LoadError> {
    let launches = term_launches::<T>();
    let shape = shape_of(&problem);
    Ok(loaded::<T>(
        Loaded::Sum(backend.load(problem)?),
        x0,
        f_star,
        launches,
        shape,
    ))
}

/// [`load`] for a sum of two term problems over the same variables: a data term and a
/// penalty beside it, loaded as one objective.
pub(super) fn load_sum<T: Kernels + 'static, U: Kernels + 'static>(
    backend: &Backend,
    data: TermProblem<T>,
    penalty: TermProblem<U>,
    x0: Vec<f64>,
    f_star: Option<f64>,
) -> Result<Instance, LoadError> {
    let mut launches = term_launches::<T>();
    launches.extend(term_launches::<U>());
    let shape = shape_of(&data);
    let evaluator = Loaded::Sum(backend.load_sum(data.plus(penalty)?)?);
    Ok(loaded::<T>(evaluator, x0, f_star, launches, shape))
}

/// [`load`] for a sum of squares of residual term `T`, loaded with its residuals (for
/// Levenberg–Marquardt).
pub(super) fn load_least_squares<T: ResidualKernels + 'static>(
    backend: &Backend,
    problem: TermProblem<SumOfSquares<T>>,
    x0: Vec<f64>,
    f_star: Option<f64>,
) -> Result<Instance, LoadError> {
    let shape = shape_of(&problem);
    let evaluator = Loaded::SumOfSquares(backend.load_least_squares(problem)?);
    let launches = residual_launches::<T>();
    Ok(loaded::<SumOfSquares<T>>(
        evaluator, x0, f_star, launches, shape,
    ))
}

/// A problem's terms and data bytes, for [`Instance`].
fn shape_of<T: Kernels>(problem: &TermProblem<T>) -> (usize, usize) {
    let bytes = problem.data_len() * problem.data_type().bytes();
    (problem.terms(), bytes)
}

/// An instance of term `T`, loaded, with every launch its kernels make.
fn loaded<T: Kernels>(
    evaluator: Loaded,
    x0: Vec<f64>,
    f_star: Option<f64>,
    launches: Vec<Launch>,
    (terms, data_bytes): (usize, usize),
) -> Instance {
    Instance {
        evaluator,
        x0,
        f_star,
        alternative_minima: &[],
        window: T::WINDOW,
        launches,
        terms,
        data_bytes,
    }
}

/// `pattern` repeated to `n` entries.
pub(super) fn repeating(pattern: &[f64], n: usize) -> Vec<f64> {
    pattern.iter().copied().cycle().take(n).collect()
}
