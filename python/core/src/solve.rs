//! What a [`Catalog`] does for Python: one of its problems minimized (`minimize`), solved as
//! least squares (`least_squares`), or one of its models fitted to arrays (`curve_fit`).
//! Each converts its arguments, solves with the GIL released, and returns scipy's fields in a
//! dict, with cudamin's extras (`backend`, `backend_reason`, `jac_error`, `method`).

use crate::Catalog;
use crate::args;
use crate::columns::FitColumns;
use crate::device::{DeviceArray, Start};
use crate::errors::Failure;
use crate::named::Named;
use crate::observe::Observer;
use crate::pairs;
use crate::session::Session;
use cudamin::Bounds;
use cudamin::problems::Solvable;
use cudamin::{BackendChoice, DeviceSolution, Options};
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What every solve reports beside its result: where it ran and why.
struct Ran<R> {
    result: R,
    backend: &'static str,
    backend_reason: String,
    /// With bounds, scipy's `active_mask`: the solver's own (trf's, within its tolerance), or
    /// for `minimize` which bound each variable is at.
    active_mask: Option<Vec<i32>>,
}

/// Runs `solve` with the GIL released, watched by `observer`; an exception the observer
/// caught (Ctrl-C, the callback's) wins over the solve's own result.
fn detached<R: Send>(
    py: Python<'_>,
    observer: &mut Observer,
    solve: impl FnOnce(&mut Observer) -> Result<R, Failure> + Send,
) -> Result<R, Failure> {
    let outcome = py.detach(|| solve(observer));
    match observer.raised.take() {
        Some(raised) => Err(Failure::Python(raised)),
        None => outcome,
    }
}

/// `values` as a 1-D numpy array.
fn array<'py, T: numpy::Element + Copy>(py: Python<'py>, values: &[T]) -> Bound<'py, PyArray1<T>> {
    PyArray1::from_slice(py, values)
}

/// The fields every result has: where it ran, and with bounds, which are active. `x` becomes
/// the array's memory, not copied: at n = 10⁶ a copy is 8 MB of fresh pages to fault in.
fn common<'py, R>(py: Python<'py>, ran: &Ran<R>, x: Vec<f64>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("x", PyArray1::from_vec(py, x))?;
    out.set_item("backend", ran.backend)?;
    out.set_item("backend_reason", &ran.backend_reason)?;
    if let Some(mask) = &ran.active_mask {
        out.set_item("active_mask", array(py, mask))?;
    }
    Ok(out)
}

/// The fields of scipy's `least_squares` result that cudamin has (never `fun` or `jac`: the
/// residuals and `J` are reduced to `R` as they are computed, and never stored).
fn least_squares_fields(out: &Bound<'_, PyDict>, r: &cudamin::LeastSquaresResult) -> PyResult<()> {
    let py = out.py();
    out.set_item("cost", r.cost)?;
    out.set_item("grad", array(py, &r.grad))?;
    out.set_item("optimality", r.optimality)?;
    out.set_item("nfev", r.nfev)?;
    out.set_item("njev", r.njev)?;
    out.set_item("nit", r.nit)?;
    out.set_item("status", r.status.code())?;
    out.set_item("success", r.success)?;
    out.set_item("message", &r.message)?;
    out.set_item("method", if r.active_mask.is_some() { "trf" } else { "lm" })?;
    Ok(())
}

#[pymethods]
impl Catalog {
    /// A session of its own on backend `backend` (`"auto"`, `"cpu"`, `"cuda"` or `"sim"`),
    /// which calls name as their `backend`.
    fn session(&self, backend: &str) -> PyResult<Session> {
        Ok(Session::open(self.ptx(), args::backend(backend)?)?)
    }

    /// The version of the calls this catalog answers ([`crate::INTERFACE`]).
    #[getter]
    fn interface(&self) -> u32 {
        crate::INTERFACE
    }

