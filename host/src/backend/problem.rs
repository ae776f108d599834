//! A term objective's instance: which term, how many variables, which data.

use gpu_kernels::{Data, Kernels, Term};
use std::marker::PhantomData;

/// Why a problem instance was rejected before anything ran.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProblemError {
    #[error("n = {n} is not allowed for {term}: {reason}")]
    InvalidN {
        term: &'static str,
        n: usize,
        reason: &'static str,
    },
    #[error("{term} data: {len} values do not form whole columns of {rows} rows")]
    DataShape {
        term: &'static str,
        len: usize,
        rows: usize,
    },
    #[error("{term} data: value {index} is {value}; data must be finite")]
    NonFiniteData {
        term: &'static str,
        index: usize,
        value: f64,
    },
    #[error("{term} has no terms for n = {n} with {rows} data rows (empty data?)")]
    NoTerms {
        term: &'static str,
        n: usize,
        rows: usize,
    },
}

/// A registered term `T` with `n` variables and its read-only data (column-major, one row per
/// data point), checked and ready to load on a backend.
#[derive(Debug, Clone)]
pub struct TermProblem<T> {
    n: usize,
    values: Vec<f64>,
    rows: usize,
    term: PhantomData<fn() -> T>,
}

impl<T: Kernels> TermProblem<T> {
    /// A problem without data.
    pub fn new(n: usize) -> Result<Self, ProblemError> {
        Self::with_data(n, Vec::new(), 0)
    }

    /// A problem with data: `values` holds whole columns of `rows` values each.
    pub fn with_data(n: usize, values: Vec<f64>, rows: usize) -> Result<Self, ProblemError> {
        let term = T::NAME;
        let whole_columns = if rows == 0 {
            values.is_empty()
        } else {
            values.len() % rows == 0
        };
        if !whole_columns {
            return Err(ProblemError::DataShape {
                term,
                len: values.len(),
                rows,
            });
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ProblemError::NonFiniteData { term, index, value });
        }
        let data = Data::new(&values, rows);
        T::WINDOW
            .check(n)
            .and_then(|()| T::check(n, data))
            .map_err(|reason| ProblemError::InvalidN { term, n, reason })?;
        if T::terms(n, data) == 0 {
            return Err(ProblemError::NoTerms { term, n, rows });
        }
        Ok(Self {
            n,
            values,
            rows,
            term: PhantomData,
        })
    }
}

impl<T: Term> TermProblem<T> {
    pub fn n(&self) -> usize {
        self.n
    }

    pub fn data(&self) -> Data<'_> {
        Data::new(&self.values, self.rows)
    }

    /// The number of terms `K`.
    pub fn terms(&self) -> usize {
        T::terms(self.n, self.data())
    }
}
