//! A catalog's problem as a `minimize` or `least_squares` call names it: its name, start,
//! size, data, gradient scheme and backend, read under the GIL and loaded without it.

use crate::Catalog;
use crate::args;
use crate::catalog::{Place, Source};
use crate::device::{Given, Start};
use crate::errors::Failure;
use cudamin::problems::Solvable;
use cudamin::{Backend, BackendChoice, Gradient};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

/// A catalog's problem as a call names it: read under the GIL, loaded without it. `data` are
/// the caller's columns, read where they lie.
pub(crate) struct Named<'a> {
    pub(crate) source: Source,
    x0: Option<Given>,
    n: Option<usize>,
    points: Option<usize>,
    data: Vec<&'a [f64]>,
    gradient: Gradient,
    place: Place,
}

impl<'a> Named<'a> {
    /// The problem called `name`, its start (`n` is `x0`'s length when it is given; both given
    /// must agree), its data (generated: `points` of them; the caller's: `data`), the
    /// gradient scheme and where it runs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read(
        catalog: &Catalog,
        name: &str,
        x0: Option<&Bound<'_, PyAny>>,
        n: Option<usize>,
        points: Option<usize>,
        data: &'a [PyReadonlyArray1<'_, f64>],
        jac: &str,
        backend: Option<&Bound<'_, PyAny>>,
    ) -> Result<Self, Failure> {
        let x0 = Given::read(x0)?;
        let n = match (&x0, n) {
            (Some(x0), Some(n)) if x0.len() != n => {
                return Err(Failure::Input(format!(
                    "x0 has {} values but n = {n}",
                    x0.len()
                )));
            }
            (Some(x0), _) => Some(x0.len()),
            (None, n) => n,
        };
        let source = catalog.problem(name)?;
        match source {
            Source::Generated(problem) if !data.is_empty() => {
                return Err(Failure::Input(format!(
                    "{} makes its own data: drop data= (points= sizes it)",
                    problem.name
                )));
            }
            Source::OnData(problem) if points.is_some() => {
                return Err(Failure::Input(format!(
                    "{} runs on the data given: drop points=",
                    problem.name
                )));
            }
            Source::OnData(problem) if x0.is_none() => {
                return Err(Failure::Input(format!(
                    "{} needs x0: its number of variables is x0's length",
                    problem.name
                )));
            }
            Source::Generated(_) | Source::OnData(_) => {}
        }
        let data = (data.iter().enumerate())
            .map(|(i, column)| args::slice(&format!("data[{i}]"), column))
            .collect::<Result<_, _>>()?;
        Ok(Named {
            source,
            x0,
            n,
            points,
            data,
            gradient: args::gradient(jac)?,
            place: catalog.place(backend, BackendChoice::Auto)?,
        })
    }

    /// Picks the backend and loads the problem on it: the objective, the start (the problem's
    /// own unless `x0` was given), the backend and why it was chosen.
    pub(crate) fn load(
        self,
        catalog: &Catalog,
    ) -> Result<(Solvable, Start, Backend, String), Failure> {
        let (backend, backend_reason) = catalog.open(self.place)?;
        let x0 = (self.x0.map(|x0| x0.on(&backend))).transpose()?;
        let (loaded, x0) = match (self.source, x0) {
            (Source::Generated(problem), x0) => {
                let instance = problem.instantiate(&backend, self.n, self.points)?;
                (instance.evaluator, x0.unwrap_or(Start::Host(instance.x0)))
            }
            (Source::OnData(problem), Some(x0)) => {
                (problem.load(&backend, x0.len(), &self.data)?, x0)
            }
            (Source::OnData(problem), None) => {
                return Err(Failure::Input(format!("{} needs x0", problem.name)));
            }
        };
        let solvable = Solvable::new(loaded, self.gradient);
        Ok((solvable, x0, backend, backend_reason))
    }
}
