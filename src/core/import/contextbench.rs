//! ContextBench task rows → `imported` trajectories.
//!
//! A gold row gives `gold.context` (its regions as the evaluator reads them: `init_ctx`
//! then `add_ctx`, or `gold_ctx` / `gold_context` when both are empty), converted from
//! 1-based inclusive lines to 0-based half-open [`LineRange`]s (`start_line − 1 ..
//! end_line`). The agent's reads come from a Benchkit trace row (converted with
//! [`trace_to_tool_steps`]) or a prediction row's `traj_data.pred_steps`.
//!
//! **Step convention** (what `nextedit context` reads back): each step becomes `Read`
//! events with `role: target` that share one `t_ms` (the step's 0-based index); reads
//! with equal `t_ms` form one step, in event order. A read with a non-empty `lines`
//! range is a span `lines.start + 1 ..= lines.end` of its file; a read with an empty
//! range (`0..0`) names the file only. The step's files are the distinct files of its
//! reads; the final context is the union of all steps. `Read.file` keeps the path as
//! the agent wrote it (`/testbed/mod.py`), so the evaluator's own path resolution
//! applies unchanged; `files[]` lists repository paths.

use serde_json::Value;

use crate::core::metrics::contextbench::{
    Conversion, Gold, GoldRegion, InputError, LineCounts, LineSpan, Mode, RepoView, ToolStep,
    normalize_gold_path, parse_gold_row, parse_prediction_row, trace_to_tool_steps,
};
use crate::core::trajectory::{
    ContextRegion, Event, EventBody, FileEntry, LineRange, Read, ReadRole, RelPath, SessionInfo,
    SessionKind, Trajectory,
};

/// `gold.source` of imported ContextBench tasks.
pub const GOLD_SOURCE: &str = "contextbench";
/// `via` of reads from a prediction's `traj_data` (traces name the tool instead).
pub const VIA_TRAJ_DATA: &str = "traj_data";

/// What makes a task impossible to import exactly.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImportError {
    /// A gold region whose lines are not a 1-based inclusive range.
    #[error(
        "{instance}: gold region {index} ({file}): lines {start}..={end} are not a 1-based inclusive range"
    )]
    GoldRegion {
        /// Instance id.
        instance: String,
        /// 0-based position among the gold regions.
        index: usize,
        /// File as written.
        file: String,
        /// `start_line`.
        start: i64,
        /// `end_line`.
        end: i64,
    },
    /// A read span whose lines are not a 1-based inclusive range.
    #[error(
        "{instance}: step {step} ({file}): span {start}..={end} is not a 1-based inclusive range"
    )]
    Span {
        /// Instance id.
        instance: String,
        /// 1-based step number.
        step: usize,
        /// File as written.
        file: String,
        /// First line.
        start: i64,
        /// Last line.
        end: i64,
    },
}

/// A gold row and the commit it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldTask {
    /// The row as the evaluator reads it.
    pub gold: Gold,
    /// `commit` (the repository's base commit), when given.
    pub commit: Option<String>,
}

/// Parses one gold row (evaluator JSONL or Hugging Face row).
pub fn parse_gold_task(row: &Value, line: usize) -> Result<GoldTask, InputError> {
    Ok(GoldTask {
        gold: parse_gold_row(row, line)?,
        commit: row["commit"].as_str().map(str::to_owned),
    })
}

/// One prediction or trace row, as steps with the tool that made each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskReads {
    /// `instance_id`.
    pub instance_id: String,
    /// Other ids a trace row goes by (`metadata.original_inst_id`, `metadata.inst_id`).
    pub aliases: Vec<String>,
    /// Whether the row was a Benchkit trace.
    pub from_trace: bool,
    /// The steps in order (the final context as the only step when a prediction has
    /// no `pred_steps`, as the evaluator scores it).
    pub steps: Vec<ToolStep>,
    /// Steps of `pred_steps` that name nothing: reads cannot carry them (the
    /// evaluator's compat mode counts them as steps).
    pub empty_steps: usize,
}

