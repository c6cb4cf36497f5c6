//! A trajectory as ContextBench inputs: its reads as retrieval steps, its edits (and
//! the definitions they use) as gold context, its files as the repository.
//!
//! Everything is scored in the coordinates of the trajectory's *final* texts (the
//! state the gold is computed on): a read made earlier is carried forward through
//! the changes that followed it. Conventions (`docs/metrics.md` §5.4):
//!
//! - one step per action: each `open` read, each `request` read (with the `target`
//!   reads its answer pointed to, i.e. the later targets of the same method), each
//!   `visible_ranges` signal;
//! - an empty line range names the file only (documentSymbol, a whole-file tool read);
//! - an `open` names the whole file as opened, unless the editor sent visible ranges
//!   for that file: then the open names the file only and the ranges say what was seen;
//! - lines are 0-based half-open here and 1-based inclusive in ContextBench.
//!
//! The default gold is the edited lines plus the definitions they use, or the
//! trajectory's `gold.context` when it has one. [`TrajectoryRepo`] is a `RepoView` over
//! the trajectory's own texts (`nextedit context`), whose coverage curve comes as CSV
//! or JSON (`SessionScores::coverage_curve_csv`, `coverage_curve_json`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::Serialize;

use super::evaluate::{
    ContextBenchConfig, GranularityScore, InstanceError, InstanceResult, Mode, PerGranularity,
    RepoView, evaluate, normalize_gold_path,
};
use super::input::{Gold, GoldRegion, LineSpan, Prediction, Step};
use crate::core::metrics::lcs::lcs_pairs;
use crate::core::syntax::Language;
use crate::core::syntax::structure::{Role, analyze};
use crate::core::trajectory::{
    Change, ContextRegion, EventBody, LineRange, ReadRole, SignalKind, SignalRange, Trajectory,
};

/// Receivers and placeholders: using them says nothing about which definition matters.
const IGNORED_NAMES: [&str; 6] = ["self", "cls", "this", "super", "_", "it"];

/// One location of a context step, in the coordinates of the final texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextRead {
    /// File path (as in the trajectory's `files`).
    pub file: String,
    /// Lines read (0-based, half-open); `None` names the file only.
    pub lines: Option<LineRange>,
}

/// One retrieval step: what one action read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextStep {
    /// When the action happened (ms since the session start); `None` in replay.
    pub t_ms: Option<f64>,
    /// How: `open`, an LSP method, `visible_ranges`, or a replay call.
    pub via: String,
    /// The locations read.
    pub reads: Vec<ContextRead>,
}

/// Where a line lands after a change: the head of the first touched line stays, the
/// tail of the last touched line moves to the change's last new line.
fn shift_line(line: usize, change: &Change, head: bool) -> usize {
    if line < change.start_line {
        line
    } else if line > change.end_line {
        line - change.end_line + change.new_end_line
    } else if head && line == change.start_line {
        change.start_line
    } else if !head && line == change.end_line {
        change.new_end_line
    } else {
        line.clamp(change.start_line, change.new_end_line)
    }
}

/// A non-empty line range carried through one change; touched lines widen to the
/// text that replaced them.
fn shift_range(lines: LineRange, change: &Change) -> LineRange {
    let start = shift_line(lines.start, change, true);
    let last = shift_line(lines.end - 1, change, false).max(start);
    LineRange::new(start, last + 1)
}

/// A signal's range → lines; an end at column 0 of a later line excludes that line.
fn lsp_range_lines(range: &SignalRange) -> LineRange {
    let (start, end_line) = (range.start_line as usize, range.end_line as usize);
    let end = if range.end_character == 0 && end_line > start {
        end_line
    } else {
        end_line + 1
    };
    LineRange::new(start, end.max(start + 1))
}

