//! A fit's data columns as a call gives them: numpy arrays on the host, or arrays on a device
//! (a session's `DeviceArray`; torch's, CuPy's or JAX's by `__cuda_array_interface__`). Where
//! any lies on a device, a GPU session's fit makes its table there and reads it where it lies.

use crate::args;
use crate::device::{Given, Start};
use crate::errors::Failure;
use cudamin::problems::Instance;
use cudamin::problems::fit::{Columns, DeviceColumns, Model};
use cudamin::{Backend, DataType, DeviceArray};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use std::borrow::Cow;

/// One column as the call gave it.
enum Column<'py> {
    Host(PyReadonlyArray1<'py, f64>),
    Device(Given),
}

impl<'py> Column<'py> {
    /// `value`, named `what` in errors: an array on a device as it lies, else a 1-D float64
    /// array on the host.
    fn read(what: &str, value: &Bound<'py, PyAny>) -> Result<Self, Failure> {
        if let Some(given) = Given::on_device(what, value, true)? {
            return Ok(Column::Device(given));
        }
        value.extract().map(Column::Host).map_err(|_| {
            Failure::Input(format!(
                "{what} must be a 1-D float64 array, on the host or on a CUDA device"
            ))
        })
    }

    fn source(&self, what: &str) -> Result<Source<'_>, Failure> {
        match self {
            Column::Host(array) => args::slice(what, array).map(Source::Host),
            Column::Device(given) => Ok(Source::Device(given)),
        }
    }
}

/// A column where a solve reads it without the GIL.
#[derive(Clone, Copy)]
enum Source<'a> {
    Host(&'a [f64]),
    Device(&'a Given),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Host(values) => values.len(),
            Source::Device(given) => given.len(),
        }
    }

    /// The column on `backend`'s device: where it lies, or uploaded from the host. Another
    /// session's array comes through the host, as a start does.
    fn on(&self, backend: &Backend) -> Result<DeviceArray, Failure> {
        match self {
            Source::Host(values) => Ok(backend.to_device(values)?),
            Source::Device(Given::Start(Start::Device(array))) if backend.holds(array) => {
                Ok(array.clone())
            }
            Source::Device(Given::Start(Start::Device(array))) => {
                Ok(backend.to_device(&array.to_host()?)?)
            }
            Source::Device(Given::Start(Start::Host(values))) => Ok(backend.to_device(values)?),
            Source::Device(Given::Foreign {
                address,
                len,
                stride: 1,
                synchronize,
            }) => Ok(backend.device_array_at(*address, *len, *synchronize)?),
            // A column of a row-major table: the span it lies in, gathered on the device.
            Source::Device(Given::Foreign {
                address,
                len,
                stride,
                synchronize,
            }) => {
                let span = (len.saturating_sub(1))
                    .checked_mul(*stride)
                    .and_then(|end| end.checked_add(1))
                    .ok_or_else(|| {
                        Failure::Input("a strided column past the address space".into())
                    })?;
                let lying = backend.device_array_at(*address, span, *synchronize)?;
                Ok(backend.device_strided(&lying, (0, *stride), *len)?)
            }
        }
    }
}

impl<'a> Source<'a> {
    /// The column on the host: as it lies there, or copied from a device.
    fn to_host(self, backend: &Backend) -> Result<Cow<'a, [f64]>, Failure> {
        match self {
            Source::Host(values) => Ok(Cow::Borrowed(values)),
            Source::Device(Given::Start(Start::Host(values))) => Ok(Cow::Borrowed(values)),
            Source::Device(Given::Start(Start::Device(array))) => Ok(Cow::Owned(array.to_host()?)),
            Source::Device(_) => Ok(Cow::Owned(self.on(backend)?.to_host()?)),
        }
    }
}

/// A fit's columns as the call gave them: the predictors, `ydata` and `sigma`.
pub(crate) struct FitColumns<'py> {
    x: Vec<Column<'py>>,
    y: Column<'py>,
    sigma: Option<Column<'py>>,
}

