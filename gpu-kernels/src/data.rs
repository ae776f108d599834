//! The terms' read-only data: a table of one row per data point, its columns stored side by
//! side as f64 or f32 ([`DataType`]), and every value read as f64.

use crate::device::{RawTable, Strided};

/// How a data table's values are stored. Either way a term reads f64: an f32 value widens
/// exactly, so a table stored as f32 gives the bits of the same values stored as f64. f32 moves
/// half the bytes, which is what a pass over a large table waits on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 8 bytes a value: the values as given.
    #[default]
    F64,
    /// 4 bytes a value: each value rounded to the nearest f32.
    F32,
}

impl DataType {
    /// Every data type, by index (what the term kernels' `data_type` argument carries).
    pub const ALL: [DataType; 2] = [DataType::F64, DataType::F32];

    /// The name users give it: `"f64"` or `"f32"`.
    pub const fn name(self) -> &'static str {
        match self {
            DataType::F64 => "f64",
            DataType::F32 => "f32",
        }
    }

    /// What storing data as it means, in a line.
    pub const fn help(self) -> &'static str {
        match self {
            DataType::F64 => "8 bytes a value, the values as given",
            DataType::F32 => {
                "4 bytes a value, each rounded to f32: half the bytes every pass reads"
            }
        }
    }

    /// The bytes one value takes.
    pub const fn bytes(self) -> usize {
        match self {
            DataType::F64 => 8,
            DataType::F32 => 4,
        }
    }

    /// Its index in [`ALL`](Self::ALL).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The type at index `index` of [`ALL`](Self::ALL).
    pub const fn from_index(index: usize) -> Option<Self> {
        match index {
            0 => Some(DataType::F64),
            1 => Some(DataType::F32),
            _ => None,
        }
    }

    /// The type named `name` ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// A table's values, column after column, as they are stored.
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    /// Stored as f64.
    F64(&'a [f64]),
    /// Stored as f32, read as f64.
    F32(&'a [f32]),
}

impl<'a> Values<'a> {
    /// The number of values.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::F32(v) => v.len(),
        }
    }

    /// Whether there are none.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How they are stored.
    #[inline(always)]
    pub const fn data_type(&self) -> DataType {
        match self {
            Values::F64(_) => DataType::F64,
            Values::F32(_) => DataType::F32,
        }
    }

    /// Value `i`, as f64; `None` past the end.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<f64> {
        match self {
            Values::F64(v) => v.get(i).copied(),
            Values::F32(v) => v.get(i).map(|&value| f64::from(value)),
        }
    }

    /// The first value for which `found` holds, as f64, with its index. The type is matched
    /// once, so the loop over the values is a plain slice's.
    #[inline]
    pub fn find(&self, found: impl Fn(f64) -> bool) -> Option<(usize, f64)> {
        match self {
            Values::F64(v) => v.iter().copied().enumerate().find(|p| found(p.1)),
            Values::F32(v) => (v.iter().map(|&value| f64::from(value)))
                .enumerate()
                .find(|p| found(p.1)),
        }
    }
}

/// A table's values as [`Data`] and [`Row`] hold them: two words, whatever their type.
type Table<'a> = RawTable<'a>;

/// The view of `values`.
#[inline(always)]
fn table(values: Values<'_>) -> Table<'_> {
    match values {
        Values::F64(wide) => RawTable::wide(wide),
        Values::F32(narrow) => RawTable::narrow(narrow),
    }
}

/// Read-only data for the terms: a column-major table with one row per data point, stored as
/// f64 or f32 ([`DataType`]) and read as f64. `data.col(0).get(k)` is column 0 of row `k`,
/// e.g. the time `t_k` of a data fit.
///
/// A backend may also hand the same table row after row ([`with_rows`](Data::with_rows)):
/// [`row`](Data::row) then reads a row where its columns lie side by side. The CPU does so for
/// wide data, where a row read from many columns apart waits on memory (see
/// [`with_rows`](Data::with_rows)); the values read are the same either way.
#[derive(Clone, Copy, Debug)]
pub struct Data<'a> {
    values: Table<'a>,
    rows: usize,
    /// The same table row after row, as f64, or empty.
    by_row: &'a [f64],
}

impl<'a> Data<'a> {
    /// No data.
    pub const EMPTY: Data<'static> = Data::new(&[], 0);

    /// `values` holds whole columns of `rows` values each. A length that is not a multiple of
    /// `rows` is rejected by the host before upload; here the tail is simply unreachable.
    #[inline(always)]
    pub const fn new(values: &'a [f64], rows: usize) -> Self {
        Data {
            values: RawTable::wide(values),
            rows,
            by_row: &[],
        }
    }

    /// As [`new`](Data::new), for values however they are stored.
    #[inline(always)]
    pub fn of(values: Values<'a>, rows: usize) -> Self {
        Data {
            values: table(values),
            rows,
            by_row: &[],
        }
    }

