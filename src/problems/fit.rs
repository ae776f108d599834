//! The built-in models `cudamin fit` knows by name (the residual terms of
//! `gpu_kernels::terms::fit`), and how a data set becomes their problem: columns `x`, `y` and
//! the weights `1/σ`, uploaded once.

use super::problem::{Instance, LoadError, load_least_squares};
use cudamin_host::Bounds;
use cudamin_host::plumbing::gpu::abi::{Launch, residual_launches};
use cudamin_host::{Backend, Columns as Stored, DataType, ProblemError, TermProblem};
use gpu_kernels::kernel::term_value;
use gpu_kernels::lm::batch;
use gpu_kernels::raw::RawKernel;
use gpu_kernels::terms::fit::{
    self, ExpDecay, ExpSin, Gauss2d, Gauss2dElliptic, GaussPeaks, Linear, Lorentzian, Poly,
};
use gpu_kernels::{Data, ResidualKernels, SumOfSquares, Term};
use std::borrow::Cow;

mod error;
mod on_device;
pub use error::{FitError, check_determined};
pub use on_device::DeviceColumns;

/// The points of a fit: `y ≈ m(θ, x)`, with optional standard deviations `σ` of `y`.
#[derive(Clone, Debug)]
pub struct FitData {
    /// The independent variable, one value per point.
    pub x: Vec<f64>,
    /// The observations, one per point.
    pub y: Vec<f64>,
    /// One `σ > 0` per point; `None` weighs every point 1.
    pub sigma: Option<Vec<f64>>,
}

/// A fit's points borrowed where they lie: [`FitData`]'s columns, or a caller's arrays.
#[derive(Clone, Copy, Debug)]
pub struct Columns<'a> {
    /// The predictors, one column each and one value per point in each: one for the built-in
    /// models; `k` for a model of `k` predictors, as scipy's `xdata` of shape `(k, M)`. The
    /// terms read them as the first `k` columns, then `y`, then `w = 1/σ`.
    pub x: &'a [&'a [f64]],
    /// The observations, one per point.
    pub y: &'a [f64],
    /// One `σ > 0` per point; `None` weighs every point 1.
    pub sigma: Option<&'a [f64]>,
    /// How the backend stores the fit's table (the predictors, `y` and `w`): f32 halves the
    /// bytes each pass reads, the arithmetic staying f64.
    pub data_type: DataType,
}

/// How a model is set up with `p` parameters on data laid out as the fit terms read it, on
/// the host or on the backend's device.
type Setup = fn(&Backend, usize, Stored, usize, DataType) -> Result<Instance, LoadError>;

