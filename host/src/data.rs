//! Data files in: CSV with a header, numpy `.npy` and `.npz`, read into the named `f64` columns a
//! fit asks for. The columns come back whole and checked, ready to be uploaded once.
//!
//! - **CSV**: the first line names the columns; fields are trimmed. Columns not asked for are
//!   not parsed (a text column of labels is fine), but every row must have every field. Lines
//!   starting with `#` are comments, but for a first line, which names the columns after its
//!   `#` (numpy's `savetxt(…, header="t,y")` writes `# t,y`, and `genfromtxt(names=True)`
//!   reads it so). A column name asked for must appear once.
//! - **`.npz`** (`np.savez(path, t=t, y=y)`, compressed or not): one 1-D array per column, named
//!   as saved.
//! - **`.npy`** (`np.save(path, a)`): a 2-D array whose columns are named by their index, `"0"`,
//!   `"1"`, …, or a 1-D array, column `"0"`.
//!
//! float64, float32, int64 and int32 arrays are read (as `f64`). Nothing is dropped: a value
//! that is not a finite number is an error naming the file, the line (CSV, counting the header
//! as line 1) or the 0-based index (numpy), and the column.
//!
//! [`read_column_rows`] keeps only some rows, as each process of a data-sharded (MPI) fit does.

mod csv_file;
mod numpy_file;

use csv_file::read_csv;
use numpy_file::{read_npy, read_npz};
use std::fs::File;
use std::ops::Range;
use std::path::Path;

/// Why a data file could not be read. Every message starts with the file's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be opened.
    #[error("{path}: {error}")]
    Io {
        /// The file, as the user named it.
        path: String,
        /// The operating system's error. Shown in the message, and so not also the error's
        /// `source()`: the CLI prints every cause in the chain, and it would appear twice.
        error: std::io::Error,
    },
    /// The extension is none of `.csv`, `.npy`, `.npz` (in any case).
    #[error("{path}: unknown file type; cudamin reads .csv (with a header line), .npy and .npz")]
    UnknownFormat {
        /// The file, as the user named it.
        path: String,
    },
    /// A column asked for is not in the file.
    #[error("{path}: no column `{name}`; the file has: {available}")]
    MissingColumn {
        /// The file, as the user named it.
        path: String,
        /// The column asked for.
        name: String,
        /// The file's column names, comma-separated (`none` if it has none; an empty name as
        /// `(unnamed)`).
        available: String,
    },
    /// A column asked for is named more than once in the CSV header.
    #[error("{path}: the header names column `{name}` {count} times")]
    DuplicateColumn {
        /// The file, as the user named it.
        path: String,
        /// The column asked for.
        name: String,
        /// How many columns have that name.
        count: usize,
    },
    /// The file has no rows (or is empty).
    #[error("{path}: the file has no data rows")]
    Empty {
        /// The file, as the user named it.
        path: String,
    },
    /// The CSV header line's fields are all empty (a line of commas).
    #[error(
        "{path}: the header line names no column; name them on the first line (`x,y`, or `# x,y`)"
    )]
    UnnamedColumns {
        /// The file, as the user named it.
        path: String,
    },
    /// A CSV row has a different number of fields than the header.
    #[error("{path}: line {line} has {fields} fields, the header has {header}")]
    Ragged {
        /// The file, as the user named it.
        path: String,
        /// The row's line, 1-based (the header is line 1).
        line: u64,
        /// The number of fields on that line.
        fields: u64,
        /// The number of fields in the header.
        header: u64,
    },
    /// A CSV field of a column asked for does not parse as a number.
    #[error("{path}: line {line}, column `{column}`: `{text}` is not a number")]
    Malformed {
        /// The file, as the user named it.
        path: String,
        /// The field's line, 1-based (the header is line 1).
        line: u64,
        /// The field's column.
        column: String,
        /// The field, trimmed.
        text: String,
    },
    /// A value is NaN or infinite.
    #[error("{path}: {place}, column `{column}`: {value} is not a finite number")]
    NonFinite {
        /// The file, as the user named it.
        path: String,
        /// Where in the column: `"line 7"` (CSV) or `"index 5"` (numpy, 0-based).
        place: String,
        /// The value's column.
        column: String,
        /// The value read.
        value: f64,
    },
    /// The `.npz` arrays asked for differ in length.
    #[error("{path}: column `{column}` has {rows} rows, column `{first}` has {first_rows}")]
    Lengths {
        /// The file, as the user named it.
        path: String,
        /// The first column asked for, which sets the length.
        first: String,
        /// The length of `first`.
        first_rows: usize,
        /// The column whose length differs.
        column: String,
        /// The length of `column`.
        rows: usize,
    },
    /// The file is not valid CSV or numpy data, or holds an array of an unsupported dtype or
    /// shape.
    #[error("{path}: {what}")]
    Format {
        /// The file, as the user named it.
        path: String,
        /// What is wrong, naming the array where there are several.
        what: String,
    },
}

