//! The output directory of `nextedit export`: `data/<split>.jsonl` or
//! `data/<split>.parquet` per split, and the dataset card `README.md`.
//!
//! The directory must be new or empty: an export never overwrites anything. A split
//! that gets no repository is left out (no file, not in the card) and named in
//! [`Written::empty`]. JSON Lines keep the columns in order, `null` for an absent
//! value. Parquet files are written with the `parquet` crate's low-level writer (no
//! Arrow): one
//! row group, Snappy pages, UTF-8 strings, optional columns where a value may be
//! absent; min/max statistics of text columns are truncated to 64 bytes (a trajectory
//! is one value).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::card::{CardFacts, CardSplit, dataset_card};
use super::split::{SplitSpec, assign_splits};
use super::{Column, ColumnType, Row, Table, Value};

/// The data files' format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// One JSON object per line.
    Jsonl,
    /// Apache Parquet.
    Parquet,
}

impl FileFormat {
    /// The file name extension Hugging Face infers the loader from.
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Jsonl => "jsonl",
            FileFormat::Parquet => "parquet",
        }
    }
}

/// Why a dataset could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// There is nothing to write.
    #[error("nothing to export: no {0}")]
    NoRows(&'static str),
    /// The output directory already holds something.
    #[error("{0}: not empty (an export writes only into a new or empty directory)")]
    NotEmpty(PathBuf),
    /// A file could not be written.
    #[error("cannot write {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The Parquet writer failed.
    #[error("cannot write {path} as Parquet")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// Why.
        source: parquet::errors::ParquetError,
    },
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The splits written, in `--split` order.
    pub splits: Vec<CardSplit>,
    /// Splits that got no repository (no file).
    pub empty: Vec<String>,
}

/// Refuses an output directory that holds anything (an export never overwrites): the
/// CLI asks before it reads a single row, [`write_dataset`] again before it writes.
pub fn check_empty(out: &Path) -> Result<(), WriteError> {
    if out.exists() {
        let mut entries = std::fs::read_dir(out).map_err(|source| WriteError::Io {
            path: out.to_path_buf(),
            source,
        })?;
        if entries.next().is_some() {
            return Err(WriteError::NotEmpty(out.to_path_buf()));
        }
    }
    Ok(())
}