/// A fit model: a residual term with its name and rules ([`Model::of`]).
pub struct Model {
    /// The name it is known by, e.g. `"exp-decay"` (`cudamin fit --model`).
    pub name: &'static str,
    /// `m(θ, x)`, in words.
    pub formula: &'static str,
    /// Which parameter counts are allowed, in words.
    pub params_rule: &'static str,
    /// The parameter count `p` when none is asked for, for one predictor (see
    /// [`params_for`](Model::params_for)).
    pub default_params: usize,
    /// The parameter count for `k` predictors, where it follows them (linear's `k + 1`);
    /// `None`: it is [`default_params`](Model::default_params) whatever `k` is.
    per_predictors: Option<fn(usize) -> usize>,
    /// The parameters' natural lower bounds for `p` parameters (0 for a decay rate or a
    /// width), which `cudamin fit` applies unless told otherwise; `None`: the model has none.
    natural_lower: Option<fn(usize) -> Vec<f64>>,
    /// Parameter `j`'s name (exp-decay's `a0`, `b0`, …), where the model names its parameters;
    /// `None`: they are known by index alone.
    parameter_name: Option<fn(usize) -> String>,
    setup: Setup,
    /// The name its term was registered under (`register_residuals!`): its batch kernels'
    /// names begin with it.
    term: &'static str,
    /// The term's own refusal of `p` parameters on a data table.
    check: fn(usize, Data<'_>) -> Result<(), &'static str>,
    /// The grid kernel that runs many small fits of the model at once, one per thread
    /// (`gpu_kernels::lm::batch`), where it has one.
    batch: Option<&'static RawKernel>,
    /// The same for Poisson maximum-likelihood fits (`gpu_kernels::PoissonDeviance`).
    poisson_batch: Option<&'static RawKernel>,
    launches: fn() -> Vec<Launch>,
    predict: fn(&[f64], &[&[f64]]) -> Vec<f64>,
}

/// Lower bounds of 0 for the parameters `j < p` that `nonnegative(j)` picks, none for the
/// others.
fn zero_below(p: usize, nonnegative: impl Fn(usize) -> bool) -> Vec<f64> {
    (0..p)
        .map(|j| {
            if nonnegative(j) {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect()
}

/// `m(θ, x)` at each point of the predictors `x`, from residual term `T` on the CPU: its
/// residual at `y = 0`, `w = 1` is `−m`.
fn predict<T: Term>(theta: &[f64], x: &[&[f64]]) -> Vec<f64> {
    let points = x.first().map_or(0, |x| x.len());
    let mut values = x.concat();
    values.resize((x.len() + 1) * points, 0.0);
    values.resize((x.len() + 2) * points, 1.0);
    let data = Data::new(&values, points);
    (0..points)
        .map(|k| -term_value::<T>(k, theta, data))
        .collect()
}

/// Loads residual term `T`'s sum of squares with `p` parameters, starting from ones as
/// `curve_fit` does.
fn setup<T: ResidualKernels + 'static>(
    backend: &Backend,
    p: usize,
    values: Stored,
    rows: usize,
    data_type: DataType,
) -> Result<Instance, LoadError> {
    let problem =
        TermProblem::<SumOfSquares<T>>::with_columns(p, values, rows)?.stored_as(data_type)?;
    load_least_squares(backend, problem, vec![1.0; p], None)
}

/// Parameter `j`'s name from a model's list of them; `θj` past its end.
fn listed(names: &[&str], j: usize) -> String {
    names
        .get(j)
        .map_or_else(|| format!("θ{j}"), |name| (*name).to_owned())
}

/// Whether term `T` takes `p` parameters on `data`: its window's rule, then its own.
fn check<T: Term>(p: usize, data: Data<'_>) -> Result<(), &'static str> {
    T::WINDOW.check(p)?;
    T::check(p, data)
}

/// Every built-in model, in `cudamin fit --help` order.
pub static MODELS: &[Model] = &[
    Model::of::<ExpSin>(
        "expsin",
        "θ0·exp(−θ1·x) + Σ_{k=2}^{p−1} θk·sin(k·x)",
        "p >= 2",
        16,
    )
    .batched(&fit::expsin::FIT_EXPSIN_BATCH),
    Model::of::<Poly>("poly", "Σ_{k<p} θk·x^k (degree p − 1)", "p >= 1", 3)
        .batched(&fit::poly::FIT_POLY_BATCH),
    Model::of::<ExpDecay>(
        "exp-decay",
        "Σ_i a_i·exp(−b_i·x), θ = (a0, b0, a1, b1, ...)",
        "p = 2K for K exponentials",
        2,
    )
    // Decay rates: a negative one is a growing exponential, which overflows.
    .natural_lower(|p| zero_below(p, |j| j % 2 == 1))
    .named(|j| format!("{}{}", ["a", "b"][j % 2], j / 2))
    .batched(&fit::exp_decay::FIT_EXP_DECAY_BATCH)
    .batched_poisson(&fit::exp_decay::FIT_EXP_DECAY_POISSON_BATCH),
    Model::of::<GaussPeaks>(
        "gauss-peaks",
        "c + Σ_i a_i·exp(−(x − mu_i)²/(2·s_i²)), θ = (c, a0, mu0, s0, a1, ...)",
        "p = 3K + 1 for K peaks",
        4,
    )
    // Widths: the model reads s², so a negative width is its positive twin.
    .natural_lower(|p| zero_below(p, |j| j > 0 && j % 3 == 0))
    .named(|j| match j {
        0 => "c".to_owned(),
        j => format!("{}{}", ["a", "mu", "s"][(j - 1) % 3], (j - 1) / 3),
    })
    .batched(&fit::gauss_peaks::FIT_GAUSS_PEAKS_BATCH),
    Model::of::<Linear>(
        "linear",
        "θ0 + Σ_{j=1}^{k} θj·x_j for k predictors (--x given k times)",
        "p = k + 1",
        2,
    )
    .params_from_predictors(|k| k + 1)
    .batched(&fit::linear::FIT_LINEAR_BATCH),
    Model::of::<Gauss2d>(
        "gauss-2d",
        "a·exp(−((x − x0)² + (y − y0)²)/(2·s²)) + b on predictors x, y (Gpufit's order)",
        "p = 5",
        5,
    )
    // The width: the model reads s², so a negative one is its positive twin.
    .natural_lower(|p| zero_below(p, |j| j == 3))
    .named(|j| listed(&["a", "x0", "y0", "s", "b"], j))
    .batched(&fit::gauss_2d::FIT_GAUSS_2D_BATCH)
    .batched_poisson(&fit::gauss_2d::FIT_GAUSS_2D_POISSON_BATCH),
    Model::of::<Gauss2dElliptic>(
        "gauss-2d-elliptic",
        "a·exp(−(x − x0)²/(2·sx²) − (y − y0)²/(2·sy²)) + b on predictors x, y (Gpufit's order)",
        "p = 6",
        6,
    )
    // The widths: the model reads their squares.
    .natural_lower(|p| zero_below(p, |j| j == 3 || j == 4))
    .named(|j| listed(&["a", "x0", "y0", "sx", "sy", "b"], j))
    .batched(&fit::gauss_2d::FIT_GAUSS_2D_ELLIPTIC_BATCH)
    .batched_poisson(&fit::gauss_2d::FIT_GAUSS_2D_ELLIPTIC_POISSON_BATCH),
    Model::of::<Lorentzian>(
        "lorentzian",
        "a·g²/((x − x0)² + g²) + b, g the half width at half maximum",
        "p = 4",
        4,
    )
    // The half width: the model reads g², so a negative one is its positive twin.
    .natural_lower(|p| zero_below(p, |j| j == 2))
    .named(|j| listed(&["a", "x0", "g", "b"], j))
    .batched(&fit::lorentzian::FIT_LORENTZIAN_BATCH)
    .batched_poisson(&fit::lorentzian::FIT_LORENTZIAN_POISSON_BATCH),
];

/// The model called `name`.
pub fn find_model(name: &str) -> Result<&'static Model, FitError> {
    MODELS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| FitError::UnknownModel {
            name: name.to_owned(),
            known: MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        })
}

impl Model {
    /// Residual term `T` as a model: built-in, or of your own. `T` reads the fit layout, one
    /// row per point with the columns `x`, `y` and `w = 1/σ` (1 without `sigma`), and returns
    /// the weighted residual `w·(y − m(θ, x))`; `name`, `formula` and `params_rule` are what
    /// listings show, and `default_params` the parameter count when none is asked for.
    pub const fn of<T: ResidualKernels + 'static>(
        name: &'static str,
        formula: &'static str,
        params_rule: &'static str,
        default_params: usize,
    ) -> Model {
        Model {
            name,
            formula,
            params_rule,
            default_params,
            natural_lower: None,
            parameter_name: None,
            per_predictors: None,
            setup: setup::<T>,
            term: T::NAME,
            check: check::<T>,
            batch: None,
            poisson_batch: None,
            launches: residual_launches::<T>,
            predict: predict::<T>,
        }
    }

    /// The model whose small fits run many at once on `kernel`, one per thread, on either
    /// backend: `gpu_kernels::batch_kernel!` registers it, named after the model's term.
    ///
    /// # Panics
    /// Where `kernel` is another term's (its name is not the term's registered name then
    /// `_batch`): at compile time where the model is a `static`, as models are.
    pub const fn batched(self, kernel: &'static RawKernel) -> Model {
        assert!(
            batch::is_named(kernel.name, self.term, batch::SUFFIX),
            "a model's batch kernel is its own term's: named after the term's registration, then `_batch`"
        );
        Model {
            batch: Some(kernel),
            ..self
        }
    }

    /// The model whose small Poisson fits run many at once on `kernel` (see
    /// [`batched`](Model::batched)), named after the term's registration then
    /// `_poisson_batch`.
    ///
    /// # Panics
    /// As [`batched`](Model::batched).
    pub const fn batched_poisson(self, kernel: &'static RawKernel) -> Model {
        assert!(
            batch::is_named(kernel.name, self.term, batch::POISSON_SUFFIX),
            "a model's Poisson batch kernel is its own term's: named after the term's registration, then `_poisson_batch`"
        );
        Model {
            poisson_batch: Some(kernel),
            ..self
        }
    }

    /// Whether the model's small fits take Poisson maximum likelihood (it has a Poisson batch
    /// kernel).
    pub fn takes_poisson(&self) -> bool {
        self.poisson_batch.is_some()
    }

    /// The model with natural lower bounds: `lower(p)` gives one per parameter (`-inf` for
    /// none).
    pub const fn natural_lower(self, lower: fn(usize) -> Vec<f64>) -> Model {
        Model {
            natural_lower: Some(lower),
            ..self
        }
    }

    /// The model with named parameters: `name(j)` is parameter `j`'s (unique, not a number,
    /// and given for any `j`: it is asked before the parameter count is checked), by which
    /// `cudamin fit --fix` and `curve_fit(fixed=…)` take it and the fit's report shows it.
    pub const fn named(self, name: fn(usize) -> String) -> Model {
        Model {
            parameter_name: Some(name),
            ..self
        }
    }

    /// The model whose parameter count follows its `k` predictors: `params(k)` when none is
    /// asked for.
    pub const fn params_from_predictors(self, params: fn(usize) -> usize) -> Model {
        Model {
            per_predictors: Some(params),
            ..self
        }
    }

    /// The parameter count `p` when none is asked for, on data of `k` predictors.
    pub fn params_for(&self, k: usize) -> usize {
        self.per_predictors
            .map_or(self.default_params, |params| params(k))
    }

    /// Parameter `j`'s name: the model's own, else `θj`.
    pub fn parameter_name(&self, j: usize) -> String {
        self.parameter_name
            .map_or_else(|| format!("θ{j}"), |name| name(j))
    }

    /// The names of the model's `p` parameters, where it names them (`None`: by index alone).
    pub fn parameter_names(&self, p: usize) -> Option<Vec<String>> {
        (self.parameter_name).map(|name| (0..p).map(name).collect())
    }

    /// The natural bounds of the model with `p` parameters: lower bounds where a parameter is a
    /// rate or a width, none above. `None` for a model without any.
    pub fn natural_bounds(&self, p: usize) -> Option<Bounds> {
        self.natural_lower.map(|lower| Bounds {
            lower: lower(p),
            upper: vec![f64::INFINITY; p],
        })
    }

    /// Sets the fit up with `params` parameters (default
    /// [`params_for`](Model::params_for) one predictor) on `backend`, from `p0` (default all
    /// ones, as `curve_fit`).
    pub fn instantiate(
        &self,
        backend: &Backend,
        params: Option<usize>,
        data: &FitData,
        p0: Option<Vec<f64>>,
    ) -> Result<Instance, FitError> {
        self.instantiate_shard(backend, params, data, p0, (data.x.len(), 0))
    }

    /// As [`instantiate`](Model::instantiate), for a shard and a fit that holds some
    /// parameters: `data` holds some rows of a data set of `total_points`, against which the
    /// count of free parameters, all but `held`, is checked ([`check_determined`]).
    pub fn instantiate_shard(
        &self,
        backend: &Backend,
        params: Option<usize>,
        data: &FitData,
        p0: Option<Vec<f64>>,
        (total_points, held): (usize, usize),
    ) -> Result<Instance, FitError> {
        let columns = Columns {
            x: &[&data.x],
            y: &data.y,
            sigma: data.sigma.as_deref(),
            data_type: DataType::F64,
        };
        self.instantiate_columns(backend, params, columns, p0, (total_points, held))
    }

    /// The model's batch kernel ([`batched`](Model::batched)), or with `poisson` its Poisson
    /// one, after its term's check of `p` parameters on `data`, the shape of one fit's table in
    /// the fit layout (the predictors, `y`, `w`): the error is the model's refusal, which every
    /// fit of a batch shares.
    pub fn batch_kernel(
        &self,
        p: usize,
        data: Data<'_>,
        poisson: bool,
    ) -> Result<Option<&'static RawKernel>, FitError> {
        (self.check)(p, data).map_err(|reason| FitError::Params {
            model: self.name,
            params: p,
            reason: Cow::Borrowed(reason),
        })?;
        Ok(if poisson {
            self.poisson_batch
        } else {
            self.batch
        })
    }