/// Parses a Benchkit trace row (`metadata.tool_invocations_*`) or an evaluator
/// prediction row (`traj_data`), detected like `nextedit score contextbench` does.
pub fn parse_reads(
    row: &Value,
    line: usize,
    conversion: Conversion,
    lines: &dyn LineCounts,
) -> Result<TaskReads, InputError> {
    let meta = &row["metadata"];
    let is_trace = row.get("traj_data").is_none()
        && (meta.get("tool_invocations_curated").is_some()
            || meta.get("tool_invocations_raw").is_some());
    if is_trace {
        return Ok(TaskReads {
            instance_id: row["instance_id"].as_str().unwrap_or_default().to_owned(),
            aliases: ["original_inst_id", "inst_id"]
                .iter()
                .filter_map(|k| meta[*k].as_str().map(str::to_owned))
                .collect(),
            from_trace: true,
            steps: trace_to_tool_steps(row, conversion, lines),
            empty_steps: 0,
        });
    }
    let pred = parse_prediction_row(row, line)?;
    let steps = if pred.steps.is_empty() {
        vec![pred.final_context]
    } else {
        pred.steps
    };
    let empty_steps = steps.iter().filter(|s| s.is_empty()).count();
    Ok(TaskReads {
        instance_id: pred.instance_id,
        aliases: Vec::new(),
        from_trace: false,
        empty_steps,
        steps: steps
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|step| ToolStep {
                tool: VIA_TRAJ_DATA.into(),
                step,
            })
            .collect(),
    })
}

/// The reads of `gold`'s task, matched by instance id like the evaluator (the
/// prediction's id or a trace's aliases equal `inst_id` or `original_inst_id`); a
/// single trace against a single gold row pairs up even when Benchkit's ids differ.
pub fn match_reads<'a>(gold: &Gold, golds: usize, reads: &'a [TaskReads]) -> Option<&'a TaskReads> {
    reads
        .iter()
        .find(|r| gold.matches(&r.instance_id) || r.aliases.iter().any(|a| gold.matches(a)))
        .or_else(|| (golds == 1 && reads.len() == 1 && reads[0].from_trace).then(|| &reads[0]))
}

/// An imported task and what could not be carried over.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTask {
    /// The `imported` trajectory.
    pub trajectory: Trajectory,
    /// Paths (as written) that name no file of the repository, when one was given.
    pub missing_files: Vec<String>,
    /// Symbol names in the steps (`pred_symbols`), which reads cannot carry.
    pub ignored_symbols: usize,
}

fn line_range(start: i64, end: i64) -> Option<LineRange> {
    (start >= 1 && end >= start).then(|| LineRange::new(start as usize - 1, end as usize))
}

/// A path as written → a repository path: the evaluator's normalisation (quotes,
/// `\`, sandbox prefixes), then its suffix search when that names no file.
fn repo_path(raw: &str, repo: &dyn RepoView) -> Option<(String, String)> {
    let p = raw.trim().trim_matches(['\'', '"']).replace('\\', "/");
    let direct = normalize_gold_path(&p, Mode::Fixed);
    if let Some(text) = repo.read(&direct) {
        return Some((direct, text));
    }
    let parts: Vec<&str> = direct.split('/').collect();
    (1..parts.len()).find_map(|k| {
        let cand = parts[k..].join("/");
        repo.read(&cand).map(|text| (cand, text))
    })
}

