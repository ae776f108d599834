//! `curve_fit_batch` for Python: one of the catalog's models fitted to each of `F` data sets at
//! once, on the CPU's cores or the GPU (a thread or a block per fit), the results returned as
//! flat arrays that the Python half shapes.

use crate::Catalog;
use crate::args;
use crate::catalog::Place;
use crate::errors::Failure;
use cudamin::Bounds;
use cudamin::problems::fit_batch::{Batch, Estimator, Points, Precision, fit_batch_on};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::borrow::Cow;
use std::collections::HashMap;

/// What every fit of a batch shares: tolerances, the evaluation limit, a box, held parameters.
pub(crate) struct Limits {
    pub ftol: Option<f64>,
    pub xtol: Option<f64>,
    pub gtol: Option<f64>,
    pub max_nfev: Option<usize>,
    /// The box every fit keeps to.
    pub bounds: Option<Bounds>,
    /// The parameters every fit holds at its start.
    pub fixed: Option<Vec<bool>>,
    /// Where the fits run.
    pub backend: Place,
    /// Whether they compute in single precision.
    pub single: bool,
    /// Whether they are Poisson maximum-likelihood fits.
    pub poisson: bool,
}

/// Fits `model` with `p0`'s parameter count (`p` for all fits, or `F·p`, given `F`) to each
/// `points`-row slice of `ydata` at `xdata` (columns of `points` values, shared, or `F·points`),
/// or with `offsets` (`F + 1`, rising from 0 to `N`) to each slice they mark, `xdata` then a
/// value per point.
#[allow(clippy::too_many_arguments)] // the Python call's keywords
pub(crate) fn curve_fit_batch<'py>(
    catalog: &Catalog,
    py: Python<'py>,
    model: &str,
    (xdata, ydata, sigma): (
        Vec<PyReadonlyArray1<'py, f64>>,
        PyReadonlyArray1<'py, f64>,
        Option<PyReadonlyArray1<'py, f64>>,
    ),
    (points, offsets): (usize, Option<Vec<usize>>),
    (p0, params): (PyReadonlyArray1<'py, f64>, usize),
    absolute_sigma: bool,
    limits: Limits,
) -> PyResult<Bound<'py, PyDict>> {
    let model = catalog.model(model)?;
    let x = (xdata.iter())
        .map(|x| args::slice("xdata", x))
        .collect::<Result<Vec<_>, _>>()?;
    let batch = Batch {
        x: &x,
        y: args::slice("ydata", &ydata)?,
        sigma: sigma
            .as_ref()
            .map(|s| args::slice("sigma", s))
            .transpose()?,
        points: match &offsets {
            Some(offsets) => Points::Ragged(offsets),
            None => Points::Each(points),
        },
        p0: args::slice("p0", &p0)?,
        precision: match limits.single {
            true => Precision::F32,
            false => Precision::F64,
        },
        estimator: match limits.poisson {
            true => Estimator::Poisson,
            false => Estimator::LeastSquares,
        },
    };
    let Limits {
        ftol,
        xtol,
        gtol,
        max_nfev,
        bounds,
        fixed,
        backend,
        single: _,
        poisson: _,
    } = limits;
    let (backend, _) = catalog.open(backend)?;
    let plain = (None, None);
    let options = args::lm_options(
        ftol, xtol, gtol, max_nfev, "linear", 1.0, fixed, bounds, plain,
    )?;
    let fitted =
        py.detach(|| fit_batch_on(&backend, model, params, batch, &options, absolute_sigma));
    let result = fitted.map_err(Failure::from)?;
    let out = PyDict::new(py);
    out.set_item("popt", PyArray1::from_vec(py, result.popt))?;
    out.set_item("pcov", PyArray1::from_vec(py, result.pcov))?;
    out.set_item("status", PyArray1::from_vec(py, result.status))?;
    out.set_item("message", messages(py, &result.message)?)?;
    out.set_item("nfev", PyArray1::from_vec(py, result.nfev))?;
    out.set_item("cost", PyArray1::from_vec(py, result.cost))?;
    Ok(out)
}

/// Each fit's message as a Python list: a status's message is one string object, shared by
/// every fit that ended so; only a fit's own reason is a string of its own.
fn messages<'py>(py: Python<'py>, messages: &[Cow<'static, str>]) -> PyResult<Bound<'py, PyList>> {
    let mut shared: HashMap<&'static str, Bound<'py, PyString>> = HashMap::new();
    let items = messages.iter().map(|message| match message {
        Cow::Borrowed(text) => (shared.entry(text))
            .or_insert_with(|| PyString::new(py, text))
            .clone(),
        Cow::Owned(text) => PyString::new(py, text),
    });
    PyList::new(py, items)
}