/// The trajectory's reads as ContextBench steps, in temporal order, in final coordinates.
pub fn session_steps(trajectory: &Trajectory) -> Vec<ContextStep> {
    let visible: BTreeSet<&str> = trajectory
        .events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Signal(s) if s.kind == SignalKind::VisibleRanges => s.file.as_deref(),
            _ => None,
        })
        .collect();
    let mut steps: Vec<ContextStep> = Vec::new();
    // Reads with lines per file, carried forward through every later change of that file.
    let mut tracked: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
    let mut last_request: HashMap<&str, usize> = HashMap::new();
    // Imported tool calls (ContextBench, Benchkit) are target reads with no request:
    // those sharing one time and one tool are one call, so one step.
    let mut last_call: Option<(f64, &str, usize)> = None;
    for event in &trajectory.events {
        match &event.body {
            EventBody::Read(read) => {
                let names_file_only = read.lines.is_empty()
                    || (read.role == ReadRole::Open && visible.contains(read.file.as_str()));
                let item = ContextRead {
                    file: read.file.clone(),
                    lines: (!names_file_only).then_some(read.lines),
                };
                let step = match read.role {
                    ReadRole::Target if last_request.contains_key(read.via.as_str()) => {
                        last_request[read.via.as_str()]
                    }
                    ReadRole::Target
                        if last_call
                            .is_some_and(|(t, via, _)| t == event.t_ms && via == read.via) =>
                    {
                        last_call.expect("checked").2
                    }
                    role => {
                        if role == ReadRole::Target {
                            last_call = Some((event.t_ms, read.via.as_str(), steps.len()));
                        }
                        if role == ReadRole::Request {
                            last_request.insert(read.via.as_str(), steps.len());
                        }
                        steps.push(ContextStep {
                            t_ms: Some(event.t_ms),
                            via: read.via.clone(),
                            reads: Vec::new(),
                        });
                        steps.len() - 1
                    }
                };
                if item.lines.is_some() {
                    let at = (step, steps[step].reads.len());
                    tracked.entry(item.file.clone()).or_default().push(at);
                }
                steps[step].reads.push(item);
            }
            // What the editor showed, and where the developer put the caret or selected:
            // lines they read (an empty selection reads the caret's line).
            EventBody::Signal(signal)
                if signal.kind == SignalKind::VisibleRanges
                    || signal.kind == SignalKind::Selection =>
            {
                let Some(file) = &signal.file else { continue };
                let ranges: Vec<LineRange> = (SignalRange::read_all(&signal.kind, &signal.payload)
                    .iter())
                .map(lsp_range_lines)
                .collect();
                if ranges.is_empty() {
                    continue;
                }
                let step = steps.len();
                steps.push(ContextStep {
                    t_ms: Some(event.t_ms),
                    via: signal.kind.to_string(),
                    reads: Vec::new(),
                });
                for lines in ranges {
                    let at = (step, steps[step].reads.len());
                    tracked.entry(file.clone()).or_default().push(at);
                    steps[step].reads.push(ContextRead {
                        file: file.clone(),
                        lines: Some(lines),
                    });
                }
            }
            EventBody::Change(change) => {
                for &(s, r) in tracked.get(&change.file).into_iter().flatten() {
                    let read = &mut steps[s].reads[r];
                    if let Some(lines) = read.lines {
                        read.lines = Some(shift_range(lines, change));
                    }
                }
            }
            _ => {}
        }
    }
    steps
}

/// One step in ContextBench's form: files in first-read order, 1-based inclusive spans.
pub fn to_step(step: &ContextStep) -> Step {
    let mut out = Step::default();
    for read in &step.reads {
        if !out.files.contains(&read.file) {
            out.files.push(read.file.clone());
        }
        if let Some(lines) = read.lines {
            out.spans
                .entry(read.file.clone())
                .or_default()
                .push(LineSpan {
                    start: lines.start as i64 + 1,
                    end: lines.end as i64,
                });
        }
    }
    out
}

/// The prediction of a session: its steps, and their union as the final context.
pub fn prediction(instance_id: &str, steps: &[ContextStep]) -> Prediction {
    let steps: Vec<Step> = steps.iter().map(to_step).collect();
    let mut final_context = Step::default();
    for s in &steps {
        for f in &s.files {
            if !final_context.files.contains(f) {
                final_context.files.push(f.clone());
            }
        }
        for (f, spans) in &s.spans {
            final_context
                .spans
                .entry(f.clone())
                .or_default()
                .extend(spans.iter().copied());
        }
    }
    Prediction {
        instance_id: instance_id.to_owned(),
        model_patch: String::new(),
        steps,
        final_context,
    }
}

/// The text a file ends with: its final text, else its base text.
fn final_text(file: &crate::core::trajectory::FileEntry) -> Option<&str> {
    if file.excluded {
        return None;
    }
    file.final_text.as_deref().or(file.base_text.as_deref())
}

/// The trajectory's files at the end of the session, as a repository.
#[derive(Debug, Clone)]
pub struct TrajectoryRepo<'a> {
    texts: HashMap<&'a str, &'a str>,
}

impl<'a> TrajectoryRepo<'a> {
    /// The final (else base) text of every file of `trajectory` that has one.
    pub fn new(trajectory: &'a Trajectory) -> TrajectoryRepo<'a> {
        TrajectoryRepo {
            texts: trajectory
                .files
                .iter()
                .filter_map(|f| Some((f.path.as_str(), final_text(f)?)))
                .collect(),
        }
    }
}

impl RepoView for TrajectoryRepo<'_> {
    fn read(&self, path: &str) -> Option<String> {
        self.texts.get(path).map(|t| (*t).to_owned())
    }
}