/// Adds the files `named` to the trajectory once each, with their text from `repo`
/// when given; returns those the repository does not have (or whose path leaves it).
fn add_named_files(
    trajectory: &mut Trajectory,
    named: &[String],
    repo: Option<&dyn RepoView>,
) -> Vec<String> {
    let mut missing_files = Vec::new();
    for raw in named {
        let entry = match repo {
            Some(repo) => match repo_path(raw, repo) {
                Some((path, text)) => FileEntry::new(path, Some(text)),
                None => {
                    if !missing_files.contains(raw) {
                        missing_files.push(raw.clone());
                    }
                    continue;
                }
            },
            None => FileEntry::new(normalize_gold_path(raw, Mode::Fixed), None),
        };
        // Files are what replay and `context` write or read under a root: a path that
        // is still absolute or climbs out after normalisation is left out like a file
        // the repository does not have (reads and gold keep the path as written).
        let entry = match RelPath::parse(&entry.path) {
            Ok(rel) => FileEntry {
                path: rel.as_str().to_owned(),
                ..entry
            },
            Err(_) => {
                if !missing_files.contains(raw) {
                    missing_files.push(raw.clone());
                }
                continue;
            }
        };
        if !trajectory.files.iter().any(|f| f.path == entry.path) {
            trajectory.files.push(entry);
        }
    }
    missing_files
}

/// Builds the trajectory of one task: gold context, one step of reads per step, and
/// the files named (with their text from `repo` when given).
pub fn import_task(
    task: &GoldTask,
    reads: Option<&TaskReads>,
    repo: Option<&dyn RepoView>,
) -> Result<ImportedTask, ImportError> {
    let gold = &task.gold;
    let instance = gold.instance_id.clone();
    let mut info = SessionInfo::new(instance.clone(), SessionKind::Imported);
    info.git_head = task.commit.clone();
    let mut trajectory = Trajectory::new(info);
    let regions: Vec<&GoldRegion> = gold.init.iter().chain(&gold.add).collect();
    for (index, g) in regions.iter().enumerate() {
        let lines =
            line_range(g.start_line, g.end_line).ok_or_else(|| ImportError::GoldRegion {
                instance: instance.clone(),
                index,
                file: g.file.clone(),
                start: g.start_line,
                end: g.end_line,
            })?;
        trajectory.gold.context.push(ContextRegion {
            file: g.file.clone(),
            lines,
        });
    }
    trajectory.gold.source = Some(GOLD_SOURCE.into());
    trajectory.gold.instance_id = Some(instance.clone());

    let mut named: Vec<String> = regions.iter().map(|g| g.file.clone()).collect();
    let mut ignored_symbols = 0;
    for (k, ts) in reads.map_or(&[][..], |r| &r.steps).iter().enumerate() {
        let step = &ts.step;
        ignored_symbols += step.symbols.values().map(Vec::len).sum::<usize>();
        let mut push = |file: &str, lines: LineRange| {
            let seq = trajectory.events.len() as u64;
            trajectory.events.push(Event {
                seq,
                t_ms: k as f64,
                body: EventBody::Read(Read {
                    file: file.to_owned(),
                    lines,
                    via: ts.tool.clone(),
                    role: ReadRole::Target,
                }),
            });
            named.push(file.to_owned());
        };
        let span_reads = |file: &str, spans: &[LineSpan]| {
            spans
                .iter()
                .map(|s| {
                    line_range(s.start, s.end).ok_or_else(|| ImportError::Span {
                        instance: instance.clone(),
                        step: k + 1,
                        file: file.to_owned(),
                        start: s.start,
                        end: s.end,
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        for file in &step.files {
            match step.spans.get(file).filter(|s| !s.is_empty()) {
                Some(spans) => {
                    for lines in span_reads(file, spans)? {
                        push(file, lines);
                    }
                }
                None => push(file, LineRange::new(0, 0)),
            }
        }
        for (file, spans) in step.spans.iter().filter(|(f, _)| !step.files.contains(f)) {
            for lines in span_reads(file, spans)? {
                push(file, lines);
            }
        }
    }

    let missing_files = add_named_files(&mut trajectory, &named, repo);
    Ok(ImportedTask {
        trajectory,
        missing_files,
        ignored_symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_convert_to_half_open() {
        assert_eq!(line_range(4, 5), Some(LineRange::new(3, 5)));
        assert_eq!(line_range(1, 1), Some(LineRange::new(0, 1)));
        assert_eq!(line_range(0, 3), None);
        assert_eq!(line_range(5, 4), None);
    }
}
