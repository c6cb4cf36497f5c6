//! ContextBench inputs as pure data, and their parsers from JSON text.
//!
//! Formats (the project reference notes, contextbench.md §1–2): the evaluator's gold JSONL
//! (`init_ctx` / `add_ctx` / `gold_ctx`), Hugging Face dataset rows (`gold_context` as a
//! JSON string, or the text format of the evaluator's parquet sample), and the
//! evaluator's prediction JSONL with `traj_data.pred_steps`. Lines are 1-based inclusive.

use std::collections::BTreeMap;

use serde_json::Value;

/// Errors while reading ContextBench inputs.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A line is not valid JSON.
    #[error("line {line}: invalid JSON: {source}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// The parser error.
        source: serde_json::Error,
    },
    /// A row lacks a required field or has the wrong type.
    #[error("line {line}: {what}")]
    Shape {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
}

/// One gold region: a file and a 1-based inclusive line range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldRegion {
    /// Path as written in the dataset (normalised later).
    pub file: String,
    /// First line (1-based).
    pub start_line: i64,
    /// Last line (inclusive).
    pub end_line: i64,
}

/// The gold of one instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Gold {
    /// `inst_id` (or `instance_id`).
    pub instance_id: String,
    /// Whether the row names its id `inst_id`, the only key the reference evaluator
    /// reads: it reports predictions for other rows (Hugging Face rows keyed
    /// `instance_id`) as `missing_gold`, so compat mode ignores them.
    pub keyed_inst_id: bool,
    /// `original_inst_id`, the id predictions use.
    pub original_instance_id: Option<String>,
    /// `init_ctx`, or `gold_ctx` when both `init_ctx` and `add_ctx` are empty.
    pub init: Vec<GoldRegion>,
    /// `add_ctx`.
    pub add: Vec<GoldRegion>,
    /// The gold patch (`patch`), possibly empty.
    pub patch: String,
}

impl Gold {
    /// Whether a prediction with `id` belongs to this gold row.
    pub fn matches(&self, id: &str) -> bool {
        self.original_instance_id.as_deref() == Some(id) || self.instance_id == id
    }
}

/// A 1-based inclusive predicted line span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineSpan {
    /// First line.
    pub start: i64,
    /// Last line (inclusive).
    pub end: i64,
}

/// One retrieval step (or the final context): files, line spans and symbol names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Step {
    /// Files read.
    pub files: Vec<String>,
    /// Line spans per file.
    pub spans: BTreeMap<String, Vec<LineSpan>>,
    /// Definition names per file (mapped to definitions by name when present).
    pub symbols: BTreeMap<String, Vec<String>>,
}

impl Step {
    /// Whether the step names nothing at all.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.spans.is_empty() && self.symbols.is_empty()
    }
}

/// The prediction of one instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prediction {
    /// `instance_id`.
    pub instance_id: String,
    /// `model_patch`, possibly empty.
    pub model_patch: String,
    /// `traj_data.pred_steps` in order.
    pub steps: Vec<Step>,
    /// The final context from `pred_files` / `pred_spans` / `pred_symbols`.
    pub final_context: Step,
}

fn shape(line: usize, what: impl Into<String>) -> InputError {
    InputError::Shape {
        line,
        what: what.into(),
    }
}

fn regions(v: &Value, line: usize) -> Result<Vec<GoldRegion>, InputError> {
    let Some(arr) = v.as_array() else {
        return Ok(Vec::new());
    };
    arr.iter()
        .map(|r| {
            let file = r["file"]
                .as_str()
                .ok_or_else(|| shape(line, "gold region without a \"file\" string"))?;
            let num = |k: &str| {
                r[k].as_i64()
                    .ok_or_else(|| shape(line, format!("gold region without an integer \"{k}\"")))
            };
            Ok(GoldRegion {
                file: file.to_owned(),
                start_line: num("start_line")?,
                end_line: num("end_line")?,
            })
        })
        .collect()
}

/// Parses a `gold_context` string: a JSON list of regions, or the text format
/// `context0：\nfile: …\nstart_line: N\nend_line: M\n<code>` (full-width colon).
pub fn parse_gold_context(text: &str) -> Result<Vec<GoldRegion>, InputError> {
    let trimmed = text.trim();
    if trimmed.starts_with('[') {
        let v: Value =
            serde_json::from_str(trimmed).map_err(|source| InputError::Json { line: 1, source })?;
        return regions(&v, 1);
    }
    let mut out = Vec::new();
    let mut file: Option<String> = None;
    let mut start: Option<i64> = None;
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("file: ") {
            file = Some(f.trim().to_owned());
        } else if let Some(s) = l.strip_prefix("start_line: ") {
            start = s.trim().parse().ok();
        } else if let Some(e) = l.strip_prefix("end_line: ") {
            if let (Some(f), Some(s), Ok(e)) = (file.take(), start.take(), e.trim().parse()) {
                out.push(GoldRegion {
                    file: f,
                    start_line: s,
                    end_line: e,
                });
            }
        }
    }
    Ok(out)
}