/// Lines of the final texts the session's net edits produced: a line diff of each
/// file's base and final text. A pure deletion names the line now at its place.
pub fn edited_regions(trajectory: &Trajectory) -> Vec<ContextRegion> {
    let mut out = Vec::new();
    for file in &trajectory.files {
        let (Some(fin), false) = (file.final_text.as_deref(), file.excluded) else {
            continue;
        };
        let base: Vec<&str> = file
            .base_text
            .as_deref()
            .unwrap_or("")
            .split_inclusive('\n')
            .collect();
        let after: Vec<&str> = fin.split_inclusive('\n').collect();
        let mut ranges: Vec<LineRange> = Vec::new();
        let (mut i0, mut j0) = (0, 0);
        let pairs = lcs_pairs(&base, &after);
        for (i, j) in pairs.into_iter().chain([(base.len(), after.len())]) {
            if j > j0 {
                ranges.push(LineRange::new(j0, j));
            } else if i > i0 && !after.is_empty() {
                let at = j.min(after.len() - 1);
                ranges.push(LineRange::new(at, at + 1));
            }
            (i0, j0) = (i + 1, j + 1);
        }
        ranges.sort();
        let mut merged: Vec<LineRange> = Vec::new();
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        out.extend(merged.into_iter().map(|lines| ContextRegion {
            file: file.path.clone(),
            lines,
        }));
    }
    out
}

/// Definitions (classes, functions, methods) named by the identifiers the `edited`
/// lines use, found by name in every file of the trajectory (final texts).
pub fn used_definitions(trajectory: &Trajectory, edited: &[ContextRegion]) -> Vec<ContextRegion> {
    let texts: Vec<(&str, &str, Language)> = trajectory
        .files
        .iter()
        .filter_map(|f| {
            let lang = Language::from_path(Path::new(&f.path))?;
            Some((f.path.as_str(), final_text(f)?, lang))
        })
        .collect();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    let structures: Vec<_> = texts
        .iter()
        .map(|(_, text, lang)| analyze(*lang, text))
        .collect();
    for region in edited {
        let Some(k) = texts.iter().position(|(p, _, _)| *p == region.file) else {
            continue;
        };
        for occurrence in structures[k].occurrences_in(region.lines.start, region.lines.end) {
            if occurrence.role == Role::Use
                && !occurrence.keyword
                && !IGNORED_NAMES.contains(&occurrence.name.as_str())
            {
                names.insert(occurrence.name.as_str());
            }
        }
    }
    let mut out = Vec::new();
    for ((path, _, _), structure) in texts.iter().zip(&structures) {
        for scope in &structure.scopes {
            if names.contains(scope.name.as_str()) {
                out.push(ContextRegion {
                    file: (*path).to_owned(),
                    lines: LineRange::new(scope.start_line, scope.end_line + 1),
                });
            }
        }
    }
    out
}

/// Where a session's gold context comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoldSource {
    /// `trajectory.gold.context` (imported benchmarks).
    Trajectory,
    /// The session's edited lines plus the definitions they use.
    Edits,
    /// A ContextBench gold file.
    File,
}

/// Regions (0-based, half-open) as a ContextBench gold row; an empty range names the file.
pub fn regions_to_gold(instance_id: &str, regions: &[ContextRegion]) -> Gold {
    Gold {
        instance_id: instance_id.to_owned(),
        keyed_inst_id: true,
        original_instance_id: None,
        init: regions
            .iter()
            .map(|r| GoldRegion {
                file: r.file.clone(),
                start_line: r.lines.start as i64 + 1,
                end_line: r.lines.end as i64,
            })
            .collect(),
        add: Vec::new(),
        patch: String::new(),
    }
}

/// The default gold of a trajectory: its `gold.context` when it carries one, else its
/// edited lines plus the definitions they use (sorted, duplicates removed).
pub fn default_gold(trajectory: &Trajectory) -> (Vec<ContextRegion>, GoldSource) {
    if !trajectory.gold.context.is_empty() {
        return (trajectory.gold.context.clone(), GoldSource::Trajectory);
    }
    let edited = edited_regions(trajectory);
    let mut all = used_definitions(trajectory, &edited);
    all.extend(edited);
    let set: BTreeSet<(String, LineRange)> = all.into_iter().map(|r| (r.file, r.lines)).collect();
    let regions = set
        .into_iter()
        .map(|(file, lines)| ContextRegion { file, lines })
        .collect();
    (regions, GoldSource::Edits)
}

