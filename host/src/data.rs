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

use ndarray::{ArrayD, Axis};
use ndarray_npy::{ReadNpyError, ReadNpyExt, ReadNpzError, ReadableElement};
use std::fs::File;
use std::io::{BufReader, Read, Seek};
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

fn read_csv(
    path: &Path,
    shown: &str,
    names: &[&str],
    selector: Selector<'_>,
) -> Result<(Vec<Vec<f64>>, usize), DataError> {
    let format = |what: String| DataError::Format {
        path: shown.to_owned(),
        what,
    };
    let commented = commented_header(path, shown)?;
    let open_csv = || -> Result<_, DataError> {
        Ok(csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .has_headers(commented.is_none())
            // Rows are checked against the header by `next_record`, whichever line it was on.
            .flexible(true)
            .from_reader(BufReader::new(open(path, shown)?)))
    };
    let mut reader = open_csv()?;
    let header: Vec<String> = match &commented {
        Some(header) => header.clone(),
        None => (reader.headers().map_err(|e| format(e.to_string()))?)
            .iter()
            .map(str::to_owned)
            .collect(),
    };
    if header.is_empty() {
        return Err(DataError::Empty {
            path: shown.to_owned(),
        });
    }
    if header.iter().all(String::is_empty) {
        return Err(DataError::UnnamedColumns {
            path: shown.to_owned(),
        });
    }
    let indices = find_columns(shown, &header, names)?;
    let (rows, total) = match selector {
        None => (None, None),
        Some(select) => {
            // A first pass counts the rows, parsing no field.
            let mut record = csv::ByteRecord::new();
            let mut total = 0;
            while next_record(&mut reader, &mut record, shown, header.len())? {
                total += 1;
            }
            reader = open_csv()?;
            if commented.is_none() {
                reader.byte_headers().map_err(|e| format(e.to_string()))?;
            }
            (Some(select(total)), Some(total))
        }
    };
    let mut columns = vec![Vec::new(); names.len()];
    let mut record = csv::ByteRecord::new();
    let mut index = 0;
    while next_record(&mut reader, &mut record, shown, header.len())? {
        let kept = rows.as_ref().is_none_or(|rows| rows.contains(&index));
        index += 1;
        if !kept {
            continue;
        }
        let line = record.position().map_or(0, |p| p.line());
        for ((column, &index), &name) in columns.iter_mut().zip(&indices).zip(names) {
            let text = String::from_utf8_lossy(&record[index]);
            let value: f64 = text.parse().map_err(|_| DataError::Malformed {
                path: shown.to_owned(),
                line,
                column: name.to_owned(),
                text: text.clone().into_owned(),
            })?;
            if !value.is_finite() {
                return Err(DataError::NonFinite {
                    path: shown.to_owned(),
                    place: format!("line {line}"),
                    column: name.to_owned(),
                    value,
                });
            }
            column.push(value);
        }
    }
    Ok((columns, total.unwrap_or(index)))
}

/// The column names of a CSV file whose first line is a comment (`# t,y`), `None` for one whose
/// first line is not.
fn commented_header(path: &Path, shown: &str) -> Result<Option<Vec<String>>, DataError> {
    let mut first = String::new();
    let mut file = BufReader::new(open(path, shown)?);
    std::io::BufRead::read_line(&mut file, &mut first).map_err(|error| DataError::Io {
        path: shown.to_owned(),
        error,
    })?;
    let Some(names) = first.trim_start_matches('\u{feff}').strip_prefix('#') else {
        return Ok(None);
    };
    let mut line = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .has_headers(false)
        .from_reader(names.as_bytes());
    let mut record = csv::StringRecord::new();
    line.read_record(&mut record)
        .map_err(|e| DataError::Format {
            path: shown.to_owned(),
            what: e.to_string(),
        })?;
    Ok(Some(record.iter().map(str::to_owned).collect()))
}

/// Reads the next record into `record`, checking it has the header's `fields`; `false` at the
/// end of the file.
fn next_record(
    reader: &mut csv::Reader<BufReader<File>>,
    record: &mut csv::ByteRecord,
    shown: &str,
    fields: usize,
) -> Result<bool, DataError> {
    let more = reader
        .read_byte_record(record)
        .map_err(|e| DataError::Format {
            path: shown.to_owned(),
            what: e.to_string(),
        })?;
    if more && record.len() != fields {
        return Err(DataError::Ragged {
            path: shown.to_owned(),
            line: record.position().map_or(0, |p| p.line()),
            fields: record.len() as u64,
            header: fields as u64,
        });
    }
    Ok(more)
}

