//! Historian-compatible results: `{project}-{sha10}-{suggester}-simulation-results.json`
//! with Historian's keys, built step by step from the replay state.
//!
//! Differences from Historian's own files, all fixes of its documented bugs: each
//! record's `gdth_snapshots` is the state of *that* step (Historian aliased the final
//! state into every record); matching is one to one; prediction `idx` is the
//! suggester's rank; `tp@k` is always computed (Historian left it null when the first
//! prediction had no confidence); overlapping predictions, which a snapshot cannot
//! hold, are listed under `overlapping_predictions`.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::engine::StepRecord;
use super::state::ReplayState;
use crate::core::metrics::flow::FlowClass;
use crate::core::trajectory::{OrderKind, Trajectory};

/// Collects Historian records while a replay runs.
#[derive(Debug, Default)]
pub struct HistorianLog {
    records: Vec<Value>,
    order: Vec<usize>,
    /// The commit snapshot with every edit applied, taken after the last step.
    final_snapshot: Option<Value>,
}

/// Lines of `text`, each with its line break.
fn lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// An edit as Historian's dict window.
fn window(state: &ReplayState, idx: usize, simulated: bool, allowed: bool) -> Value {
    let edit = &state.edits()[idx];
    let base = state.base_lines(&edit.file).unwrap_or(&[]);
    let end = edit.base_start + edit.before.len();
    // Child coordinates: every edit above this one applied.
    let child_start = state
        .edits_in(&edit.file)
        .into_iter()
        .take_while(|&j| j != idx)
        .map(|j| state.edits()[j].after.len() as isize - state.edits()[j].before.len() as isize)
        .sum::<isize>()
        + edit.base_start as isize;
    let kind = match (edit.before.is_empty(), edit.after.is_empty()) {
        (true, _) => "insert",
        (_, true) => "delete",
        _ => "replace",
    };
    json!({
        "type": kind,
        "before": edit.before,
        "after": edit.after,
        "parent_version_range": {"start": edit.base_start, "end": end},
        "child_version_range": {"start": child_start, "end": child_start as usize + edit.after.len()},
        "prefix": base[edit.base_start.saturating_sub(3)..edit.base_start],
        "suffix": base[end..(end + 3).min(base.len())],
        "structural_path": [],
        "idx": idx,
        "file_path": edit.file,
        "simulated": simulated,
        "allowed_as_next": allowed,
        "currently_start_at_line": state.current_range(idx).0,
    })
}

/// Files with gold edits, sorted.
fn changed_files(state: &ReplayState) -> BTreeSet<String> {
    state.edits().iter().map(|e| e.file.clone()).collect()
}

/// The commit snapshot with `simulated`/`allowed_as_next` flags for one moment.
fn commit_snapshot(
    state: &ReplayState,
    applied: &dyn Fn(usize) -> bool,
    allowed: &[usize],
) -> Value {
    let mut out = serde_json::Map::new();
    for file in changed_files(state) {
        let base = state.base_lines(&file).unwrap_or(&[]);
        let mut parts: Vec<Value> = Vec::new();
        let mut at = 0;
        for idx in state.edits_in(&file) {
            let edit = &state.edits()[idx];
            if edit.base_start > at {
                parts.push(json!(base[at..edit.base_start]));
            }
            parts.push(window(state, idx, applied(idx), allowed.contains(&idx)));
            at = edit.base_start + edit.before.len();
        }
        if at < base.len() {
            parts.push(json!(base[at..]));
        }
        out.insert(file, Value::Array(parts));
    }
    Value::Object(out)
}

/// Historian's "not-simulated snapshot": applied edits folded into the text,
/// windows for the edits still to come.
fn not_simulated_snapshot(
    state: &ReplayState,
    applied: &dyn Fn(usize) -> bool,
    allowed: &[usize],
) -> Value {
    let mut out = serde_json::Map::new();
    for file in changed_files(state) {
        let base = state.base_lines(&file).unwrap_or(&[]);
        let mut parts: Vec<Value> = Vec::new();
        let mut plain: Vec<String> = Vec::new();
        let mut at = 0;
        for idx in state.edits_in(&file) {
            let edit = &state.edits()[idx];
            plain.extend_from_slice(&base[at..edit.base_start]);
            if applied(idx) {
                plain.extend(edit.after.iter().cloned());
            } else {
                if !plain.is_empty() {
                    parts.push(json!(std::mem::take(&mut plain)));
                }
                parts.push(window(state, idx, false, allowed.contains(&idx)));
            }
            at = edit.base_start + edit.before.len();
        }
        plain.extend_from_slice(&base[at..]);
        if !plain.is_empty() {
            parts.push(json!(plain));
        }
        out.insert(file, Value::Array(parts));
    }
    Value::Object(out)
}