/// Writes `table` into `out`, split by repository, with its card.
pub fn write_dataset(
    out: &Path,
    table: &Table,
    spec: &SplitSpec,
    facts: &CardFacts,
    format: FileFormat,
) -> Result<Written, WriteError> {
    if table.rows.is_empty() {
        return Err(WriteError::NoRows(table.kind.name()));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WriteError::Io { path, source }
    };
    check_empty(out)?;
    let data = out.join("data");
    std::fs::create_dir_all(&data).map_err(io(&data))?;
    let repositories: Vec<&str> = table.rows.iter().map(|r| r.repository.as_str()).collect();
    let assignment = assign_splits(&repositories, spec, facts.seed);
    let mut written = Written {
        splits: Vec::new(),
        empty: Vec::new(),
    };
    for (index, (name, _)) in spec.parts.iter().enumerate() {
        let rows: Vec<&Row> = table
            .rows
            .iter()
            .zip(&assignment)
            .filter(|(_, s)| **s == index)
            .map(|(r, _)| r)
            .collect();
        if rows.is_empty() {
            written.empty.push(name.clone());
            continue;
        }
        let file = format!("{name}.{}", format.extension());
        let path = data.join(&file);
        match format {
            FileFormat::Jsonl => write_jsonl(&path, &table.columns, &rows),
            FileFormat::Parquet => write_parquet(&path, table, &rows),
        }?;
        let mut names: Vec<&str> = rows.iter().map(|r| r.repository.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        written.splits.push(CardSplit {
            name: name.clone(),
            path: format!("data/{file}"),
            rows: rows.len(),
            repositories: names.len(),
        });
    }
    let card = out.join("README.md");
    std::fs::write(&card, dataset_card(facts, &table.columns, &written.splits))
        .map_err(io(&card))?;
    Ok(written)
}

fn write_jsonl(path: &Path, columns: &[Column], rows: &[&Row]) -> Result<(), WriteError> {
    let error = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = BufWriter::new(File::create(path).map_err(error)?);
    for row in rows {
        let mut line = String::from("{");
        for (i, (column, value)) in columns.iter().zip(&row.values).enumerate() {
            if i > 0 {
                line.push(',');
            }
            let value = match value {
                Value::Int(n) => serde_json::json!(n),
                Value::Float(x) => serde_json::json!(x),
                Value::Text(s) => serde_json::json!(s),
                Value::Null => serde_json::Value::Null,
            };
            line += &format!("{}:{value}", serde_json::json!(column.name));
        }
        line.push('}');
        writeln!(out, "{line}").map_err(error)?;
    }
    out.flush().map_err(error)
}

/// The Parquet schema of a table's columns.
fn parquet_schema(table: &Table) -> String {
    let mut message = format!("message nextedit_{} {{\n", table.kind.name());
    for column in table.columns.iter() {
        let repetition = if column.nullable {
            "OPTIONAL"
        } else {
            "REQUIRED"
        };
        let physical = match column.kind {
            ColumnType::Int64 => "INT64",
            ColumnType::Float64 => "DOUBLE",
            ColumnType::Text => "BYTE_ARRAY",
        };
        let logical = if column.kind == ColumnType::Text {
            " (UTF8)"
        } else {
            ""
        };
        message += &format!("  {repetition} {physical} {}{logical};\n", column.name);
    }
    message + "}\n"
}

fn write_parquet(path: &Path, table: &Table, rows: &[&Row]) -> Result<(), WriteError> {
    let error = |source| WriteError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let schema = Arc::new(parse_message_type(&parquet_schema(table)).map_err(error)?);
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_statistics_truncate_length(Some(64))
        .build();
    let file = File::create(path).map_err(|source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut writer =
        SerializedFileWriter::new(file, schema, Arc::new(properties)).map_err(error)?;
    let mut group = writer.next_row_group().map_err(error)?;
    let mut index = 0;
    while let Some(mut column) = group.next_column().map_err(error)? {
        let spec = &table.columns[index];
        let values = rows.iter().map(|r| &r.values[index]);
        let levels: Vec<i16> = values
            .clone()
            .map(|v| i16::from(*v != Value::Null))
            .collect();
        let levels = spec.nullable.then_some(levels.as_slice());
        let written = match spec.kind {
            ColumnType::Int64 => {
                let data: Vec<i64> = values
                    .filter_map(|v| match v {
                        Value::Int(n) => Some(*n),
                        _ => None,
                    })
                    .collect();
                column.typed::<Int64Type>().write_batch(&data, levels, None)
            }
            ColumnType::Float64 => {
                let data: Vec<f64> = values
                    .filter_map(|v| match v {
                        Value::Float(x) => Some(*x),
                        _ => None,
                    })
                    .collect();
                column
                    .typed::<DoubleType>()
                    .write_batch(&data, levels, None)
            }
            ColumnType::Text => {
                let data: Vec<ByteArray> = values
                    .filter_map(|v| match v {
                        Value::Text(s) => Some(ByteArray::from(s.as_str())),
                        _ => None,
                    })
                    .collect();
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&data, levels, None)
            }
        };
        written.map_err(error)?;
        column.close().map_err(error)?;
        index += 1;
    }
    group.close().map_err(error)?;
    writer.close().map_err(error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::dataset::DatasetKind;
    use crate::service::dataset::tables::RESULT_COLUMNS;

    #[test]
    fn the_schema_names_every_column_with_its_type() {
        let table = Table {
            kind: DatasetKind::Results,
            columns: std::borrow::Cow::Borrowed(RESULT_COLUMNS),
            rows: Vec::new(),
        };
        let schema = parquet_schema(&table);
        assert!(schema.starts_with("message nextedit_results {\n  REQUIRED INT64 run;\n  REQUIRED BYTE_ARRAY suggester (UTF8);\n"));
        assert!(schema.contains("  OPTIONAL DOUBLE content_bleu;\n"));
        assert!(parse_message_type(&schema).is_ok());
    }
}