/// Where numpy arrays are read from: a `.npy` file, or an array of an `.npz` archive.
trait NumpySource {
    fn read<A: ReadableElement>(&mut self) -> Result<ArrayD<A>, ReadNpzError>;
}

struct NpyFile<'a>(&'a Path);

impl NumpySource for NpyFile<'_> {
    fn read<A: ReadableElement>(&mut self) -> Result<ArrayD<A>, ReadNpzError> {
        let file = File::open(self.0).map_err(|e| ReadNpzError::Npy(ReadNpyError::Io(e)))?;
        ArrayD::<A>::read_npy(BufReader::new(file)).map_err(ReadNpzError::Npy)
    }
}

/// The array at `index` of an `.npz` archive.
struct NpzArray<'a, R: Read + Seek> {
    archive: &'a mut zip::ZipArchive<R>,
    index: usize,
}

impl<R: Read + Seek> NumpySource for NpzArray<'_, R> {
    fn read<A: ReadableElement>(&mut self) -> Result<ArrayD<A>, ReadNpzError> {
        Ok(ArrayD::<A>::read_npy(self.archive.by_index(self.index)?)?)
    }
}

/// Refuses an array whose header claims more bytes than follow it in its file (`bytes`, the
/// header's included), or more values than the memory available holds: ndarray-npy allocates
/// what the header says before it reads a value, and an allocation that fails ends the process
/// (a corrupt or crafted shape of 2⁵⁹ in a 128-byte file). A header that does not parse, or
/// whose dtype has no size cudamin knows, is left to the read, which says what is wrong.
fn check_claimed_size(
    reader: impl Read,
    bytes: u64,
    shown: &str,
    what: &str,
) -> Result<(), DataError> {
    let mut reader = reader.take(u64::MAX);
    let Ok(header) = ndarray_npy::npy::header::Header::from_reader(&mut reader) else {
        return Ok(());
    };
    let Some(item) = item_size(&header.type_descriptor.to_string()) else {
        return Ok(());
    };
    let refused = |why: String| DataError::Format {
        path: shown.to_owned(),
        what: format!("{what}'s header claims shape {:?}: {why}", header.shape),
    };
    let after_header = bytes.saturating_sub(u64::MAX - reader.limit());
    let values = (header.shape.iter()).try_fold(1u64, |values, &d| values.checked_mul(d as u64));
    let claimed = values.and_then(|values| values.checked_mul(item));
    if !claimed.is_some_and(|claimed| claimed <= after_header) {
        return Err(refused(format!(
            "more than the {after_header} bytes of data that follow it"
        )));
    }
    // An archive's sizes are its own claims too; the values are read as f64.
    let values = values.and_then(|v| usize::try_from(v).ok());
    if values.and_then(crate::linalg::fits_in_memory).is_none() {
        let available = crate::linalg::available_memory().unwrap_or(0) as f64 / 1e9;
        return Err(refused(format!(
            "more values than the {available:.3} GB of memory available hold"
        )));
    }
    Ok(())
}

/// The bytes of one value of a numpy dtype as a header writes it (`'<f8'`: 8), `None` for any
/// other descriptor (a structured dtype), which cudamin does not read.
fn item_size(descriptor: &str) -> Option<u64> {
    let dtype = descriptor.trim_matches(['\'', '"']);
    let kind_and_size = dtype.trim_start_matches(['<', '>', '|', '=']);
    kind_and_size.get(1..)?.parse().ok()
}