/// Current lines of a file as they were before edit `undo` (if given) was applied.
fn lines_before(state: &ReplayState, file: &str, undo: Option<usize>) -> Vec<String> {
    let mut current: Vec<String> = state
        .lines(file)
        .map(<[String]>::to_vec)
        .unwrap_or_default();
    if let Some(idx) = undo
        && state.edits()[idx].file == file
        && state.is_applied(idx)
    {
        let (start, end) = state.current_range(idx);
        current.splice(start..end, state.edits()[idx].before.iter().cloned());
    }
    current
}

/// Historian's next-edit snapshot of edit `idx`, in the state before it was applied.
fn next_edit_snapshot(state: &ReplayState, idx: usize) -> Value {
    let mut out = serde_json::Map::new();
    let edit = &state.edits()[idx];
    for file in changed_files(state) {
        let current = lines_before(state, &file, Some(idx));
        if file != edit.file {
            out.insert(file, json!([current]));
            continue;
        }
        // Its start before it was applied: its current start now (edits above are the same).
        let start = state.current_range(idx).0;
        let end = start + edit.before.len();
        out.insert(
            file,
            json!([
                current[..start],
                window(state, idx, false, true),
                current[end..]
            ]),
        );
    }
    Value::Object(out)
}

impl HistorianLog {
    /// Records the initial edit (state after it).
    pub fn started(&mut self, initial: usize, state: &ReplayState) {
        self.order.push(initial);
        let next = next_edit_snapshot(state, initial);
        self.records.push(json!({
            "status": "init",
            "pred_snapshots": next,
            "gdth_snapshots": commit_snapshot(state, &|i| state.is_applied(i), &[]),
            "next_edit_snapshots": next,
            "evaluations": {
                "flow_pattern": {"flow_keeping": [initial], "flow_jumping": [], "flow_breaking": [], "flow_reverting": []},
                "matched_locations": []
            }
        }));
    }

    /// Records a finished step (state after its gold edit).
    pub fn step(&mut self, record: &StepRecord, state: &ReplayState) {
        let applied = record.applied.0;
        self.order.push(applied);
        if state.remaining().is_empty() {
            self.final_snapshot = Some(commit_snapshot(state, &|_| true, &[]));
        }
        let before_step = |i: usize| state.is_applied(i) && i != applied;
        let mut flows: [Vec<usize>; 4] = Default::default();
        for p in &record.predictions {
            let slot = match p.class {
                FlowClass::Keeping => 0,
                FlowClass::Jumping => 1,
                FlowClass::Breaking => 2,
                FlowClass::Reverting => 3,
            };
            flows[slot].push(p.rank);
        }
        let prf = record.flow.prf();
        let counts = record.flow.counts();
        let (pred_snapshots, overlapping) = self.prediction_snapshots(record, state);
        let previously_applied: serde_json::Map<String, Value> = state
            .applied_order()
            .iter()
            .filter(|&&i| i != applied)
            .map(|&i| {
                let edit = &state.edits()[i];
                let (start, end) = state.current_range(i);
                (i.to_string(), json!({"idx": i, "file_path": edit.file, "start_line": start, "atLines": (start..end).collect::<Vec<_>>()}))
            })
            .collect();
        let allowed: Vec<usize> = record.allowed.iter().map(|i| i.0).collect();
        self.records.push(json!({
            "status": if state.remaining().is_empty() { "done" } else { "suggestion(location+content)" },
            "pred_snapshots": pred_snapshots,
            "overlapping_predictions": overlapping,
            "gdth_snapshots": commit_snapshot(state, &|i| state.is_applied(i), &[]),
            "curr_gdth_snapshots": not_simulated_snapshot(state, &before_step, &allowed),
            "previously_applied_locations": previously_applied,
            "evaluations": {
                "flow_keeping": flows[0], "flow_jumping": flows[1], "flow_breaking": flows[2], "flow_reverting": flows[3],
                "tp@1": record.flow.tp_at(1), "tp@3": record.flow.tp_at(3), "tp@5": record.flow.tp_at(5), "tp@10": record.flow.tp_at(10),
                "precision@all": prf.precision, "recall@all": prf.recall, "f1_score@all": prf.f1,
                "tp@all": counts.tp, "fp@all": counts.fp, "fn@all": counts.fn_,
                "latency": record.suggest_latency.as_secs_f64(),
                "BLEU-4": record.content.as_ref().map(|c| c.bleu),
            },
            "next_edit_snapshots": next_edit_snapshot(state, applied),
            "partial_order_graph": null,
        }));
    }

