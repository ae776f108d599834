//! CSV files with a header line, read into the named columns.

use super::{DataError, Selector, find_columns, open};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

pub(super) fn read_csv(
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
