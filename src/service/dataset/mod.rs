//! Datasets out: trajectories and replay results as tables, split by repository, written
//! as JSON Lines or Parquet with a Hugging Face dataset card (`nextedit export`).
//!
//! - [`tables`]: the stored sessions and runs as [`Table`]s (one row per trajectory, one
//!   row per replay step), each row tagged with its repository.
//! - [`tasks`]: a task file (`nextedit tasks cut`) as a [`Table`], one row per task,
//!   its columns the task's serialized fields (pure).
//! - [`split`]: `train=0.8,eval=0.2` and the deterministic assignment of whole
//!   repositories to splits (pure).
//! - [`card`]: the dataset card, `README.md` with the YAML header Hugging Face reads
//!   (pure).
//! - [`write`](mod@write): the output directory: one file per split, JSON Lines or Parquet, and
//!   the card.
//!
//! The columns ([`Column`]s, typed) are the same in both formats, so a dataset loads
//! the same either way; nested data (a whole trajectory, a step's predictions) is one
//! JSON text column. Columns, split rule and card: docs/export.md.

pub mod card;
pub mod split;
pub mod tables;
pub mod tasks;
pub mod write;

use std::borrow::Cow;

/// The type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A 64-bit integer.
    Int64,
    /// A 64-bit float.
    Float64,
    /// UTF-8 text.
    Text,
}

impl ColumnType {
    /// The Hugging Face `datasets` dtype name.
    pub fn dtype(self) -> &'static str {
        match self {
            ColumnType::Int64 => "int64",
            ColumnType::Float64 => "float64",
            ColumnType::Text => "string",
        }
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Its name (the same in JSON Lines and Parquet).
    pub name: Cow<'static, str>,
    /// Its type.
    pub kind: ColumnType,
    /// Whether it may be null.
    pub nullable: bool,
    /// What it holds (the dataset card says it).
    pub doc: Cow<'static, str>,
}

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text.
    Text(String),
    /// Absent (only in a nullable column).
    Null,
}

impl From<Option<f64>> for Value {
    fn from(value: Option<f64>) -> Value {
        value.map_or(Value::Null, Value::Float)
    }
}

impl From<Option<i64>> for Value {
    fn from(value: Option<i64>) -> Value {
        value.map_or(Value::Null, Value::Int)
    }
}

/// A flag as 0/1: the formats have no boolean column.
impl From<Option<bool>> for Value {
    fn from(value: Option<bool>) -> Value {
        value.map_or(Value::Null, |b| Value::Int(i64::from(b)))
    }
}

impl From<Option<String>> for Value {
    fn from(value: Option<String>) -> Value {
        value.map_or(Value::Null, Value::Text)
    }
}

/// One row: its values in column order and the repository it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The repository (the unit a split keeps whole).
    pub repository: String,
    /// One value per column.
    pub values: Vec<Value>,
}

/// What a dataset holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetKind {
    /// One row per trajectory.
    Trajectories,
    /// One row per replay step.
    Results,
    /// One row per completion task.
    Tasks,
}

impl DatasetKind {
    /// `trajectories` or `results`.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Trajectories => "trajectories",
            DatasetKind::Results => "results",
            DatasetKind::Tasks => "tasks",
        }
    }
}

/// Rows of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// What the rows are.
    pub kind: DatasetKind,
    /// The columns, in order (fixed for trajectories and results, from the rows for
    /// tasks).
    pub columns: Cow<'static, [Column]>,
    /// The rows.
    pub rows: Vec<Row>,
}
