//! Terms whose data the caller brings: a registered term, its name, and how it loads with `n`
//! variables and the caller's columns (the Python face's `minimize` and `least_squares` on a
//! module of your own, `data=(t, y)`).

use super::problem::{LoadError, Loaded, zeros};
use cudamin_host::{Backend, TermProblem};
use gpu_kernels::{Kernels, ResidualKernels, SumOfSquares};

/// How a term loads: the backend, `n`, the columns packed column-major, and their rows.
type Load = fn(&Backend, usize, Vec<f64>, usize) -> Result<Loaded, LoadError>;

/// A term problem on the caller's data: [`OnData::sum`] for a sum of terms (BFGS, L-BFGS,
/// L-BFGS-B), [`OnData::squares`] for a sum of squares of residuals, loaded with them
/// (Levenberg–Marquardt too).
pub struct OnData {
    /// The name it is known by, e.g. `"robust-line"`.
    pub name: &'static str,
    /// What it minimizes, in a line.
    pub title: &'static str,
    load: Load,
}

impl OnData {
    /// Term `T`'s sum over the caller's data rows.
    pub const fn sum<T: Kernels + 'static>(name: &'static str, title: &'static str) -> OnData {
        OnData {
            name,
            title,
            load: load_sum::<T>,
        }
    }

    /// The sum of squares of residual term `T` over the caller's data rows, with its
    /// residuals.
    pub const fn squares<T: ResidualKernels + 'static>(
        name: &'static str,
        title: &'static str,
    ) -> OnData {
        OnData {
            name,
            title,
            load: load_squares::<T>,
        }
    }

    /// Loads it on `backend` with `n` variables and `columns` (one value per data row each;
    /// none for a term without data), packed once into the terms' column-major layout; the
    /// term checks `n` and the columns.
    pub fn load(
        &self,
        backend: &Backend,
        n: usize,
        columns: &[&[f64]],
    ) -> Result<Loaded, LoadError> {
        let rows = columns.first().map_or(0, |c| c.len());
        if columns.iter().any(|c| c.len() != rows) {
            let lengths: Vec<String> = columns.iter().map(|c| c.len().to_string()).collect();
            return Err(LoadError::Columns {
                lengths: lengths.join(", "),
            });
        }
        let mut values = zeros(rows.checked_mul(columns.len()), n, rows)?;
        for (column, into) in columns.iter().zip(values.chunks_mut(rows.max(1))) {
            into.copy_from_slice(column);
        }
        (self.load)(backend, n, values, rows)
    }
}

fn load_sum<T: Kernels + 'static>(
    backend: &Backend,
    n: usize,
    values: Vec<f64>,
    rows: usize,
) -> Result<Loaded, LoadError> {
    let problem = TermProblem::<T>::with_data(n, values, rows)?;
    Ok(Loaded::Sum(backend.load(problem)?))
}

fn load_squares<T: ResidualKernels + 'static>(
    backend: &Backend,
    n: usize,
    values: Vec<f64>,
    rows: usize,
) -> Result<Loaded, LoadError> {
    let problem = TermProblem::<SumOfSquares<T>>::with_data(n, values, rows)?;
    Ok(Loaded::SumOfSquares(backend.load_least_squares(problem)?))
}