    /// The problems, as dicts (name, title, the rule for `n` and its default, the default
    /// number of data points).
    fn problems<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.list_problems(py)
    }

    /// The models, as dicts (name, formula, the rule for the parameter count and its default).
    fn models<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.list_models(py)
    }

    /// The names of model `model`'s `p` parameters, where it names them (`None`: by index
    /// alone), for `curve_fit`'s `fixed`.
    fn parameter_names(&self, model: &str, p: usize) -> PyResult<Option<Vec<String>>> {
        Ok(self.model(model)?.parameter_names(p))
    }

    /// Model `model`'s parameter count when none is asked for, on data of `k` predictors.
    fn default_params(&self, model: &str, k: usize) -> PyResult<usize> {
        Ok(self.model(model)?.params_for(k))
    }

    /// Minimizes problem `problem` with BFGS, L-BFGS or L-BFGS-B: scipy's `minimize`.
    #[pyo3(signature = (problem, x0=None, *, n=None, points=None, data=None, method="bfgs", jac="exact",
    lower=None, upper=None, fixed=None, gtol=None, ftol=None, maxiter=None, maxfun=None,
    maxls=None, maxcor=None, return_hess_inv=None, backend=None, callback=None,
    keep_on_device=false))]
    #[allow(clippy::too_many_arguments)] // scipy's signature, keyword-only
    fn minimize<'py>(
        &self,
        py: Python<'py>,
        problem: &str,
        x0: Option<Bound<'py, PyAny>>,
        n: Option<usize>,
        points: Option<usize>,
        data: Option<Vec<PyReadonlyArray1<'py, f64>>>,
        method: &str,
        jac: &str,
        lower: Option<PyReadonlyArray1<'py, f64>>,
        upper: Option<PyReadonlyArray1<'py, f64>>,
        fixed: Option<Vec<usize>>,
        gtol: Option<f64>,
        ftol: Option<f64>,
        maxiter: Option<usize>,
        maxfun: Option<usize>,
        maxls: Option<usize>,
        maxcor: Option<usize>,
        return_hess_inv: Option<bool>,
        backend: Option<Bound<'py, PyAny>>,
        callback: Option<Py<PyAny>>,
        keep_on_device: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let method = args::method(method)?;
        let named = Named::read(
            self,
            problem,
            x0.as_ref(),
            n,
            points,
            data.as_deref().unwrap_or(&[]),
            jac,
            backend.as_ref(),
        )?;
        let (lower, upper) = (args::owned("lower", lower)?, args::owned("upper", upper)?);
        let mut observer = Observer::new(callback);
        let mut ran = detached(py, &mut observer, |observer| {
            let (mut solvable, x0, backend, backend_reason) = named.load(self)?;
            let n = x0.len();
            let defaults = Options::default();
            let options = Options {
                gtol: gtol.unwrap_or(defaults.gtol),
                ftol: ftol.unwrap_or(defaults.ftol),
                maxiter,
                maxfun,
                maxls: maxls.unwrap_or(defaults.maxls),
                memory: maxcor.unwrap_or(defaults.memory),
                return_hess_inv: return_hess_inv
                    .unwrap_or_else(|| args::hess_inv_by_default(method, n)),
                bounds: args::bounds(lower, upper, n)?,
                fixed: args::fixed(fixed, n)?,
                keep_on_device,
                ..defaults
            };
            let objective = solvable.objective();
            let mut see = |iterate: &cudamin::Iterate<'_>| observer.see(iterate);
            let mut result = match &x0 {
                Start::Host(x0) => {
                    cudamin::minimize_with_observer(objective, x0, method, &options, &mut see)?
                }
                Start::Device(x0) => {
                    cudamin::minimize_from_device(objective, x0, method, &options, &mut see)?
                }
            };
            let active_mask = (options.bounds.as_ref())
                .filter(|_| result.on_device.is_none())
                .map(|b| b.active_mask(&result.x, options.fixed.as_deref()));
            // A solve whose vectors were on the host hands its solution to the device here.
            if keep_on_device && result.on_device.is_none() && backend.device_summary().is_some() {
                result.on_device = Some(DeviceSolution {
                    x: backend.to_device(&std::mem::take(&mut result.x))?,
                    jac: backend.to_device(&std::mem::take(&mut result.jac))?,
                    active_mask: None,
                });
            }
            Ok(Ran {
                backend: backend.name(),
                backend_reason,
                active_mask,
                result,
            })
        })?;
        let r = &mut ran.result;
        let (x, jac) = (std::mem::take(&mut r.x), std::mem::take(&mut r.jac));
        let (hess_inv, on_device) = (r.hess_inv.take(), r.on_device.take());
        let pairs = (r.hess_inv_pairs.take(), r.hess_inv_pairs_on_device.take());
        let out = common(py, &ran, x)?;
        let r = &ran.result;
        out.set_item("fun", r.fun)?;
        out.set_item("jac", PyArray1::from_vec(py, jac))?;
        if let Some(kept) = on_device {
            out.set_item("x", DeviceArray { array: kept.x })?;
            out.set_item("jac", DeviceArray { array: kept.jac })?;
            if let Some(mask) = kept.active_mask {
                out.set_item("active_mask", DeviceArray { array: mask })?;
            }
        }
        out.set_item("nit", r.nit)?;
        out.set_item("nfev", r.nfev)?;
        out.set_item("njev", r.njev)?;
        out.set_item("status", r.status.code())?;
        out.set_item("success", r.success)?;
        out.set_item("message", &r.message)?;
        out.set_item("method", method.name())?;
        let jac_error = (r.jac_error.as_ref())
            .map(|e| -> PyResult<_> {
                let error = PyDict::new(py);
                error.set_item("estimate", e.estimate)?;
                error.set_item("reference", e.reference.name())?;
                Ok(error)
            })
            .transpose()?;
        out.set_item("jac_error", jac_error)?;
        if let Some(pairs) = pairs::for_python(py, pairs)? {
            out.set_item("hess_inv_pairs", pairs)?;
        }
        if let Some(h) = hess_inv {
            out.set_item("hess_inv", h.into_pyarray(py))?;
        }
        Ok(out)
    }

    /// Solves sum-of-squares problem `problem` (the built-in `mgh-*` problems) by
    /// Levenberg–Marquardt, or trust-region reflective within bounds: scipy's `least_squares`.
    #[pyo3(signature = (problem, x0=None, *, n=None, points=None, data=None, jac="exact", lower=None,
    upper=None, fixed=None, ftol=None, xtol=None, gtol=None, max_nfev=None, loss="linear",
    f_scale=1.0, method=None, x_scale=None, x_scale_jac=false, backend=None, callback=None))]
    #[allow(clippy::too_many_arguments)] // scipy's signature, keyword-only
    fn least_squares<'py>(
        &self,
        py: Python<'py>,
        problem: &str,
        x0: Option<Bound<'py, PyAny>>,
        n: Option<usize>,
        points: Option<usize>,
        data: Option<Vec<PyReadonlyArray1<'py, f64>>>,
        jac: &str,
        lower: Option<PyReadonlyArray1<'py, f64>>,
        upper: Option<PyReadonlyArray1<'py, f64>>,
        fixed: Option<Vec<usize>>,
        ftol: Option<f64>,
        xtol: Option<f64>,
        gtol: Option<f64>,
        max_nfev: Option<usize>,
        loss: &str,
        f_scale: f64,
        method: Option<&str>,
        x_scale: Option<PyReadonlyArray1<'py, f64>>,
        x_scale_jac: bool,
        backend: Option<Bound<'py, PyAny>>,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let named = Named::read(
            self,
            problem,
            x0.as_ref(),
            n,
            points,
            data.as_deref().unwrap_or(&[]),
            jac,
            backend.as_ref(),
        )?;
        let name = named.source.name();
        let (lower, upper) = (args::owned("lower", lower)?, args::owned("upper", upper)?);
        let choice = args::lsq_method(method, x_scale_jac, x_scale)?;
        let mut observer = Observer::new(callback);
        let mut ran = detached(py, &mut observer, |observer| {
            let (mut solvable, x0, backend, backend_reason) = named.load(self)?;
            let x0 = x0.into_host()?;
            let bounds = args::bounds(lower, upper, x0.len())?;
            let fixed = args::fixed(fixed, x0.len())?;
            let options = args::lm_options(
                ftol, xtol, gtol, max_nfev, loss, f_scale, fixed, bounds, choice,
            )?;
            let Some(residuals) = solvable.least_squares() else {
                return Err(Failure::Input(format!(
                    "{name} is not a sum of squares loaded with its residuals: least_squares takes those (cudamin's mgh-* problems, a module's OnData::squares), minimize every problem"
                )));
            };
            let result =
                cudamin::least_squares_with_observer(residuals, &x0, &options, &mut |iterate| {
                    observer.see(iterate)
                })?;
            Ok(Ran {
                backend: backend.name(),
                backend_reason,
                active_mask: result.active_mask.clone(),
                result,
            })
        })?;
        let x = std::mem::take(&mut ran.result.x);
        let out = common(py, &ran, x)?;
        least_squares_fields(&out, &ran.result)?;
        Ok(out)
    }

    /// Fits model `model` to each of `F` data sets of `points` rows at once, on the CPU's
    /// cores: `ydata` is `F·points`, each column of `xdata` `points` (shared) or `F·points`,
    /// `p0` `params` values (for all) or `F·params`; with `offsets` (`F + 1`), fit `f` has the
    /// rows `offsets[f] .. offsets[f + 1]` instead, `points` unread. `single` computes in `f32`,
    /// `poisson` fits counts by maximum likelihood. Flat arrays: `popt`, `pcov`, `status`,
    /// `nfev`, `cost`, and a `message` per fit.
    #[pyo3(signature = (model, xdata, ydata, points, p0, params, *, sigma=None,
    absolute_sigma=false, lower=None, upper=None, fixed=None, ftol=None, xtol=None, gtol=None,
    max_nfev=None, backend=None, single=false, poisson=false, offsets=None))]
    #[allow(clippy::too_many_arguments)] // curve_fit's keywords
    fn curve_fit_batch<'py>(
        &self,
        py: Python<'py>,
        model: &str,
        xdata: Vec<PyReadonlyArray1<'py, f64>>,
        ydata: PyReadonlyArray1<'py, f64>,
        points: usize,
        p0: PyReadonlyArray1<'py, f64>,
        params: usize,
        sigma: Option<PyReadonlyArray1<'py, f64>>,
        absolute_sigma: bool,
        lower: Option<PyReadonlyArray1<'py, f64>>,
        upper: Option<PyReadonlyArray1<'py, f64>>,
        fixed: Option<Vec<usize>>,
        ftol: Option<f64>,
        xtol: Option<f64>,
        gtol: Option<f64>,
        max_nfev: Option<usize>,
        backend: Option<Bound<'py, PyAny>>,
        single: bool,
        poisson: bool,
        offsets: Option<Vec<usize>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (lower, upper) = (args::owned("lower", lower)?, args::owned("upper", upper)?);
        let limits = crate::batch::Limits {
            ftol,
            xtol,
            gtol,
            max_nfev,
            bounds: args::bounds(lower, upper, params)?,
            fixed: args::fixed(fixed, params)?,
            backend: self.place(backend.as_ref(), BackendChoice::Cpu)?,
            single,
            poisson,
        };
        let data = (xdata, ydata, sigma);
        let starts = (p0, params);
        crate::batch::curve_fit_batch(
            self,
            py,
            model,
            data,
            (points, offsets),
            starts,
            absolute_sigma,
            limits,
        )
    }

    /// Fits model `model` to `ydata` at `xdata`: scipy's `curve_fit`, with the fields of
    /// its `full_output` and the covariance `pcov` (`None` where it cannot be estimated).
    #[pyo3(signature = (model, xdata, ydata, *, p0=None, sigma=None, absolute_sigma=false,
    lower=None, upper=None, natural_bounds=false, jac="exact", fixed=None, ftol=None, xtol=None,
    gtol=None, max_nfev=None, loss="linear", f_scale=1.0, method=None, x_scale=None, x_scale_jac=false,
    full_output=false, backend=None,
    callback=None, data_dtype="f64"))]
    #[allow(clippy::too_many_arguments)] // curve_fit's signature, keyword-only
    fn curve_fit<'py>(
        &self,
        py: Python<'py>,
        model: &str,
        xdata: Vec<Bound<'py, PyAny>>,
        ydata: Bound<'py, PyAny>,
        p0: Option<PyReadonlyArray1<'py, f64>>,
        sigma: Option<Bound<'py, PyAny>>,
        absolute_sigma: bool,
        lower: Option<PyReadonlyArray1<'py, f64>>,
        upper: Option<PyReadonlyArray1<'py, f64>>,
        natural_bounds: bool,
        jac: &str,
        fixed: Option<Vec<usize>>,
        ftol: Option<f64>,
        xtol: Option<f64>,
        gtol: Option<f64>,
        max_nfev: Option<usize>,
        loss: &str,
        f_scale: f64,
        method: Option<&str>,
        x_scale: Option<PyReadonlyArray1<'py, f64>>,
        x_scale_jac: bool,
        full_output: bool,
        backend: Option<Bound<'py, PyAny>>,
        callback: Option<Py<PyAny>>,
        data_dtype: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let model = self.model(model)?;
        let gradient = args::gradient(jac)?;
        let data_type = args::data_type(data_dtype)?;
        let place = self.place(backend.as_ref(), BackendChoice::Auto)?;
        let given = FitColumns::read(&xdata, &ydata, sigma.as_ref())?;
        let columns = given.sources()?;
        let p0 = args::owned("p0", p0)?;
        let (lower, upper) = (args::owned("lower", lower)?, args::owned("upper", upper)?);
        let method = args::lsq_method(method, x_scale_jac, x_scale)?;
        // The parameter count: p0's, else the bounds' (as scipy infers it), else the model's.
        let p = [&p0, &lower, &upper]
            .into_iter()
            .find_map(|given| given.as_ref().map(Vec::len))
            .unwrap_or_else(|| model.params_for(columns.predictors()));
        let mut bounds = args::bounds(lower, upper, p)?;
        if bounds.is_none() && natural_bounds {
            bounds = model.natural_bounds(p);
        }
        let fixed = args::fixed(fixed, p)?;
        let held = fixed
            .as_ref()
            .map_or(0, |mask| mask.iter().filter(|&&h| h).count());
        let mut observer = Observer::new(callback);
        let ran = detached(py, &mut observer, |observer| {
            let (backend, backend_reason) = self.open(place)?;
            // curve_fit's start: ones, or inside the bounds when there are some.
            let p0 = p0.or_else(|| bounds.as_ref().map(Bounds::curve_fit_start));
            let instance = columns.instantiate(
                model,
                &backend,
                (p, data_type),
                p0,
                (columns.points(), held),
            )?;
            let options = args::lm_options(
                ftol, xtol, gtol, max_nfev, loss, f_scale, fixed, bounds, method,
            )?;
            let mut solvable = Solvable::new(instance.evaluator, gradient);
            let Some(residuals) = solvable.least_squares() else {
                return Err(Failure::Solve(
                    "a fit model loaded without its residuals".into(),
                ));
            };
            let result = cudamin::least_squares_with_observer(
                residuals,
                &instance.x0,
                &options,
                &mut |iterate| observer.see(iterate),
            )?;
            // curve_fit's fvec, while the backend that holds any device columns is open.
            let fvec = (full_output)
                .then(|| columns.fvec(model, &backend, &result.x))
                .transpose()?;
            let ran = Ran {
                backend: backend.name(),
                backend_reason,
                active_mask: result.active_mask.clone(),
                result,
            };
            Ok((ran, fvec))
        })?;
        let (ran, fvec) = ran;
        let r = &ran.result;
        let out = common(py, &ran, r.x.clone())?;
        least_squares_fields(&out, r)?;
        let covariance = r.covariance(absolute_sigma);
        match &covariance {
            Some(c) => {
                out.set_item("pcov", array(py, &c.matrix).reshape([p, p])?)?;
                out.set_item("rank", c.rank)?;
                out.set_item("not_identifiable", c.not_identifiable.clone())?;
            }
            None => out.set_item("pcov", py.None())?,
        }
        if let Some(fvec) = fvec {
            out.set_item("fvec", array(py, &fvec))?;
        }
        Ok(out)
    }
}
