//! numpy's `.npy` and `.npz` files, read into the named columns as `f64`.

use super::{DataError, find_columns, finite, open};
use ndarray::{ArrayD, Axis};
use ndarray_npy::{ReadNpyError, ReadNpyExt, ReadNpzError, ReadableElement};
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

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
        let room = match crate::linalg::memory_room() {
            Some(room) => room.to_string(),
            None => "the memory this process may take".to_owned(),
        };
        return Err(refused(format!("more values than fit in the {room}")));
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

pub(super) fn read_npy(
    path: &Path,
    shown: &str,
    names: &[&str],
) -> Result<Vec<Vec<f64>>, DataError> {
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

pub(super) fn read_npz(
    path: &Path,
    shown: &str,
    names: &[&str],
) -> Result<Vec<Vec<f64>>, DataError> {
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