/// A session's ContextBench scores with the time of each scored step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionScores {
    /// The evaluator's result (steps numbered from 1 among the scored steps).
    #[serde(flatten)]
    pub result: InstanceResult,
    /// Time of each scored step (`result.trajectory.steps[i]`), when known.
    pub step_times: Vec<Option<f64>>,
    /// Final-context F1 per granularity in either mode (0 when both are 0, null when
    /// either is undefined).
    pub f1: PerGranularity<Option<f64>>,
}

impl SessionScores {
    /// The coverage curve (`nextedit context --curve x.csv`): a `step,t_ms,file,symbol,span,line`
    /// header, then one row per scored step; unknown values are empty cells.
    pub fn coverage_curve_csv(&self) -> String {
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        let mut out = String::from("step,t_ms,file,symbol,span,line\n");
        for (s, t) in self.result.trajectory.steps.iter().zip(&self.step_times) {
            let c = &s.coverage;
            out.push_str(&format!(
                "{},{},{},{},{},{}\n",
                s.step,
                cell(*t),
                cell(c.file),
                cell(c.symbol),
                cell(c.span),
                cell(c.line)
            ));
        }
        out
    }

    /// The coverage curve (`nextedit context --curve x.json`): a pretty JSON array of
    /// `{step, t_ms, coverage}`, one per scored step, and a final newline.
    pub fn coverage_curve_json(&self) -> serde_json::Result<String> {
        let rows: Vec<serde_json::Value> = (self.result.trajectory.steps.iter())
            .zip(&self.step_times)
            .map(|(s, t)| serde_json::json!({"step": s.step, "t_ms": t, "coverage": s.coverage}))
            .collect();
        Ok(serde_json::to_string_pretty(&rows)? + "\n")
    }
}

/// Whether the fixed mode's evaluator keeps `step`: it names a file the repository has.
fn resolves(step: &ContextStep, repo: &dyn RepoView) -> bool {
    step.reads.iter().any(|r| {
        let p = r.file.trim().trim_matches(['\'', '"']).replace('\\', "/");
        repo.read(&normalize_gold_path(&p, Mode::Fixed)).is_some()
    })
}