    /// As [`instantiate_shard`](Model::instantiate_shard), from borrowed columns (a caller's
    /// arrays, read where they lie): they are packed once into the terms' layout.
    pub fn instantiate_columns(
        &self,
        backend: &Backend,
        params: Option<usize>,
        data: Columns<'_>,
        p0: Option<Vec<f64>>,
        (total_points, held): (usize, usize),
    ) -> Result<Instance, FitError> {
        let p = params.unwrap_or_else(|| self.params_for(data.x.len()));
        let points = lengths(
            data.x.iter().map(|x| x.len()),
            data.y.len(),
            data.sigma.map(<[f64]>::len),
        )?;
        check_determined(total_points, p, held)?;
        // The predictors, y and w.
        let columns = data.x.len() + 2;
        let len = points.checked_mul(columns);
        let mut values =
            (len.and_then(cudamin_host::plumbing::try_zeros)).ok_or(LoadError::TooLarge {
                n: p,
                points,
                bytes: len.and_then(|len| len.checked_mul(size_of::<f64>())),
            })?;
        values.clear();
        for x in data.x {
            values.extend_from_slice(x);
        }
        values.extend_from_slice(data.y);
        match data.sigma {
            None => values.resize(columns * points, 1.0),
            Some(sigma) => {
                for (index, &value) in sigma.iter().enumerate() {
                    if !sigma_ok(value) {
                        return Err(FitError::Sigma { index, value });
                    }
                    values.push(1.0 / value);
                }
            }
        }
        self.set_up(backend, p, Stored::F64(values), points, data.data_type, p0)
    }