impl<'py> FitColumns<'py> {
    /// Reads each column: on a device as it lies, else as a float64 array on the host.
    pub(crate) fn read(
        x: &[Bound<'py, PyAny>],
        y: &Bound<'py, PyAny>,
        sigma: Option<&Bound<'py, PyAny>>,
    ) -> Result<Self, Failure> {
        Ok(FitColumns {
            x: (x.iter().enumerate())
                .map(|(i, x)| Column::read(&format!("xdata[{i}]"), x))
                .collect::<Result<_, _>>()?,
            y: Column::read("ydata", y)?,
            sigma: sigma.map(|s| Column::read("sigma", s)).transpose()?,
        })
    }

    /// The columns where a solve reads them.
    pub(crate) fn sources(&self) -> Result<FitSources<'_>, Failure> {
        Ok(FitSources {
            x: (self.x.iter().enumerate())
                .map(|(i, x)| x.source(&format!("xdata[{i}]")))
                .collect::<Result<_, _>>()?,
            y: self.y.source("ydata")?,
            sigma: self.sigma.as_ref().map(|s| s.source("sigma")).transpose()?,
        })
    }
}

/// A fit's columns where a solve reads them, without the GIL.
pub(crate) struct FitSources<'a> {
    x: Vec<Source<'a>>,
    y: Source<'a>,
    sigma: Option<Source<'a>>,
}

impl<'a> FitSources<'a> {
    /// The number of predictors.
    pub(crate) fn predictors(&self) -> usize {
        self.x.len()
    }

    /// The number of points, as `ydata` holds them.
    pub(crate) fn points(&self) -> usize {
        self.y.len()
    }

    /// `model`'s problem with `p` parameters on `backend`: from host columns where all lie
    /// there or the backend is the CPU (which reads a session's device arrays through the
    /// host); else from a table made on `backend`'s device, which reads the device columns
    /// where they lie and receives the host ones.
    pub(crate) fn instantiate(
        &self,
        model: &Model,
        backend: &Backend,
        (p, data_type): (usize, DataType),
        p0: Option<Vec<f64>>,
        (points, held): (usize, usize),
    ) -> Result<Instance, Failure> {
        let on_host = self.all().all(|s| matches!(s, Source::Host(_)));
        if on_host || backend.device_summary().is_none() {
            let (x, y, sigma) = self.to_host(backend)?;
            let x: Vec<&[f64]> = x.iter().map(|x| &**x).collect();
            let columns = Columns {
                x: &x,
                y: &y,
                sigma: sigma.as_deref(),
                data_type,
            };
            return Ok(model.instantiate_columns(backend, Some(p), columns, p0, (points, held))?);
        }
        if data_type == DataType::F32 {
            return Err(Failure::Input(
                "data on a device are read as float64 where they lie: give data_dtype='f64', or \
                 float32 data on the host"
                    .into(),
            ));
        }
        let x = (self.x.iter())
            .map(|x| x.on(backend))
            .collect::<Result<Vec<_>, _>>()?;
        let y = self.y.on(backend)?;
        let sigma = self.sigma.map(|s| s.on(backend)).transpose()?;
        let columns = DeviceColumns {
            x: &x,
            y: &y,
            sigma: sigma.as_ref(),
        };
        Ok(model.instantiate_device(backend, Some(p), columns, p0, (points, held))?)
    }

    /// Every column.
    fn all(&self) -> impl Iterator<Item = Source<'a>> + '_ {
        (self.x.iter().chain([&self.y]).chain(&self.sigma)).copied()
    }

    /// The columns on the host, those on a device copied there.
    #[allow(clippy::type_complexity)] // the predictors, y and σ
    fn to_host(
        &self,
        backend: &Backend,
    ) -> Result<(Vec<Cow<'a, [f64]>>, Cow<'a, [f64]>, Option<Cow<'a, [f64]>>), Failure> {
        let x = (self.x.iter())
            .map(|x| x.to_host(backend))
            .collect::<Result<Vec<_>, _>>()?;
        let sigma = self.sigma.map(|s| s.to_host(backend)).transpose()?;
        Ok((x, self.y.to_host(backend)?, sigma))
    }

    /// `curve_fit`'s `fvec` at `theta`: the weighted residuals `(m(θ, x) − y)/σ`, computed on
    /// the host. Columns on a device come to the host for it.
    pub(crate) fn fvec(
        &self,
        model: &Model,
        backend: &Backend,
        theta: &[f64],
    ) -> Result<Vec<f64>, Failure> {
        let (x, y, sigma) = self.to_host(backend)?;
        let x: Vec<&[f64]> = x.iter().map(|x| &**x).collect();
        let model_values = model.predict(theta, &x);
        Ok((model_values.iter().zip(y.iter()).enumerate())
            .map(|(i, (m, y))| (m - y) / sigma.as_ref().map_or(1.0, |s| s[i]))
            .collect())
    }
}