/// The columns `names` of the file at `path`, in that order, each the same length (at least
/// one row), every value finite. The format follows the extension.
///
/// ```
/// use cudamin_host::data::read_columns;
///
/// let path = std::env::temp_dir().join("cudamin-doc-read-columns.csv");
/// std::fs::write(&path, "t, label, y\n0.5, a, 1\n1.5, b, 2.25\n")?;
/// // Only the columns asked for are parsed: `label` may hold anything.
/// assert_eq!(read_columns(&path, &["y", "t"])?, vec![vec![1.0, 2.25], vec![0.5, 1.5]]);
/// std::fs::write(&path, "t, y\n0.5, 1\n1.5, x\n")?;
/// let error = read_columns(&path, &["t", "y"]).unwrap_err().to_string();
/// assert!(error.ends_with("line 3, column `y`: `x` is not a number"));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_columns(path: &Path, names: &[&str]) -> Result<Vec<Vec<f64>>, DataError> {
    read(path, names, None).map(|(columns, _)| columns)
}

/// The rows `select(total)` of the columns `names`, where `total` is the file's number of rows;
/// returns them and `total`. For one process of a data-sharded fit, which keeps only its rows:
/// a CSV file is read twice (a count, then the rows kept are parsed, the rest skipped), a numpy
/// file whole before the rows are cut out. Errors are those of [`read_columns`], for the rows
/// read; line numbers count from the start of the file.
///
/// ```
/// use cudamin_host::data::read_column_rows;
///
/// let path = std::env::temp_dir().join("cudamin-doc-read-rows.csv");
/// std::fs::write(&path, "t,y\n0,1\n1,oops\n2,3\n3,4\n")?;
/// // The second half only: the malformed row is not among them.
/// let (columns, total) = read_column_rows(&path, &["t", "y"], |total| total / 2..total)?;
/// assert_eq!((columns, total), (vec![vec![2.0, 3.0], vec![3.0, 4.0]], 4));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_column_rows(
    path: &Path,
    names: &[&str],
    select: impl FnOnce(usize) -> Range<usize>,
) -> Result<(Vec<Vec<f64>>, usize), DataError> {
    let mut select = Some(select);
    let mut once = |total| select.take().map_or(0..0, |select| select(total));
    read(path, names, Some(&mut once))
}

/// How many rows a reader keeps: all (`None`), or those a selector picks from the total.
type Selector<'a> = Option<&'a mut dyn FnMut(usize) -> Range<usize>>;

fn read(
    path: &Path,
    names: &[&str],
    selector: Selector<'_>,
) -> Result<(Vec<Vec<f64>>, usize), DataError> {
    let shown = path.display().to_string();
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let (columns, total) = match extension.to_ascii_lowercase().as_str() {
        "csv" => read_csv(path, &shown, names, selector)?,
        "npy" => cut(read_npy(path, &shown, names)?, selector),
        "npz" => cut(read_npz(path, &shown, names)?, selector),
        _ => return Err(DataError::UnknownFormat { path: shown }),
    };
    if total == 0 {
        return Err(DataError::Empty { path: shown });
    }
    Ok((columns, total))
}

/// Whole columns cut to the rows `selector` picks; with the total.
fn cut(mut columns: Vec<Vec<f64>>, selector: Selector<'_>) -> (Vec<Vec<f64>>, usize) {
    let total = columns.first().map_or(0, Vec::len);
    if let Some(select) = selector {
        let rows = select(total);
        let end = rows.end.min(total);
        for column in &mut columns {
            column.truncate(end);
            column.drain(..rows.start.min(end));
        }
    }
    (columns, total)
}

fn open(path: &Path, shown: &str) -> Result<File, DataError> {
    File::open(path).map_err(|error| DataError::Io {
        path: shown.to_owned(),
        error,
    })
}

/// The position of each of `names` among `available`, or the first that is missing.
fn find_columns(
    shown: &str,
    available: &[String],
    names: &[&str],
) -> Result<Vec<usize>, DataError> {
    names
        .iter()
        .map(|&name| {
            let count = available.iter().filter(|&a| a == name).count();
            if count > 1 {
                return Err(DataError::DuplicateColumn {
                    path: shown.to_owned(),
                    name: name.to_owned(),
                    count,
                });
            }
            available
                .iter()
                .position(|a| a == name)
                .ok_or_else(|| DataError::MissingColumn {
                    path: shown.to_owned(),
                    name: name.to_owned(),
                    available: listed(available),
                })
        })
        .collect()
}

/// Column names as a message lists them: `x, y`, an empty name as `(unnamed)`, none as `none`.
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    let shown: Vec<&str> = names
        .iter()
        .map(|name| if name.is_empty() { "(unnamed)" } else { name })
        .collect();
    shown.join(", ")
}

/// Checks a column's values, naming the first that is not finite by its index.
fn finite(shown: &str, name: &str, values: Vec<f64>) -> Result<Vec<f64>, DataError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(values),
        Some(index) => Err(DataError::NonFinite {
            path: shown.to_owned(),
            place: format!("index {index}"),
            column: name.to_owned(),
            value: values[index],
        }),
    }
}