    /// The model's problem with `p` parameters on `values`, the fit's table of `points` rows,
    /// loaded on `backend`, starting from `p0` where given.
    fn set_up(
        &self,
        backend: &Backend,
        p: usize,
        values: Stored,
        points: usize,
        data_type: DataType,
        p0: Option<Vec<f64>>,
    ) -> Result<Instance, FitError> {
        // The term names itself (`fit_exp_decay`) and its variables `n`: the fit's words are
        // the model's name and its parameters.
        let mut instance =
            (self.setup)(backend, p, values, points, data_type).map_err(|error| match error {
                LoadError::Problem(ProblemError::InvalidN { reason, .. }) => FitError::Params {
                    model: self.name,
                    params: p,
                    reason,
                },
                LoadError::Problem(error) => LoadError::Problem(error.named(self.name)).into(),
                other => other.into(),
            })?;
        if let Some(p0) = p0 {
            if p0.len() != p {
                return Err(FitError::StartLength {
                    got: p0.len(),
                    params: p,
                });
            }
            instance.x0 = p0;
        }
        Ok(instance)
    }

    /// The model `m(θ, x)` at the points of the predictors `x` (one column each), computed on
    /// the CPU (for plots and `fvec`).
    pub fn predict(&self, theta: &[f64], x: &[&[f64]]) -> Vec<f64> {
        (self.predict)(theta, x)
    }

    /// Every kernel launch the model makes on the GPU, for the PTX signature test.
    pub fn launches(&self) -> Vec<Launch> {
        (self.launches)()
    }
}

/// Whether `σ` is a standard deviation a fit takes: positive and finite. The `WEIGHTS` kernel
/// keeps the same rule on the device.
fn sigma_ok(sigma: f64) -> bool {
    sigma > 0.0 && sigma.is_finite()
}

/// The number of points of a fit whose predictors, `y` and `σ` have these lengths; an error
/// unless all are one.
fn lengths(
    mut x: impl Iterator<Item = usize>,
    y: usize,
    sigma: Option<usize>,
) -> Result<usize, FitError> {
    let points = x.next().unwrap_or(0);
    if let Some((index, len)) = x.enumerate().find(|&(_, len)| len != points) {
        return Err(FitError::Predictors {
            points,
            index: index + 1,
            len,
        });
    }
    if y != points || sigma.is_some_and(|len| len != points) {
        return Err(FitError::Lengths {
            x: points,
            y,
            sigma,
        });
    }
    Ok(points)
}
