//! A task file (JSON Lines of [`Task`], `nextedit tasks cut`) as a dataset [`Table`]:
//! one row per task, one column per serialized field of the task.
//!
//! The columns follow the task format rather than a list kept here, so a field the
//! format gains becomes a column without a change: each line is read as a [`Task`]
//! (a line that is not one is skipped and named), written back as JSON, and its
//! top-level fields become the columns, in the order the format writes them. A
//! column whose values are all integers is `int64` (booleans 0/1), all numbers
//! `float64`, all strings `string`; anything nested (`source`, `state`, `cursor`,
//! lists) is JSON text, like the other tables' nested columns. A field a task leaves
//! out (an optional or empty one) is null. The repository (the unit of a split) is
//! the task's `repository`.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value as Json;
use serde_json::value::RawValue;

use super::tables::Skipped;
use super::{Column, ColumnType, DatasetKind, Row, Table, Value};
use crate::engine::task::Task;

/// What the card says about the fields it knows; others get a generic line.
const FIELD_DOCS: &[(&str, &str)] = &[
    ("version", "task file format version"),
    (
        "id",
        "stable task id: `REPO@COMMIT12:PATH:LINE:SCENARIO` (or `session-N@SEQ:…`)",
    ),
    ("repository", "repository name (the unit of the split)"),
    (
        "source",
        "where the state comes from: a commit, or a session at an event, JSON",
    ),
    ("language", "language of the file with the hole"),
    (
        "scenario",
        "how the task was cut: `full_block`, `incomplete_suffix`, `inner_block`, `rag`, `added_function`, `session_pause`",
    ),
    (
        "state",
        "the state the task is cut from (its commit, files that differ from it, the block kind), JSON",
    ),
    (
        "file",
        "the file with the hole, relative to the repository root",
    ),
    (
        "cursor",
        "where the hole starts: 0-based line and byte column, JSON",
    ),
    ("prefix", "the file's text before the hole"),
    ("suffix", "the file's text after the hole"),
    ("ground_truth", "what filled the hole (may be empty)"),
    (
        "enclosing",
        "the innermost definition around the hole (name, kind, lines), JSON",
    ),
    (
        "dependency",
        "what the hole's code depends on: `standalone`, `intra_class`, `intra_file`, `cross_file`",
    ),
    ("tests", "tests known to cover the hole, JSON list"),
    (
        "hints",
        "hints the scenario gives (RAG's similar functions), JSON list",
    ),
    (
        "context",
        "retrieved context (from the state or the latest version), JSON",
    ),
];

/// One top-level field of a task: its value, and its JSON text as the format wrote
/// it (nested objects keep the format's field order).
struct Field {
    name: String,
    value: Json,
    raw: String,
}

/// A JSON object's fields in the order they were written.
struct OrderedFields(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for OrderedFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = OrderedFields;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedFields, A::Error> {
                let mut fields = Vec::new();
                while let Some(field) = map.next_entry::<String, Box<RawValue>>()? {
                    fields.push(field);
                }
                Ok(OrderedFields(fields))
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// The tasks of a task file's text as a table, and the lines left out (named by line
/// number, with why). Blank lines are ignored.
pub fn task_table(text: &str) -> (Table, Vec<Skipped>) {
    let mut tasks: Vec<Vec<Field>> = Vec::new();
    let mut skipped = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let read = serde_json::from_str::<Task>(line)
            .map_err(|e| e.to_string())
            .and_then(|task| serde_json::to_string(&task).map_err(|e| e.to_string()))
            .and_then(|json| {
                serde_json::from_str::<OrderedFields>(&json).map_err(|e| e.to_string())
            });
        match read {
            Ok(OrderedFields(fields)) => tasks.push(
                fields
                    .into_iter()
                    .map(|(name, raw)| Field {
                        value: serde_json::from_str(raw.get()).expect("JSON it just wrote"),
                        raw: raw.get().to_owned(),
                        name,
                    })
                    .collect(),
            ),
            Err(reason) => skipped.push(Skipped {
                item: format!("line {}", index + 1),
                reason: format!("not a task: {reason}"),
            }),
        }
    }
    let names = column_order(&tasks);
    let columns: Vec<Column> = names.iter().map(|name| column_of(name, &tasks)).collect();
    // A text column holds its strings as they are only when every value is a string.
    let raw: Vec<bool> = names
        .iter()
        .map(|name| {
            tasks
                .iter()
                .all(|t| field(t, name).is_none_or(|f| f.value.is_string()))
        })
        .collect();
    let rows = tasks
        .iter()
        .map(|fields| Row {
            repository: field(fields, "repository")
                .and_then(|f| f.value.as_str())
                .unwrap_or_default()
                .to_owned(),
            values: columns
                .iter()
                .zip(&raw)
                .map(|(column, raw)| value_of(field(fields, &column.name), column.kind, *raw))
                .collect(),
        })
        .collect();
    let table = Table {
        kind: DatasetKind::Tasks,
        columns: Cow::Owned(columns),
        rows,
    };
    (table, skipped)
}

/// A task's field `name`, if it has one (and it is not null).
fn field<'a>(fields: &'a [Field], name: &str) -> Option<&'a Field> {
    fields
        .iter()
        .find(|f| f.name == name)
        .filter(|f| !f.value.is_null())
}

