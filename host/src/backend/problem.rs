//! A term objective's instance: which term, how many variables, which data.

use super::gpu::DeviceArray;
use crate::error::BackendError;
use gpu_kernels::{Data, DataType, Kernels, Term, Values, Window};
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
    /// A finite value lies beyond the range of the data type asked for: stored as it, it would
    /// be infinite.
    #[error(
        "{term} data: column {column}, row {row} is {value}, beyond {}'s range; store the data \
         as f64",
        data_type.name()
    )]
    DataRange {
        /// The term's registered name.
        term: &'static str,
        /// The value's 0-based column.
        column: usize,
        /// Its 0-based row.
        row: usize,
        /// The value.
        value: f64,
        /// The type asked for.
        data_type: DataType,
    },
    /// Data on a device were asked to be stored as f32: they are read as f64 where they lie.
    #[error("{term} data on the device: {reason}")]
    DeviceData {
        /// The term's registered name.
        term: &'static str,
        /// Why.
        reason: String,
    },
    /// Checking data on a device failed there: the device's error, not the data's.
    #[error("{term} data on the device could not be checked: {source}")]
    Device {
        /// The term's registered name.
        term: &'static str,
        /// The backend's error.
        source: BackendError,
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
            | Self::DataRange { term, .. }
            | Self::DeviceData { term, .. }
            | Self::Device { term, .. }
            | Self::NoTerms { term, .. } => *term = name,
            Self::PartSize { .. } => {}
        }
        self
    }
}

/// A problem's data values, column after column, as they are stored ([`DataType`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Columns {
    /// 8 bytes a value.
    F64(Vec<f64>),
    /// 4 bytes a value, read as the f64 each widens to.
    F32(Vec<f32>),
    /// f64 on a GPU backend's device (or the simulator's), which its kernels read where they
    /// lie: nothing crosses to the host. Only that backend loads the problem.
    Device(DeviceArray),
}

impl Columns {
    /// The values on the host, as the terms read them; none for data on a device.
    pub fn view(&self) -> Values<'_> {
        match self {
            Columns::F64(values) => Values::F64(values),
            Columns::F32(values) => Values::F32(values),
            Columns::Device(_) => Values::F64(&[]),
        }
    }

    /// The number of values, wherever they lie.
    pub fn len(&self) -> usize {
        match self {
            Columns::Device(array) => array.len(),
            host => host.view().len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values stored as `data_type`: widened exactly, or each rounded to the nearest f32.
    fn stored_as(self, data_type: DataType) -> Columns {
        match (self, data_type) {
            (Columns::F64(values), DataType::F32) => {
                Columns::F32(values.into_iter().map(|v| v as f32).collect())
            }
            (Columns::F32(values), DataType::F64) => {
                Columns::F64(values.into_iter().map(f64::from).collect())
            }
            (same, _) => same,
        }
    }
}

impl From<Vec<f64>> for Columns {
    fn from(values: Vec<f64>) -> Self {
        Columns::F64(values)
    }
}

impl From<Vec<f32>> for Columns {
    fn from(values: Vec<f32>) -> Self {
        Columns::F32(values)
    }
}

impl From<DeviceArray> for Columns {
    fn from(values: DeviceArray) -> Self {
        Columns::Device(values)
    }
}

/// A registered term `T` with `n` variables and its read-only data (column-major, one row per
/// data point, stored as f64 or f32), checked and ready to load on a backend.
///
/// `Clone` and `Debug` whatever `T` is: a term is a type, not a value, so neither needs `T`'s.
/// `Debug` shows the term's type, `n` and the data's shape, not the data.
pub struct TermProblem<T> {
    n: usize,
    values: Columns,
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
        let columns = data_of(&self.values, self.rows).cols();
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
        Self::with_columns(n, Columns::F64(values), rows)
    }

    /// A problem with data stored as given, f64 or f32, on the host or on a device: `values`
    /// holds whole columns of `rows` values each. f32 data moves half the bytes of f64; every
    /// term reads it as f64. Data on a device are checked there, one word coming back; the
    /// term's own checks see their [`shape`](Data::shape).
    pub fn with_columns(
        n: usize,
        values: impl Into<Columns>,
        rows: usize,
    ) -> Result<Self, ProblemError> {
        let values = values.into();
        let len = values.len();
        let term = T::NAME;
        let whole_columns = if rows == 0 { len == 0 } else { len % rows == 0 };
        if !whole_columns {
            return Err(ProblemError::DataShape { term, len, rows });
        }
        if let Some((index, value)) =
            first_not_finite(&values).map_err(|source| ProblemError::Device { term, source })?
        {
            // Whole columns of `rows` values (checked above, `rows` > 0 where there are values).
            let (column, row) = (index / rows, index % rows);
            return Err(ProblemError::NonFiniteData {
                term,
                column,
                row,
                value,
            });
        }
        let data = data_of(&values, rows);
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

impl<T: Kernels> TermProblem<T> {
    /// This problem with its data stored as `data_type`: as given, widened exactly, or each
    /// value rounded to the nearest f32. A finite value beyond f32's range is refused
    /// ([`ProblemError::DataRange`]).
    pub fn stored_as(self, data_type: DataType) -> Result<Self, ProblemError> {
        if matches!(self.values, Columns::Device(_)) && data_type == DataType::F32 {
            return Err(ProblemError::DeviceData {
                term: T::NAME,
                reason: "they are read as f64 where they lie; store them as f32 on the host".into(),
            });
        }
        if data_type == self.data_type() {
            return Ok(self);
        }
        let view = self.values.view();
        let beyond = |v: f64| data_type == DataType::F32 && (v as f32).is_infinite();
        if let Some((index, value)) = view.find(beyond) {
            return Err(ProblemError::DataRange {
                term: T::NAME,
                column: index / self.rows,
                row: index % self.rows,
                value,
                data_type,
            });
        }
        Self::with_columns(self.n, self.values.stored_as(data_type), self.rows)
    }
}

impl<T: Term> TermProblem<T> {
    /// How the data are stored.
    pub fn data_type(&self) -> DataType {
        self.values.view().data_type()
    }

    /// The number of variables.
    pub fn n(&self) -> usize {
        self.n
    }

    /// A view of the data, as the term's `prepare` reads it; for data on a device, their
    /// [`shape`](Data::shape).
    pub fn data(&self) -> Data<'_> {
        data_of(&self.values, self.rows)
    }

    /// The number of data values, wherever they lie.
    pub fn data_len(&self) -> usize {
        self.values.len()
    }

    /// The data's array where they lie on a device; `None` on the host.
    pub fn device_data(&self) -> Option<&DeviceArray> {
        match &self.values {
            Columns::Device(array) => Some(array),
            _ => None,
        }
    }

    /// The number of terms `K`.
    pub fn terms(&self) -> usize {
        T::terms(self.n, self.data())
    }
}

/// `values` as the terms see them: on the host, the values; on a device, their shape.
fn data_of(values: &Columns, rows: usize) -> Data<'_> {
    match values {
        Columns::Device(array) => Data::shape(rows, array.len().checked_div(rows).unwrap_or(0)),
        host => Data::of(host.view(), rows),
    }
}