/// An array as `f64`, from any of the number types cudamin reads (tried in turn while the
/// dtype is the mismatch).
fn read_as_f64(source: &mut impl NumpySource) -> Result<ArrayD<f64>, ReadNpzError> {
    let wrong_dtype =
        |e: &ReadNpzError| matches!(e, ReadNpzError::Npy(ReadNpyError::WrongDescriptor(_)));
    let first = source.read::<f64>();
    match &first {
        Err(e) if wrong_dtype(e) => {}
        _ => return first,
    }
    let converted = source
        .read::<f32>()
        .map(|a| a.mapv(f64::from))
        .or_else(|e| {
            if wrong_dtype(&e) {
                source.read::<i64>().map(|a| a.mapv(|v| v as f64))
            } else {
                Err(e)
            }
        })
        .or_else(|e| {
            if wrong_dtype(&e) {
                source.read::<i32>().map(|a| a.mapv(f64::from))
            } else {
                Err(e)
            }
        });
    match converted {
        Err(e) if wrong_dtype(&e) => first,
        other => other,
    }
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

fn read_npy(path: &Path, shown: &str, names: &[&str]) -> Result<Vec<Vec<f64>>, DataError> {
    // A regular file's length bounds what its header may claim (a pipe's is unknown).
    let file = open(path, shown)?;
    if let Ok(metadata) = file.metadata()
        && metadata.is_file()
    {
        check_claimed_size(BufReader::new(file), metadata.len(), shown, "the array")?;
    }
    let array = read_as_f64(&mut NpyFile(path)).map_err(|e| numpy_error(shown, "the array", e))?;
    let array = match array.ndim() {
        1 => array.insert_axis(Axis(1)),
        2 => array,
        d => {
            return Err(DataError::Format {
                path: shown.to_owned(),
                what: format!("a {d}-dimensional array; cudamin reads 1-D or 2-D (rows × columns)"),
            });
        }
    };
    let available: Vec<String> = (0..array.shape()[1]).map(|c| c.to_string()).collect();
    let indices = find_columns(shown, &available, names)?;
    indices
        .iter()
        .zip(names)
        .map(|(&c, name)| {
            finite(
                shown,
                name,
                array.index_axis(Axis(1), c).iter().copied().collect(),
            )
        })
        .collect()
}

fn read_npz(path: &Path, shown: &str, names: &[&str]) -> Result<Vec<Vec<f64>>, DataError> {
    let archive_error = |e: zip::result::ZipError| numpy_error(shown, "the archive", e.into());
    let mut archive =
        zip::ZipArchive::new(BufReader::new(open(path, shown)?)).map_err(archive_error)?;
    // As numpy names an archive's arrays: each entry's name, less `.npy`.
    let available: Vec<String> = (0..archive.len())
        .map(|i| {
            let name = archive.name_for_index(i).unwrap_or_default();
            name.strip_suffix(".npy").unwrap_or(name).to_owned()
        })
        .collect();
    let indices = find_columns(shown, &available, names)?;
    let mut columns: Vec<Vec<f64>> = Vec::with_capacity(names.len());
    for (&index, &name) in indices.iter().zip(names) {
        let what = format!("array `{name}`");
        let entry = archive.by_index(index).map_err(archive_error)?;
        let bytes = entry.size();
        check_claimed_size(entry, bytes, shown, &what)?;
        let array = read_as_f64(&mut NpzArray {
            archive: &mut archive,
            index,
        })
        .map_err(|e| numpy_error(shown, &what, e))?;
        if array.ndim() != 1 {
            return Err(DataError::Format {
                path: shown.to_owned(),
                what: format!(
                    "{what} has shape {:?}; each column is a 1-D array",
                    array.shape()
                ),
            });
        }
        let values = finite(shown, name, array.iter().copied().collect())?;
        if let Some(first) = columns.first()
            && first.len() != values.len()
        {
            return Err(DataError::Lengths {
                path: shown.to_owned(),
                first: names[0].to_owned(),
                first_rows: first.len(),
                column: name.to_owned(),
                rows: values.len(),
            });
        }
        columns.push(values);
    }
    Ok(columns)
}

fn numpy_error(shown: &str, what: &str, e: ReadNpzError) -> DataError {
    let what = match e {
        ReadNpzError::Npy(ReadNpyError::WrongDescriptor(descr)) => {
            format!("{what} has dtype {descr}; cudamin reads float64, float32, int64 and int32")
        }
        ReadNpzError::Npy(ReadNpyError::Io(e)) => format!("{what}: {e}"),
        // The array's own error, without the wrapper's "in npz archive" (a .npy file has none).
        ReadNpzError::Npy(e) => format!("{what} is not readable numpy data: {e}"),
        other => format!("{what} is not readable numpy data: {other}"),
    };
    DataError::Format {
        path: shown.to_owned(),
        what,
    }
}