/// Every field name of the tasks, in the order the format writes them: a field one
/// task leaves out goes where the tasks that have it put it (after the field before
/// it).
fn column_order(tasks: &[Vec<Field>]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for fields in tasks {
        let mut after: Option<usize> = None;
        for Field { name, .. } in fields {
            let at = match names.iter().position(|n| n == name) {
                Some(at) => at,
                None => {
                    let at = after.map_or(0, |a| a + 1);
                    names.insert(at, name.clone());
                    at
                }
            };
            after = Some(at);
        }
    }
    names
}

/// The column of field `name`: its type from the values the tasks have.
fn column_of(name: &str, tasks: &[Vec<Field>]) -> Column {
    let values: Vec<Option<&Json>> = tasks
        .iter()
        .map(|fields| field(fields, name).map(|f| &f.value))
        .collect();
    let present = || values.iter().flatten();
    let kind = if present().all(|v| v.is_i64() || v.is_boolean()) {
        ColumnType::Int64
    } else if present().all(|v| v.is_number()) {
        ColumnType::Float64
    } else {
        ColumnType::Text
    };
    let doc = FIELD_DOCS.iter().find(|(n, _)| *n == name).map_or_else(
        || Cow::Owned(format!("the task's `{name}` field (JSON text when nested)")),
        |(_, doc)| Cow::Borrowed(*doc),
    );
    Column {
        name: Cow::Owned(name.to_owned()),
        kind,
        nullable: values.iter().any(Option::is_none),
        doc,
    }
}

/// A field's value in a column of type `kind`. A text column holds strings as they are
/// when `raw_strings` (every value of the column is one) and JSON text otherwise, so
/// every row of a column that mixes strings with nested values decodes the same way.
fn value_of(field: Option<&Field>, kind: ColumnType, raw_strings: bool) -> Value {
    let Some(field) = field else {
        return Value::Null;
    };
    match (kind, &field.value) {
        (ColumnType::Int64, Json::Bool(b)) => Value::Int(i64::from(*b)),
        (ColumnType::Int64, v) => v.as_i64().map_or(Value::Null, Value::Int),
        (ColumnType::Float64, v) => v.as_f64().map_or(Value::Null, Value::Float),
        (ColumnType::Text, Json::String(s)) if raw_strings => Value::Text(s.clone()),
        (ColumnType::Text, _) => Value::Text(field.raw.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, raw: &str) -> Field {
        Field {
            name: name.to_owned(),
            value: serde_json::from_str(raw).unwrap(),
            raw: raw.to_owned(),
        }
    }

    #[test]
    fn late_fields_go_where_the_format_puts_them() {
        let task = |names: &[&str]| -> Vec<Field> { names.iter().map(|n| field(n, "1")).collect() };
        let order = column_order(&[
            task(&["version", "id", "file", "tests"]),
            task(&["version", "id", "file", "enclosing", "tests", "context"]),
        ]);
        assert_eq!(
            order,
            ["version", "id", "file", "enclosing", "tests", "context"]
        );
    }

    #[test]
    fn column_types_follow_the_values() {
        let tasks = vec![
            vec![
                field("n", "3"),
                field("x", "0.5"),
                field("s", "\"a\""),
                field("o", "{\"k\":1,\"a\":2}"),
            ],
            vec![field("n", "true"), field("x", "2"), field("s", "\"b\"")],
        ];
        let kinds: Vec<(ColumnType, bool)> = ["n", "x", "s", "o"]
            .iter()
            .map(|name| {
                let c = column_of(name, &tasks);
                (c.kind, c.nullable)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (ColumnType::Int64, false),
                (ColumnType::Float64, false),
                (ColumnType::Text, false),
                (ColumnType::Text, true)
            ]
        );
        // Nested values keep the order they were written in.
        assert_eq!(
            value_of(tasks[0].get(3), ColumnType::Text, false),
            Value::Text("{\"k\":1,\"a\":2}".into())
        );
        assert_eq!(
            value_of(tasks[0].get(2), ColumnType::Text, false),
            Value::Text("\"a\"".into())
        );
        assert_eq!(
            value_of(tasks[1].first(), ColumnType::Int64, true),
            Value::Int(1)
        );
    }
}
