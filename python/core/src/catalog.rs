//! What an extension module knows by name: its PTX, its problems (generating their own data,
//! or on the caller's) and its fit models, looked up for a call and listed for `problems()` and
//! `models()`.

use crate::args;
use crate::errors::Failure;
use crate::session::Session;
use cudamin::problems::fit::Model;
use cudamin::problems::{OnData, Problem};
use cudamin::{Backend, BackendChoice, LaunchOverride};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Mutex, PoisonError};

/// One extension module's problems and models, with the PTX their kernels are in. Python sees
/// it as `_native.catalog`, whose methods the package `cudamin` wraps in scipy's signatures.
#[pyclass(frozen, module = "cudamin")]
pub struct Catalog {
    ptx: Result<&'static str, &'static str>,
    problems: Vec<&'static Problem>,
    on_data: &'static [OnData],
    models: &'static [Model],
    /// The backends opened so far, one per choice, with why each was chosen: kept for the
    /// process, so a GPU's context is made and its kernels loaded once, not on every call.
    opened: Mutex<Vec<(BackendChoice, Backend, String)>>,
}

/// Where a call runs: a backend asked for by name, which the catalog opens once and shares,
/// or a session's own.
pub(crate) enum Place {
    Choice(BackendChoice),
    Session(Backend, String),
}

/// A problem as a catalog holds it.
#[derive(Clone, Copy)]
pub(crate) enum Source {
    /// One that makes its own data (cudamin's built-ins).
    Generated(&'static Problem),
    /// One on the caller's data.
    OnData(&'static OnData),
}

impl Source {
    /// The problem's name, as the catalog lists it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Generated(problem) => problem.name,
            Source::OnData(problem) => problem.name,
        }
    }
}

impl Catalog {
    /// A catalog of `problems` (with their own data), problems `on_data` (the caller's) and
    /// `models`, whose kernels are in `ptx` (what `cudamin::include_ptx!` defines).
    pub fn new(
        ptx: Result<&'static str, &'static str>,
        problems: impl IntoIterator<Item = &'static Problem>,
        on_data: &'static [OnData],
        models: &'static [Model],
    ) -> Self {
        Catalog {
            ptx,
            problems: problems.into_iter().collect(),
            on_data,
            models,
            opened: Mutex::default(),
        }
    }

    /// The problem called `name`.
    pub(crate) fn problem(&self, name: &str) -> Result<Source, Failure> {
        let generated = self.problems.iter().find(|p| p.name == name);
        let on_data = self.on_data.iter().find(|p| p.name == name);
        match (generated, on_data) {
            (Some(&problem), _) => Ok(Source::Generated(problem)),
            (None, Some(problem)) => Ok(Source::OnData(problem)),
            (None, None) => {
                let generated = self.problems.iter().map(|p| p.name);
                let names = generated.chain(self.on_data.iter().map(|p| p.name));
                Err(unknown("problem", name, &names.collect::<Vec<_>>()))
            }
        }
    }

    /// The model called `name`.
    pub(crate) fn model(&self, name: &str) -> Result<&'static Model, Failure> {
        let known = || self.models.iter().map(|m| m.name).collect::<Vec<_>>();
        let model = self.models.iter().find(|m| m.name == name);
        model.ok_or_else(|| unknown("model", name, &known()))
    }

    /// The PTX this catalog's kernels are in.
    pub(crate) fn ptx(&self) -> Result<&'static str, &'static str> {
        self.ptx
    }

    /// Where a call with `backend` runs: a session's backend, or the one named; `None` names
    /// `default`.
    pub(crate) fn place(
        &self,
        backend: Option<&Bound<'_, PyAny>>,
        default: BackendChoice,
    ) -> Result<Place, Failure> {
        let Some(backend) = backend else {
            return Ok(Place::Choice(default));
        };
        if let Ok(session) = backend.cast::<Session>() {
            let (backend, why) = session.get().held()?;
            return Ok(Place::Session(backend, why));
        }
        match backend.extract::<String>() {
            Ok(name) => Ok(Place::Choice(args::backend(&name)?)),
            Err(_) => Err(Failure::Input(
                "backend must be 'auto', 'cpu', 'cuda', 'sim' or a Session of this module".into(),
            )),
        }
    }

    /// The backend of `place`, and why it was chosen.
    pub(crate) fn open(&self, place: Place) -> Result<(Backend, String), Failure> {
        match place {
            Place::Choice(choice) => self.backend(choice),
            Place::Session(backend, why) => Ok((backend, why)),
        }
    }

    /// The backend asked for, with this catalog's PTX, and why it was chosen: opened on the
    /// first call that asks for it, shared by the calls after. A choice that failed to open
    /// is tried again.
    pub(crate) fn backend(&self, choice: BackendChoice) -> Result<(Backend, String), Failure> {
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, backend, why)) = opened.iter().find(|(c, ..)| *c == choice) {
            return Ok((backend.clone(), why.clone()));
        }
        let (backend, why) = Backend::select(choice, self.ptx, LaunchOverride::default())?;
        opened.push((choice, backend.clone(), why.clone()));
        Ok((backend, why))
    }

    /// The problems, as dicts: name, title, whether it takes the caller's `data`, and for
    /// those with their own data the rule for `n` and its default and the default number of
    /// data points.
    pub(crate) fn list_problems<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let generated = self.problems.iter().map(|p| {
            let entry = PyDict::new(py);
            entry.set_item("name", p.name)?;
            entry.set_item("title", p.title)?;
            entry.set_item("data", false)?;
            entry.set_item("n_rule", p.n_rule)?;
            entry.set_item("default_n", p.default_n)?;
            entry.set_item("default_points", p.default_points)?;
            Ok(entry)
        });
        let on_data = self.on_data.iter().map(|p| {
            let entry = PyDict::new(py);
            entry.set_item("name", p.name)?;
            entry.set_item("title", p.title)?;
            entry.set_item("data", true)?;
            Ok(entry)
        });
        generated.chain(on_data).collect()
    }

    /// The models, as dicts (name, formula, the rule for the parameter count and its default).
    pub(crate) fn list_models<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        (self.models.iter())
            .map(|m| {
                let entry = PyDict::new(py);
                entry.set_item("name", m.name)?;
                entry.set_item("formula", m.formula)?;
                entry.set_item("params_rule", m.params_rule)?;
                entry.set_item("default_params", m.default_params)?;
                Ok(entry)
            })
            .collect()
    }
}

/// A name the catalog does not have, with the ones it has.
fn unknown(kind: &str, name: &str, known: &[&str]) -> Failure {
    let known = if known.is_empty() {
        "none".to_owned()
    } else {
        known.join(", ")
    };
    Failure::Input(format!(
        "unknown {kind} `{name}`; this module's {kind}s are: {known}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend is opened on its first call and shared after; one that fails to open is not
    /// kept, so the next call tries again.
    #[test]
    fn a_backend_is_opened_once_and_shared() {
        let catalog = Catalog::new(Err("no PTX in this test"), [], &[], &[]);
        let count = || catalog.opened.lock().unwrap().len();
        for _ in 0..2 {
            assert!(catalog.backend(BackendChoice::Simulated).is_err());
            assert_eq!(count(), 0);
        }
        for _ in 0..3 {
            let opened = catalog.backend(BackendChoice::Cpu);
            assert!(matches!(opened, Ok((Backend::Cpu, why)) if why == "requested"));
            assert_eq!(count(), 1);
        }
    }
}