    /// Predictions as snapshots of the files before the step's edit.
    fn prediction_snapshots(
        &self,
        record: &StepRecord,
        state: &ReplayState,
    ) -> (Value, Vec<Value>) {
        let mut out = serde_json::Map::new();
        let mut overlapping = Vec::new();
        let mut by_file: std::collections::BTreeMap<&str, Vec<&super::engine::PredictionRecord>> =
            Default::default();
        for p in &record.predictions {
            by_file.entry(p.edit.file.as_str()).or_default().push(p);
        }
        for (file, mut predictions) in by_file {
            predictions.sort_by_key(|p| (p.edit.start_line, p.rank));
            let current = lines_before(state, file, Some(record.applied.0));
            let mut parts: Vec<Value> = Vec::new();
            let mut at = 0;
            for p in predictions {
                let annotated = json!({
                    "before": current.get(p.edit.start_line..p.edit.end_line).unwrap_or(&[]),
                    "after": lines(&p.edit.text),
                    "confidence": p.edit.confidence,
                    "idx": p.rank,
                    "matchWith": p.matched.map(|m| m.0),
                    "flowKeeping": p.class == FlowClass::Keeping,
                    "file_path": file,
                });
                if p.edit.start_line < at || p.edit.end_line > current.len() {
                    overlapping.push(annotated);
                    continue;
                }
                if p.edit.start_line > at {
                    parts.push(json!(current[at..p.edit.start_line]));
                }
                parts.push(annotated);
                at = p.edit.end_line;
            }
            if at < current.len() {
                parts.push(json!(current[at..]));
            }
            out.insert(file.to_string(), Value::Array(parts));
        }
        (Value::Object(out), overlapping)
    }

    /// The whole results file.
    pub fn finish(&self, trajectory: &Trajectory, repo_dir: &str) -> Value {
        let commit = trajectory.session.commit.as_ref();
        let sha = commit.map_or(trajectory.session.id.as_str(), |c| c.sha.as_str());
        let indices = trajectory.edit_indices();
        let index = |id: &str| indices.get(id).map(|i| i.0);
        let partial_orders: Vec<Value> = trajectory
            .order
            .edges
            .iter()
            .filter_map(|e| {
                let (src, tgt) = (index(&e.from)?, index(&e.to)?);
                let reason = e.reasons.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>().join(", ");
                Some(json!({"src": src, "tgt": tgt, "reason": reason, "bidirectional": e.kind == OrderKind::Bi}))
            })
            .collect();
        json!({
            "commit_sha": sha.chars().take(10).collect::<String>(),
            "project_name": commit.and_then(|c| c.project.clone()).unwrap_or_default(),
            "repo_dir": repo_dir,
            "commit_url": "",
            "commit_message": commit.and_then(|c| c.message.clone()).unwrap_or_default(),
            "commit_snapshots": self.final_snapshot,
            "partial_orders": if partial_orders.is_empty() { Value::Null } else { Value::Array(partial_orders) },
            "simulation_order": self.order,
            "SUT_prediction_records": self.records,
        })
    }

    /// Writes `results` (from [`HistorianLog::finish`]) to `path` as the plain JSON
    /// Historian's own analysis reads, or xz-compressed (`xz`), readable only by its
    /// owner (it holds the repository's code). Every step's snapshots repeat the changed
    /// files whole, which is Historian's format; xz's window folds the repeats (a 4.2 MB
    /// file becomes 28 KB), gzip's would not.
    pub fn write(results: &Value, path: &std::path::Path, xz: bool) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        let out = std::io::BufWriter::new(file);
        if !xz {
            let mut out = out;
            serde_json::to_writer(&mut out, results)?;
            return out.flush();
        }
        // Preset 1: the window (1 MiB dictionary) covers a step's files; higher presets
        // are slower for little gain on these files.
        let mut xz = liblzma::write::XzEncoder::new(out, 1);
        serde_json::to_writer(&mut xz, results)?;
        xz.finish()?.flush()
    }

    /// Historian's file name for this trajectory and suggester (without the `.xz` that
    /// [`HistorianLog::write`]'s compressed files add).
    pub fn file_name(trajectory: &Trajectory, suggester: &str) -> String {
        let commit = trajectory.session.commit.as_ref();
        let project = commit
            .and_then(|c| c.project.clone())
            .unwrap_or_else(|| "session".to_string());
        let sha: String = commit
            .map_or(trajectory.session.id.as_str(), |c| c.sha.as_str())
            .chars()
            .take(10)
            .collect();
        let clean = |s: &str| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
        };
        // Long command lines make unwieldy names: keep the suggester part to 60 characters.
        let suggester: String = clean(suggester).chars().take(60).collect();
        format!(
            "{}-{}-{suggester}-simulation-results.json",
            clean(&project),
            clean(&sha)
        )
    }
}
