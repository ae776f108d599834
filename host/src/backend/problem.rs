//! A term objective's instance: which term, how many variables, which data.

use gpu_kernels::{Data, Kernels, Term, Window};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// Why a problem instance was rejected before anything ran.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemError {
    /// The term's window or the term itself (`Term::check`) does not take this `n` (or these
    /// data).
    #[error("n = {n} is not allowed for {term}: {reason}")]
    InvalidN {
        /// The term's registered name.
        term: &'static str,
        /// The number of variables asked for.
        n: usize,
        /// The window's or the term's reason.
        reason: Cow<'static, str>,
    },
    /// The data's length is not a multiple of its row count (or there are values and no rows).
    #[error("{term} data: {len} values do not form whole columns of {rows} rows")]
    DataShape {
        /// The term's registered name.
        term: &'static str,
        /// The number of data values.
        len: usize,
        /// The rows per column given.
        rows: usize,
    },
    /// A data value is NaN or infinite.
    #[error("{term} data: column {column}, row {row} is {value}; data must be finite")]
    NonFiniteData {
        /// The term's registered name.
        term: &'static str,
        /// The value's 0-based column (a fit's: 0 the abscissae, 1 the observations, 2 the
        /// weights).
        column: usize,
        /// Its 0-based row (data point).
        row: usize,
        /// The value.
        value: f64,
    },
    /// The problem would have no terms, so nothing to sum. A dense window has one term per
    /// data row unless the term's `terms` says otherwise, as residuals by index do.
    #[error(
        "{term} has no terms for n = {n} with {rows} data rows (empty data? residuals without \
         data are given by index: a `Residuals` type, `register_residuals!(by_index ..)`)"
    )]
    NoTerms {
        /// The term's registered name.
        term: &'static str,
        /// The number of variables asked for.
        n: usize,
        /// The data's rows.
        rows: usize,
    },
    /// A part added to a sum of term problems has another number of variables than the sum.
    #[error("{term} has n = {n} variables; the sum it is added to ({first}, ...) has {expected}")]
    PartSize {
        /// The added term's registered name.
        term: &'static str,
        /// Its number of variables.
        n: usize,
        /// The sum's first term's registered name.
        first: &'static str,
        /// The sum's number of variables.
        expected: usize,
    },
}

impl ProblemError {
    /// The same error naming `name` where it names the term: a catalog's problems are known by
    /// their own names (`mgh-20`), not their terms' registered ones (`mgh20`). A sum's
    /// [`PartSize`](ProblemError::PartSize) names two terms and is left as it is.
    pub fn named(mut self, name: &'static str) -> Self {
        match &mut self {
            Self::InvalidN { term, .. }
            | Self::DataShape { term, .. }
            | Self::NonFiniteData { term, .. }
            | Self::NoTerms { term, .. } => *term = name,
            Self::PartSize { .. } => {}
        }
        self
    }
}

/// A registered term `T` with `n` variables and its read-only data (column-major, one row per
/// data point), checked and ready to load on a backend.
///
/// `Clone` and `Debug` whatever `T` is: a term is a type, not a value, so neither needs `T`'s.
/// `Debug` shows the term's type, `n` and the data's shape, not the data.
pub struct TermProblem<T> {
    n: usize,
    values: Vec<f64>,
    rows: usize,
    term: PhantomData<fn() -> T>,
}

impl<T> Clone for TermProblem<T> {
    fn clone(&self) -> Self {
        Self {
            n: self.n,
            values: self.values.clone(),
            rows: self.rows,
            term: PhantomData,
        }
    }
}

impl<T> fmt::Debug for TermProblem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns = Data::new(&self.values, self.rows).cols();
        f.debug_struct("TermProblem")
            .field("term", &std::any::type_name::<T>())
            .field("n", &self.n)
            .field("rows", &self.rows)
            .field("columns", &columns)
            .finish_non_exhaustive()
    }
}

/// Why `n` variables do not tile into a banded window's positions, with the numbers: the
/// window's own reason names no stride or width, which the user of a built-in problem does not
/// know. `None` for any other failure.
fn untiled_reason(window: Window, n: usize) -> Option<Cow<'static, str>> {
    let Window::Banded { stride, width } = window else {
        return None;
    };
    if stride == 0 || n < width || (n - width) % stride == 0 {
        return None;
    }
    let below = n - (n - width) % stride;
    Some(Cow::Owned(format!(
        "each term reads {width} variables and the next starts {stride} later, so n must be \
         {width} + {stride}·k (n = {below} or {} would do)",
        below + stride
    )))
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
            // Whole columns of `rows` values (checked above, `rows` > 0 where there are values).
            let (column, row) = (index / rows, index % rows);
            return Err(ProblemError::NonFiniteData {
                term,
                column,
                row,
                value,
            });
        }
        let data = Data::new(&values, rows);
        let invalid = |reason| ProblemError::InvalidN { term, n, reason };
        T::WINDOW
            .check(n)
            .map_err(|reason| invalid(untiled_reason(T::WINDOW, n).unwrap_or(reason.into())))?;
        T::check(n, data).map_err(|reason| invalid(reason.into()))?;
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
    /// The number of variables.
    pub fn n(&self) -> usize {
        self.n
    }

    /// A view of the data, as the term's `prepare` reads it.
    pub fn data(&self) -> Data<'_> {
        Data::new(&self.values, self.rows)
    }

    /// The number of terms `K`.
    pub fn terms(&self) -> usize {
        T::terms(self.n, self.data())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_kernels::SumOfSquares;
    use gpu_kernels::terms::fit::Poly;

    /// `Poly` is neither `Clone` nor `Debug`; its problem is both, and prints no data.
    #[test]
    fn a_problem_is_clone_and_debug_whatever_its_term() {
        let rows = 4;
        let columns = [[0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 5.0, 10.0], [1.0; 4]].concat();
        let problem = TermProblem::<SumOfSquares<Poly>>::with_data(3, columns, rows).unwrap();
        let copy = problem.clone();
        assert_eq!((copy.n(), copy.data().rows()), (3, rows));
        assert_eq!(copy.data().col(1), problem.data().col(1));
        let shown = format!("{copy:?}");
        assert!(shown.starts_with("TermProblem { term: \""), "{shown}");
        assert!(
            shown.contains("SumOfSquares<") && shown.contains("Poly>"),
            "{shown}"
        );
        assert!(
            shown.ends_with("n: 3, rows: 4, columns: 3, .. }"),
            "{shown}"
        );
    }

    /// A value that is not finite is named by its column and row, not by its place in the
    /// column-major table.
    #[test]
    fn a_non_finite_value_is_named_by_column_and_row() {
        let columns = [[0.0, 1.0, 2.0], [1.0, f64::NAN, 5.0], [1.0; 3]].concat();
        let error = TermProblem::<SumOfSquares<Poly>>::with_data(2, columns, 3).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} data: column 1, row 1 is NaN; data must be finite",
                <SumOfSquares<Poly> as Kernels>::NAME
            )
        );
    }
}