/// Scores `steps` against `gold` on `repo`. In fixed mode the steps that name no file
/// of the repository are dropped first (the evaluator would), so times stay aligned.
pub fn evaluate_steps(
    gold: &Gold,
    instance_id: &str,
    steps: &[ContextStep],
    repo: &dyn RepoView,
    config: &ContextBenchConfig,
) -> Result<SessionScores, InstanceError> {
    let kept: Vec<ContextStep> = match config.mode {
        Mode::Compat => steps.to_vec(),
        Mode::Fixed => steps
            .iter()
            .filter(|s| resolves(s, repo))
            .cloned()
            .collect(),
    };
    let pred = prediction(instance_id, &kept);
    let result = evaluate(gold, &pred, repo, config)?;
    let step_times = if result.trajectory.steps.len() == kept.len() {
        kept.iter().map(|s| s.t_ms).collect()
    } else {
        vec![None; result.trajectory.steps.len()]
    };
    let f1 = |g: &GranularityScore| match (g.coverage, g.precision) {
        (Some(c), Some(p)) if c + p > 0.0 => Some(2.0 * c * p / (c + p)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    let f = &result.final_scores;
    let f1 = PerGranularity {
        file: f1(&f.file),
        symbol: f1(&f.symbol),
        span: f1(&f.span),
        line: f1(&f.line),
    };
    Ok(SessionScores {
        result,
        step_times,
        f1,
    })
}

/// Lines per file of `regions`, for display: `file → [(start, end)]` (1-based inclusive).
pub fn regions_by_file(regions: &[ContextRegion]) -> BTreeMap<String, Vec<(usize, usize)>> {
    let mut out: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for r in regions {
        out.entry(r.file.clone())
            .or_default()
            .push((r.lines.start + 1, r.lines.end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{
        Event, FileEntry, Origin, Read, SessionInfo, SessionKind, Signal,
    };

    fn change(start_line: usize, end_line: usize, new_end_line: usize) -> Change {
        Change {
            file: "a.py".into(),
            version: 2,
            start_byte: 0,
            end_byte: 0,
            start_line,
            end_line,
            new_end_line,
            before: String::new(),
            after: String::new(),
            origin: Origin::User,
        }
    }

    #[test]
    fn ranges_follow_later_changes() {
        // Two lines inserted at the start of line 2: line 2's text moves to line 4.
        let c = change(2, 2, 4);
        assert_eq!(shift_range(LineRange::new(0, 2), &c), LineRange::new(0, 2));
        assert_eq!(shift_range(LineRange::new(2, 3), &c), LineRange::new(2, 5));
        assert_eq!(shift_range(LineRange::new(5, 7), &c), LineRange::new(7, 9));
        // Lines 3..=5 deleted (the change ends at the start of line 6).
        let d = change(3, 6, 3);
        assert_eq!(shift_range(LineRange::new(6, 8), &d), LineRange::new(3, 5));
        assert_eq!(shift_range(LineRange::new(4, 5), &d), LineRange::new(3, 4));
    }

    fn event(seq: u64, body: EventBody) -> Event {
        Event {
            seq,
            t_ms: seq as f64 * 10.0,
            body,
        }
    }

    fn read(file: &str, lines: (usize, usize), via: &str, role: ReadRole) -> EventBody {
        EventBody::Read(Read {
            file: file.into(),
            lines: LineRange::new(lines.0, lines.1),
            via: via.into(),
            role,
        })
    }

    #[test]
    fn steps_group_targets_with_their_request_and_prefer_visible_ranges() {
        let mut t = Trajectory::new(SessionInfo::new("s", SessionKind::Recorded));
        t.events = vec![
            event(1, read("a.py", (0, 9), "open", ReadRole::Open)),
            event(2, read("b.py", (0, 4), "open", ReadRole::Open)),
            event(
                3,
                EventBody::Signal(Signal {
                    kind: "visible_ranges".into(),
                    file: Some("b.py".into()),
                    payload: serde_json::json!({"ranges": [{"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}]}),
                }),
            ),
            event(
                4,
                read("a.py", (3, 4), "textDocument/definition", ReadRole::Request),
            ),
            event(
                5,
                read("a.py", (1, 1), "textDocument/hover", ReadRole::Request),
            ),
            event(
                6,
                read("b.py", (1, 3), "textDocument/definition", ReadRole::Target),
            ),
        ];
        let steps = session_steps(&t);
        type Shape<'a> = (Option<f64>, &'a str, Vec<(&'a str, Option<(usize, usize)>)>);
        let shape: Vec<Shape> = steps
            .iter()
            .map(|s| {
                (
                    s.t_ms,
                    s.via.as_str(),
                    s.reads
                        .iter()
                        .map(|r| (r.file.as_str(), r.lines.map(|l| (l.start, l.end))))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Some(10.0), "open", vec![("a.py", Some((0, 9)))]),
                (Some(20.0), "open", vec![("b.py", None)]),
                (Some(30.0), "visible_ranges", vec![("b.py", Some((0, 2)))]),
                (
                    Some(40.0),
                    "textDocument/definition",
                    vec![("a.py", Some((3, 4))), ("b.py", Some((1, 3)))]
                ),
                (Some(50.0), "textDocument/hover", vec![("a.py", None)]),
            ]
        );
        let step = to_step(&steps[3]);
        assert_eq!(step.files, ["a.py", "b.py"]);
        assert_eq!(step.spans["a.py"], [LineSpan { start: 4, end: 4 }]);
        assert_eq!(step.spans["b.py"], [LineSpan { start: 2, end: 3 }]);
    }

    #[test]
    fn edited_regions_and_used_definitions() {
        let mut t = Trajectory::new(SessionInfo::new("s", SessionKind::Recorded));
        let base =
            "def helper(x):\n    return x\n\n\ndef f():\n    a = 1\n    b = 2\n    return a\n";
        let fin = "def helper(x):\n    return x\n\n\ndef f():\n    a = helper(1)\n    return a\n";
        t.files.push(FileEntry {
            final_text: Some(fin.into()),
            ..FileEntry::new("m.py", Some(base.into()))
        });
        let edited = edited_regions(&t);
        // Line 5 replaced, line 6 deleted: one region, line 6 (1-based) of the final text.
        assert_eq!(
            edited,
            [ContextRegion {
                file: "m.py".into(),
                lines: LineRange::new(5, 6)
            }]
        );
        assert_eq!(
            used_definitions(&t, &edited),
            [ContextRegion {
                file: "m.py".into(),
                lines: LineRange::new(0, 2)
            }]
        );
        let (gold, source) = default_gold(&t);
        assert_eq!(source, GoldSource::Edits);
        assert_eq!(gold.len(), 2);
        let g = regions_to_gold("s", &gold);
        assert_eq!((g.init[0].start_line, g.init[0].end_line), (1, 2));
        assert_eq!((g.init[1].start_line, g.init[1].end_line), (6, 6));
    }
}