/// Parses one gold row (evaluator JSONL or Hugging Face dataset row).
pub fn parse_gold_row(v: &Value, line: usize) -> Result<Gold, InputError> {
    let id = v["inst_id"]
        .as_str()
        .or_else(|| v["instance_id"].as_str())
        .ok_or_else(|| shape(line, "gold row without \"inst_id\" or \"instance_id\""))?;
    let mut init = regions(&v["init_ctx"], line)?;
    let add = regions(&v["add_ctx"], line)?;
    if init.is_empty() && add.is_empty() {
        init = match &v["gold_ctx"] {
            Value::Array(_) => regions(&v["gold_ctx"], line)?,
            _ => match &v["gold_context"] {
                Value::String(s) => parse_gold_context(s).map_err(|e| match e {
                    InputError::Json { source, .. } => InputError::Json { line, source },
                    other => other,
                })?,
                Value::Array(_) => regions(&v["gold_context"], line)?,
                _ => Vec::new(),
            },
        };
    }
    Ok(Gold {
        instance_id: id.to_owned(),
        keyed_inst_id: v["inst_id"].is_string(),
        original_instance_id: v["original_inst_id"].as_str().map(str::to_owned),
        init,
        add,
        patch: v["patch"].as_str().unwrap_or_default().to_owned(),
    })
}

fn jsonl_values(text: &str) -> impl Iterator<Item = (usize, Result<Value, InputError>)> + '_ {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            (
                i + 1,
                serde_json::from_str(l).map_err(|source| InputError::Json {
                    line: i + 1,
                    source,
                }),
            )
        })
}

/// Parses gold JSONL (one row per line).
pub fn parse_gold_jsonl(text: &str) -> Result<Vec<Gold>, InputError> {
    jsonl_values(text)
        .map(|(line, v)| parse_gold_row(&v?, line))
        .collect()
}

fn parse_spans(v: &Value, line: usize) -> Result<BTreeMap<String, Vec<LineSpan>>, InputError> {
    let mut out = BTreeMap::new();
    let Some(obj) = v.as_object() else {
        return Ok(out);
    };
    for (file, spans) in obj {
        let list = spans
            .as_array()
            .ok_or_else(|| shape(line, format!("spans of {file} are not a list")))?;
        let mut parsed = Vec::with_capacity(list.len());
        for s in list {
            let num = |k: &str| {
                s[k].as_i64().ok_or_else(|| {
                    shape(line, format!("span of {file} without an integer \"{k}\""))
                })
            };
            parsed.push(LineSpan {
                start: num("start")?,
                end: num("end")?,
            });
        }
        out.insert(file.clone(), parsed);
    }
    Ok(out)
}

fn parse_symbols(v: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    if let Some(obj) = v.as_object() {
        for (file, names) in obj {
            let names: Vec<String> = names
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            out.insert(file.clone(), names);
        }
    }
    out
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses `traj_data` (`pred_steps`, `pred_files`, `pred_spans`, `pred_symbols`).
pub fn parse_traj_data(traj: &Value, line: usize) -> Result<(Vec<Step>, Step), InputError> {
    let mut steps = Vec::new();
    if let Some(arr) = traj["pred_steps"].as_array() {
        for s in arr {
            steps.push(Step {
                files: strings(&s["files"]),
                spans: parse_spans(&s["spans"], line)?,
                symbols: parse_symbols(&s["symbols"]),
            });
        }
    }
    let final_context = Step {
        files: strings(&traj["pred_files"]),
        spans: parse_spans(&traj["pred_spans"], line)?,
        symbols: parse_symbols(&traj["pred_symbols"]),
    };
    Ok((steps, final_context))
}

/// Parses one prediction row.
pub fn parse_prediction_row(v: &Value, line: usize) -> Result<Prediction, InputError> {
    let id = v["instance_id"]
        .as_str()
        .ok_or_else(|| shape(line, "prediction row without \"instance_id\""))?;
    let (steps, final_context) = parse_traj_data(&v["traj_data"], line)?;
    Ok(Prediction {
        instance_id: id.to_owned(),
        model_patch: v["model_patch"].as_str().unwrap_or_default().to_owned(),
        steps,
        final_context,
    })
}

/// Parses prediction JSONL.
pub fn parse_predictions_jsonl(text: &str) -> Result<Vec<Prediction>, InputError> {
    jsonl_values(text)
        .map(|(line, v)| parse_prediction_row(&v?, line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_context_text_format() {
        let text = "context0：\nfile: a.py\nstart_line: 3\nend_line: 5\ncode\n\ncontext1：\nfile: b.py\nstart_line: 1\nend_line: 1\nx\n";
        let r = parse_gold_context(text).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1],
            GoldRegion {
                file: "b.py".into(),
                start_line: 1,
                end_line: 1
            }
        );
    }

    #[test]
    fn hugging_face_row_with_gold_context_string() {
        let v = serde_json::json!({
            "instance_id": "SWE-Bench-Verified__python__x", "original_inst_id": "o__r-1",
            "gold_context": "[{\"file\": \"a.py\", \"start_line\": 2, \"end_line\": 9, \"content\": \"..\"}]",
            "patch": "diff"});
        let g = parse_gold_row(&v, 1).unwrap();
        assert!(g.matches("o__r-1") && g.matches("SWE-Bench-Verified__python__x"));
        assert_eq!(
            g.init,
            [GoldRegion {
                file: "a.py".into(),
                start_line: 2,
                end_line: 9
            }]
        );
        assert_eq!(g.patch, "diff");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_predictions_jsonl("{\"instance_id\": \"a\"}\n{not json}\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2: invalid JSON"), "{e}");
        let e = parse_gold_jsonl("{\"gold_ctx\": []}\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1: gold row without \"inst_id\" or \"instance_id\""
        );
    }

    #[test]
    fn gold_falls_back_to_gold_ctx() {
        let v: Value = serde_json::from_str(
            r#"{"inst_id":"x","init_ctx":[],"add_ctx":[],"gold_ctx":[{"file":"m.py","start_line":4,"end_line":5}]}"#,
        )
        .unwrap();
        let g = parse_gold_row(&v, 1).unwrap();
        assert_eq!(g.init.len(), 1);
        assert!(g.matches("x"));
    }
}