/// The first value that is not finite, with its index. Data on a device are checked there in
/// one pass, one word coming back; only where one is not finite do they come to the host to
/// name it.
fn first_not_finite(values: &Columns) -> Result<Option<(usize, f64)>, BackendError> {
    let Columns::Device(array) = values else {
        return Ok(values.view().find(|v| !v.is_finite()));
    };
    if array.max_abs()?.is_finite() {
        return Ok(None);
    }
    let host = array.to_host()?;
    Ok(Values::F64(&host).find(|v| !v.is_finite()))
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
        assert!(copy.data().col(1).iter().eq(problem.data().col(1).iter()));
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

    /// Data stored as f32 are the values rounded to f32, read as f64; a value beyond f32's
    /// range is refused by its column and row.
    #[test]
    fn data_stored_as_f32_round_once_and_refuse_what_overflows() {
        let columns = [[0.0, 1.0, 2.0], [0.1, 1.0 / 3.0, 5.0], [1.0; 3]].concat();
        let problem = TermProblem::<SumOfSquares<Poly>>::with_data(2, columns.clone(), 3).unwrap();
        let narrow = problem.clone().stored_as(DataType::F32).unwrap();
        assert_eq!(narrow.data_type(), DataType::F32);
        let rounded: Vec<f64> = columns.iter().map(|&v| f64::from(v as f32)).collect();
        assert!(
            narrow
                .data()
                .col(1)
                .iter()
                .eq(rounded[3..6].iter().copied())
        );
        let back = narrow.stored_as(DataType::F64).unwrap();
        assert_eq!(
            (back.data_type(), back.data().values().len()),
            (DataType::F64, 9)
        );
        assert!(back.data().col(1).iter().eq(rounded[3..6].iter().copied()));
        let mut huge = columns;
        huge[5] = 1e39;
        let error = TermProblem::<SumOfSquares<Poly>>::with_data(2, huge, 3)
            .unwrap()
            .stored_as(DataType::F32)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} data: column 1, row 2 is 1000000000000000000000000000000000000000, beyond \
                 f32's range; store the data as f64",
                <SumOfSquares<Poly> as Kernels>::NAME
            )
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