    /// The shape of a table of `rows` by `cols` that lies on a device, as the host checks a
    /// term against it ([`Term::check`](crate::Term::check), [`Term::terms`](crate::Term::terms))
    /// before any kernel reads it: [`rows`](Data::rows) and [`cols`](Data::cols) are the
    /// table's, every value reads NaN and [`values`](Data::values) is empty. Host only.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub const fn shape(rows: usize, cols: usize) -> Self {
        Data {
            values: RawTable::absent(rows.saturating_mul(cols)),
            rows,
            by_row: &[],
        }
    }

    /// Whether this is a [`shape`](Data::shape) alone, its values on a device.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub fn is_shape(&self) -> bool {
        self.values.is_absent()
    }

    /// This data with `by_row`, the same table row after row (row `k`'s columns at
    /// `by_row[k·cols ..]`), from which [`row`](Data::row) reads. Ignored unless it holds
    /// exactly the table's values. Why: a row of a column-major table is `cols` reads each a
    /// column apart, one cache line each, so a wide table's rows read far faster stored side by
    /// side.
    #[inline(always)]
    pub const fn with_rows(self, by_row: &'a [f64]) -> Self {
        Data { by_row, ..self }
    }

    /// The number of rows (data points).
    #[inline(always)]
    pub const fn rows(&self) -> usize {
        self.rows
    }

    /// The number of whole columns; 0 without rows.
    #[inline(always)]
    pub const fn cols(&self) -> usize {
        match self.values.len().checked_div(self.rows) {
            Some(cols) => cols,
            None => 0,
        }
    }

    /// Column `c`: `col(c).get(k)` is its row `k`. A column past the data reads NaN in every
    /// row, as [`Row::get`] does.
    #[inline(always)]
    pub fn col(&self, c: usize) -> Strided<'a> {
        match c.checked_mul(self.rows) {
            Some(start) => self.values.strided(start, 1, self.rows),
            None => Strided::new(&[], 0, 0, self.rows),
        }
    }

    /// All values, column after column, as they are stored.
    #[inline(always)]
    pub fn values(&self) -> Values<'a> {
        if self.values.is_narrow() {
            Values::F32(self.values.as_narrow())
        } else {
            Values::F64(self.values.as_wide())
        }
    }

    /// How the table is stored. A CPU pass over many rows tests this once and runs its loop
    /// in a copy for each type, so that no read in the loop tests it again.
    #[inline(always)]
    pub fn data_type(&self) -> DataType {
        if self.values.is_narrow() {
            DataType::F32
        } else {
            DataType::F64
        }
    }

    /// The table row after row, where the data come [`with_rows`](Data::with_rows) (the rows
    /// [`row`](Data::row) reads); else empty.
    #[inline(always)]
    pub fn by_row(&self) -> &'a [f64] {
        if self.by_row.len() == self.values.len() {
            self.by_row
        } else {
            &[]
        }
    }

    /// Row `index`: one data point, its columns read where they lie (side by side where the
    /// data come [`with_rows`](Data::with_rows)). A row past the data reads NaN in every column
    /// (see [`Row::get`]).
    #[inline(always)]
    pub fn row(&self, index: usize) -> Row<'a> {
        if index >= self.rows {
            return Row {
                values: Values::F64(&[]),
                step: 0,
                first: 0,
            };
        }
        let by_row = self.by_row();
        if !by_row.is_empty() {
            let cols = self.cols();
            return Row {
                values: Values::F64(&by_row[index * cols..(index + 1) * cols]),
                step: 1,
                first: 0,
            };
        }
        // The whole table and the row's offset in it, not the table sliced from the row on:
        // the CPU's forward gradient over wide rows ran far slower with the slice.
        Row {
            values: self.values(),
            step: self.rows,
            first: index,
        }
    }
}

/// One row of [`Data`]: `row.get(c)` is column `c` of this row. A view, so a term's
/// [`Local`](crate::Term::Local) can hold its row without copying it (a copied row of many
/// columns would live in a GPU thread's local memory, which is slow).
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    /// Column `c` of the row is value `first + c·step`.
    values: Values<'a>,
    step: usize,
    first: usize,
}

impl<'a> Row<'a> {
    /// Column `c` of this row; NaN for a column past the data, which the solvers then report
    /// as a non-finite objective (scipy's status 3) instead of a panic on the CPU and a trap on
    /// the GPU. A term's [`check`](crate::Term::check) is where it states the columns it reads.
    ///
    /// Reading NaN rather than panicking also keeps the read cheap: a dense term's per-point
    /// loop then carries no panic path, which the compiler must keep in order.
    #[inline(always)]
    pub fn get(&self, c: usize) -> f64 {
        self.values
            .get(c * self.step + self.first)
            .unwrap_or(f64::NAN)
    }

    /// Columns `start .. start + len` of this row: all NaN if one of them is past the data.
    #[inline(always)]
    pub(crate) fn columns(&self, start: usize, len: usize) -> Strided<'a> {
        let Some(first) = start
            .checked_mul(self.step)
            .and_then(|offset| offset.checked_add(self.first))
        else {
            return Strided::new(&[], 0, 0, len);
        };
        match self.values {
            Values::F64(wide) => Strided::new(wide, first, self.step, len),
            Values::F32(narrow) => Strided::new_f32(narrow, first, self.step, len),
        }
    }
}
