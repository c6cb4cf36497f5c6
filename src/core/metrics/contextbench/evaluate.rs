//! The ContextBench evaluation of one instance (coverage, precision and F1 per
//! granularity, AUC, redundancy, EditLoc), and aggregation over instances.

use std::cell::OnceCell;
use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::diff::{deleted_lines_compat, edited_lines};
use super::input::{Gold, GoldRegion, Prediction, Step};
use super::intervals::{self, Interval, IntervalMap};
use crate::core::metrics::statistics::mean;
use crate::core::syntax::{Definition, DefinitionSet, Language, definitions};

/// Read access to the repository at the instance's base commit.
pub trait RepoView {
    /// Contents of the regular file at repo-relative `path`, or `None` if there is none.
    fn read(&self, path: &str) -> Option<String>;
}

/// Reference-compatible or corrected evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// The reference evaluator's behaviour, quirks included (for published numbers).
    Compat,
    /// Documented defects fixed: predicted lines clipped at end of file; undefined
    /// (null) instead of 1.0 coverage/precision for empty sets; no EditLoc on the gold
    /// patch; EditLoc recall over gold lines; one gold set (init + add) everywhere;
    /// unreachable gold files reported and excluded; exact path resolution (no suffix
    /// search) and dotfiles kept; step files include span and symbol files; steps that
    /// resolve to nothing dropped; half-open symbol overlap; a proper diff parser.
    #[default]
    Fixed,
}

/// Evaluation settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ContextBenchConfig {
    /// Compat or fixed.
    pub mode: Mode,
    /// Which definition node kinds are symbols.
    pub definitions: DefinitionSet,
}

/// The four granularities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// Whole files.
    File,
    /// Definition nodes (the paper's "blocks").
    Symbol,
    /// Byte spans.
    Span,
    /// Lines.
    Line,
}

/// One value per granularity, serialised in the evaluator's key order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct PerGranularity<T> {
    /// File granularity.
    pub file: T,
    /// Symbol granularity.
    pub symbol: T,
    /// Byte-span granularity.
    pub span: T,
    /// Line granularity.
    pub line: T,
}

impl<T> PerGranularity<T> {
    fn from_fn(mut f: impl FnMut(Granularity) -> T) -> Self {
        PerGranularity {
            file: f(Granularity::File),
            symbol: f(Granularity::Symbol),
            span: f(Granularity::Span),
            line: f(Granularity::Line),
        }
    }

    /// The value for `g`.
    pub fn get(&self, g: Granularity) -> &T {
        match g {
            Granularity::File => &self.file,
            Granularity::Symbol => &self.symbol,
            Granularity::Span => &self.span,
            Granularity::Line => &self.line,
        }
    }
}

/// Final-context scores of one granularity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GranularityScore {
    /// |P ∩ G| / |G| (compat: 1.0 when G is empty; fixed: null).
    pub coverage: Option<f64>,
    /// |P ∩ G| / |P| (compat: 1.0 when P is empty; fixed: null).
    pub precision: Option<f64>,
    /// Per-instance F1 (fixed mode only; 0 when both are 0, null when either is null).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
    /// |P ∩ G|.
    pub intersection: u64,
    /// |G|.
    pub gold_size: u64,
    /// |P|.
    pub pred_size: u64,
}

/// Cumulative coverage after one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepCoverage {
    /// 1-based step number.
    pub step: usize,
    /// Coverage of the union of steps 1..=step.
    pub coverage: PerGranularity<Option<f64>>,
}

/// Trajectory metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    /// Per-step cumulative coverage.
    pub steps: Vec<StepCoverage>,
    /// Mean of the per-step coverages (equal weights).
    pub auc_coverage: PerGranularity<Option<f64>>,
    /// `1 − |∪ C_t| / Σ |C_t|` (0 when nothing was read).
    pub redundancy: PerGranularity<f64>,
}

/// Edit localisation of the predicted patch against the gold lines.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EditLoc {
    /// Compat: equal to precision. Fixed: hits / gold lines.
    pub recall: Option<f64>,
    /// Hits / predicted edit lines.
    pub precision: Option<f64>,
    /// Predicted edit lines inside gold lines.
    pub intersection: u64,
    /// Gold lines.
    pub gold_size: u64,
    /// Predicted edit lines.
    pub pred_size: u64,
}

/// The result row of one instance (the evaluator's JSON shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceResult {
    /// The prediction's instance id.
    pub instance_id: String,
    /// Steps scored.
    pub num_steps: usize,
    /// Final-context scores.
    #[serde(rename = "final")]
    pub final_scores: PerGranularity<GranularityScore>,
    /// Trajectory scores.
    pub trajectory: Trajectory,
    /// EditLoc, absent without a patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub editloc: Option<EditLoc>,
    /// Gold files missing from the repository (fixed mode; excluded from scoring).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreachable_gold: Vec<String>,
    /// Gold regions reaching past the end of their file, as `file a..=b (n lines)`
    /// (fixed mode: scored clipped to the file, and said so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clipped_gold: Vec<String>,
}

/// Why an instance has no scores (the evaluator's error rows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    /// The final context names no existing file and no span.
    #[error("no_context_extracted")]
    NoContextExtracted,
    /// No gold row for the prediction.
    #[error("missing_gold")]
    MissingGold,
}

/// The reference evaluator's gold path normalisation (fixed mode keeps dotfiles).
pub fn normalize_gold_path(path: &str, mode: Mode) -> String {
    if let Some(rest) = path.strip_prefix("/testbed/") {
        return rest.to_owned();
    }
    if let Some(rest) = path.strip_prefix("/workspace/") {
        return rest.split_once('/').map_or(rest, |(_, r)| r).to_owned();
    }
    if let Some(rest) = path.strip_prefix('/') {
        return rest.to_owned();
    }
    match mode {
        // Python `lstrip("./")`: strips every leading '.' and '/' (mangles dotfiles).
        Mode::Compat => path.trim_start_matches(['.', '/']).to_owned(),
        Mode::Fixed => {
            let mut p = path;
            while let Some(r) = p.strip_prefix("./") {
                p = r;
            }
            p.trim_start_matches('/').to_owned()
        }
    }
}

struct FileInfo {
    text: String,
    /// Start offset of every line, plus `len` when the text ends with '\n'
    /// (the evaluator's `[0] + [i + 1 for each '\n']`).
    offsets: Vec<usize>,
    defs: OnceCell<Vec<Definition>>,
}

impl FileInfo {
    fn new(text: String) -> FileInfo {
        let mut offsets = vec![0];
        offsets.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        FileInfo {
            text,
            offsets,
            defs: OnceCell::new(),
        }
    }

    /// Number of lines; a final newline does not start a new line.
    fn line_count(&self) -> i64 {
        let n = self.offsets.len() as i64;
        if self.text.is_empty() {
            0
        } else if self.text.ends_with('\n') {
            n - 1
        } else {
            n
        }
    }
}

struct Files<'r> {
    repo: &'r dyn RepoView,
    cache: HashMap<String, Option<FileInfo>>,
    config: ContextBenchConfig,
}

type SymbolKey = (String, &'static str, usize, usize);

impl<'r> Files<'r> {
    fn get(&mut self, path: &str) -> Option<&FileInfo> {
        if !self.cache.contains_key(path) {
            let info = self.repo.read(path).map(FileInfo::new);
            self.cache.insert(path.to_owned(), info);
        }
        self.cache.get(path).and_then(Option::as_ref)
    }

    fn exists(&mut self, path: &str) -> bool {
        self.get(path).is_some()
    }

    /// Predicted path → existing repo path.
    fn resolve(&mut self, raw: &str) -> Option<String> {
        match self.config.mode {
            Mode::Compat => {
                let p = raw.trim().trim_matches(['\'', '"']).replace('\\', "/");
                let mut p = p.as_str();
                while let Some(r) = p.strip_prefix("./") {
                    p = r;
                }
                let p = p.trim_start_matches('/');
                let parts: Vec<&str> = p.split('/').collect();
                (0..parts.len())
                    .map(|k| parts[k..].join("/"))
                    .find(|cand| !cand.is_empty() && self.exists(cand))
            }
            Mode::Fixed => {
                let p = raw.trim().trim_matches(['\'', '"']).replace('\\', "/");
                let p = normalize_gold_path(&p, Mode::Fixed);
                self.exists(&p).then_some(p)
            }
        }
    }

    /// Lines → inclusive byte span (the evaluator's `line_to_byte`, or the clipped form).
    fn line_to_byte(&mut self, path: &str, s: i64, e: i64) -> Option<Interval> {
        let mode = self.config.mode;
        let info = self.get(path)?;
        let len = info.text.len() as i64;
        let offsets = &info.offsets;
        match mode {
            Mode::Compat => {
                if info.text.is_empty() {
                    return Some((0, 0));
                }
                let s = s.max(1);
                let e = e.max(s);
                if (s - 1) as usize >= offsets.len() {
                    return None;
                }
                let start = offsets[(s - 1) as usize] as i64;
                let end = if (e as usize) < offsets.len() {
                    offsets[e as usize] as i64 - 1
                } else {
                    len - 1
                };
                Some((start, end.max(start)))
            }
            Mode::Fixed => {
                let n = info.line_count();
                let s = s.max(1);
                let e = e.min(n);
                if s > e {
                    return None;
                }
                let start = offsets[(s - 1) as usize] as i64;
                let end = if (e as usize) < offsets.len() {
                    offsets[e as usize] as i64 - 1
                } else {
                    len - 1
                };
                Some((start, end))
            }
        }
    }

    fn defs(&mut self, path: &str) -> Vec<Definition> {
        let set = self.config.definitions;
        let Some(lang) = Language::from_path(std::path::Path::new(path)) else {
            return Vec::new();
        };
        match self.get(path) {
            Some(info) => info
                .defs
                .get_or_init(|| definitions(lang, &info.text, set))
                .clone(),
            None => Vec::new(),
        }
    }

    fn symbols_overlapping(&mut self, bytes: &IntervalMap) -> BTreeSet<SymbolKey> {
        let mode = self.config.mode;
        let mut out = BTreeSet::new();
        for (file, spans) in bytes {
            for d in self.defs(file) {
                let (ds, de) = (d.start_byte as i64, d.end_byte as i64);
                let hit = spans.iter().any(|&(s, e)| match mode {
                    // The evaluator treats the exclusive end as inclusive.
                    Mode::Compat => !(de < s || ds > e),
                    Mode::Fixed => ds <= e && de > s,
                });
                if hit {
                    out.insert((file.clone(), d.kind, d.start_byte, d.end_byte));
                }
            }
        }
        out
    }

    fn symbols_named(&mut self, file: &str, names: &[String]) -> BTreeSet<SymbolKey> {
        let compat = self.config.mode == Mode::Compat;
        let defs = self.defs(file);
        fn name_of(d: &Definition, compat: bool) -> Option<&str> {
            if compat {
                d.evaluator_name.as_deref()
            } else {
                d.name.as_deref()
            }
        }
        let mut out = BTreeSet::new();
        for name in names {
            let exact: Vec<&Definition> = defs
                .iter()
                .filter(|d| name_of(d, compat) == Some(name))
                .collect();
            let chosen = if exact.is_empty() {
                let last = name.rsplit('.').next().unwrap_or(name);
                defs.iter()
                    .filter(|d| name_of(d, compat) == Some(last))
                    .collect()
            } else {
                exact
            };
            for d in chosen {
                out.insert((file.to_owned(), d.kind, d.start_byte, d.end_byte));
            }
        }
        out
    }
}

/// One step after path resolution, in every representation.
#[derive(Default, Clone)]
struct Repr {
    files: BTreeSet<String>,
    symbols: BTreeSet<SymbolKey>,
    bytes: IntervalMap,
    lines: IntervalMap,
}

impl Repr {
    fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.lines.is_empty()
            && self.bytes.is_empty()
            && self.symbols.is_empty()
    }

    fn size(&self, g: Granularity) -> u64 {
        match g {
            Granularity::File => self.files.len() as u64,
            Granularity::Symbol => self.symbols.len() as u64,
            Granularity::Span => intervals::map_size(&self.bytes),
            Granularity::Line => intervals::map_size(&self.lines),
        }
    }

    fn inter(&self, other: &Repr, g: Granularity) -> u64 {
        match g {
            Granularity::File => self.files.intersection(&other.files).count() as u64,
            Granularity::Symbol => self.symbols.intersection(&other.symbols).count() as u64,
            Granularity::Span => intervals::map_overlap(&self.bytes, &other.bytes),
            Granularity::Line => intervals::map_overlap(&self.lines, &other.lines),
        }
    }

    fn union(&mut self, other: &Repr) {
        self.files.extend(other.files.iter().cloned());
        self.symbols.extend(other.symbols.iter().cloned());
        self.bytes = intervals::map_union(&self.bytes, &other.bytes);
        self.lines = intervals::map_union(&self.lines, &other.lines);
    }
}

fn resolve_step(step: &Step, files: &mut Files<'_>) -> Repr {
    let mode = files.config.mode;
    let mut r = Repr::default();
    for f in &step.files {
        if let Some(p) = files.resolve(f) {
            r.files.insert(p);
        }
    }
    let mut line_pairs = Vec::new();
    let mut byte_pairs = Vec::new();
    for (f, spans) in &step.spans {
        let Some(p) = files.resolve(f) else { continue };
        let n = files.get(&p).map_or(0, FileInfo::line_count);
        for s in spans {
            match mode {
                Mode::Compat => {
                    if s.start > 0 && s.end > 0 && s.end >= s.start {
                        line_pairs.push((p.clone(), (s.start, s.end)));
                    }
                }
                Mode::Fixed => {
                    let (a, b) = (s.start.max(1), s.end.min(n));
                    if a <= b {
                        line_pairs.push((p.clone(), (a, b)));
                    }
                }
            }
            if let Some(iv) = files.line_to_byte(&p, s.start, s.end) {
                byte_pairs.push((p.clone(), iv));
            }
        }
        if mode == Mode::Fixed {
            r.files.insert(p);
        }
    }
    r.lines = intervals::map_from(line_pairs);
    r.bytes = intervals::map_from(byte_pairs);
    let named: Vec<(String, &Vec<String>)> = step
        .symbols
        .iter()
        .filter_map(|(f, names)| files.resolve(f).map(|p| (p, names)))
        .collect();
    if step.symbols.is_empty() {
        r.symbols = files.symbols_overlapping(&r.bytes);
    } else {
        for (p, names) in named {
            r.symbols.extend(files.symbols_named(&p, names));
            if mode == Mode::Fixed {
                r.files.insert(p);
            }
        }
    }
    r
}

fn gold_repr(gold: &Gold, files: &mut Files<'_>) -> (Repr, Vec<String>, Vec<String>) {
    let mode = files.config.mode;
    let both: Vec<&GoldRegion> = gold.init.iter().chain(&gold.add).collect();
    let mut r = Repr::default();
    let mut unreachable = BTreeSet::new();
    for g in &both {
        let p = normalize_gold_path(&g.file, mode);
        match mode {
            Mode::Compat => {
                r.files.insert(p);
            }
            Mode::Fixed => {
                if files.exists(&p) {
                    r.files.insert(p);
                } else {
                    unreachable.insert(g.file.clone());
                }
            }
        }
    }
    // Lines: compat uses `init` only, unclipped; fixed uses init + add, clipped.
    let line_source: Vec<&GoldRegion> = match mode {
        Mode::Compat => gold.init.iter().collect(),
        Mode::Fixed => both.clone(),
    };
    let mut line_pairs = Vec::new();
    let mut clipped = Vec::new();
    for g in line_source {
        let p = normalize_gold_path(&g.file, mode);
        match mode {
            Mode::Compat => line_pairs.push((p, (g.start_line, g.end_line))),
            Mode::Fixed => {
                let Some(n) = files.get(&p).map(FileInfo::line_count) else {
                    continue;
                };
                if g.end_line > n {
                    clipped.push(format!(
                        "{} {}..={} ({n} lines)",
                        g.file, g.start_line, g.end_line
                    ));
                }
                let (a, b) = (g.start_line.max(1), g.end_line.min(n));
                if a <= b {
                    line_pairs.push((p, (a, b)));
                }
            }
        }
    }
    r.lines = intervals::map_from(line_pairs);
    let mut byte_pairs = Vec::new();
    for g in &both {
        let p = normalize_gold_path(&g.file, mode);
        if let Some(iv) = files.line_to_byte(&p, g.start_line, g.end_line) {
            byte_pairs.push((p, iv));
        }
    }
    r.bytes = intervals::map_from(byte_pairs);
    r.symbols = files.symbols_overlapping(&r.bytes);
    (r, unreachable.into_iter().collect(), clipped)
}

fn ratio(num: u64, den: u64, mode: Mode, empty: f64) -> Option<f64> {
    if den > 0 {
        Some(num as f64 / den as f64)
    } else {
        match mode {
            Mode::Compat => Some(empty),
            Mode::Fixed => None,
        }
    }
}

/// Coverage, precision and F1 of the final context `fin` against the gold `g`, per
/// granularity.
fn final_scores(fin: &Repr, g: &Repr, mode: Mode) -> PerGranularity<GranularityScore> {
    PerGranularity::from_fn(|gr| {
        let inter = fin.inter(g, gr);
        let gold_size = g.size(gr);
        let pred_size = fin.size(gr);
        let coverage = ratio(inter, gold_size, mode, 1.0);
        let precision = ratio(inter, pred_size, mode, 1.0);
        let f1 = match (mode, coverage, precision) {
            (Mode::Fixed, Some(c), Some(p)) => Some(if c + p > 0.0 {
                2.0 * c * p / (c + p)
            } else {
                0.0
            }),
            _ => None,
        };
        GranularityScore {
            coverage,
            precision,
            f1,
            intersection: inter,
            gold_size,
            pred_size,
        }
    })
}

/// The mean of the cumulative coverage over the steps, per granularity (`None` in
/// fixed mode where a step's coverage is undefined or there are no steps).
fn auc_coverage(steps: &[StepCoverage], mode: Mode) -> PerGranularity<Option<f64>> {
    let t = steps.len();
    PerGranularity::from_fn(|gr| {
        if t == 0 {
            return match mode {
                Mode::Compat => Some(0.0),
                Mode::Fixed => None,
            };
        }
        let mut sum = 0.0;
        for s in steps {
            sum += (*s.coverage.get(gr))?;
        }
        Some(sum / t as f64)
    })
}

/// Scores one instance. `repo` must show the repository at the instance's base commit.
pub fn evaluate(
    gold: &Gold,
    pred: &Prediction,
    repo: &dyn RepoView,
    config: &ContextBenchConfig,
) -> Result<InstanceResult, InstanceError> {
    let mode = config.mode;
    let mut files = Files {
        repo,
        cache: HashMap::new(),
        config: *config,
    };
    let (g, unreachable_gold, clipped_gold) = gold_repr(gold, &mut files);
    let fin = resolve_step(&pred.final_context, &mut files);
    if fin.files.is_empty() && fin.lines.is_empty() && fin.bytes.is_empty() {
        return Err(InstanceError::NoContextExtracted);
    }
    let final_scores = final_scores(&fin, &g, mode);

    let raw_steps: Vec<&Step> = if pred.steps.is_empty() {
        vec![&pred.final_context]
    } else {
        pred.steps.iter().collect()
    };
    let mut reprs: Vec<Repr> = raw_steps
        .iter()
        .map(|s| resolve_step(s, &mut files))
        .collect();
    if mode == Mode::Fixed {
        reprs.retain(|r| !r.is_empty());
    }
    let mut cumulative = Repr::default();
    let mut steps = Vec::with_capacity(reprs.len());
    let mut sums = PerGranularity::<u64>::default();
    for (i, r) in reprs.iter().enumerate() {
        cumulative.union(r);
        sums.file += r.size(Granularity::File);
        sums.symbol += r.size(Granularity::Symbol);
        sums.span += r.size(Granularity::Span);
        sums.line += r.size(Granularity::Line);
        steps.push(StepCoverage {
            step: i + 1,
            coverage: PerGranularity::from_fn(|gr| {
                // The evaluator scores an empty gold line set 0.0 (1.0 elsewhere).
                let empty = if gr == Granularity::Line { 0.0 } else { 1.0 };
                ratio(cumulative.inter(&g, gr), g.size(gr), mode, empty)
            }),
        });
    }
    let t = steps.len();
    let auc_coverage = auc_coverage(&steps, mode);
    let redundancy = PerGranularity::from_fn(|gr| {
        let total = *sums.get(gr);
        if total == 0 {
            0.0
        } else {
            1.0 - cumulative.size(gr) as f64 / total as f64
        }
    });

    let editloc = editloc(gold, pred, &g, mode);
    Ok(InstanceResult {
        instance_id: pred.instance_id.clone(),
        num_steps: t,
        final_scores,
        trajectory: Trajectory {
            steps,
            auc_coverage,
            redundancy,
        },
        editloc,
        unreachable_gold,
        clipped_gold,
    })
}

fn editloc(gold: &Gold, pred: &Prediction, g: &Repr, mode: Mode) -> Option<EditLoc> {
    match mode {
        Mode::Compat => {
            let patch = if pred.model_patch.is_empty() {
                gold.patch.as_str()
            } else {
                pred.model_patch.as_str()
            };
            if patch.is_empty() {
                return None;
            }
            let deleted = deleted_lines_compat(patch);
            let (mut pred_size, mut inter) = (0u64, 0u64);
            for (file, lines) in &deleted {
                let set: BTreeSet<i64> = lines.iter().copied().collect();
                pred_size += set.len() as u64;
                if let Some(ivs) = g.lines.get(file) {
                    inter += set
                        .iter()
                        .filter(|l| ivs.iter().any(|&(s, e)| s <= **l && **l <= e))
                        .count() as u64;
                }
            }
            let v = if pred_size > 0 {
                inter as f64 / pred_size as f64
            } else {
                0.0
            };
            Some(EditLoc {
                recall: Some(v),
                precision: Some(v),
                intersection: inter,
                gold_size: intervals::map_size(&g.lines),
                pred_size,
            })
        }
        Mode::Fixed => {
            if pred.model_patch.trim().is_empty() {
                return None;
            }
            let edited = edited_lines(&pred.model_patch);
            let mut pred_size = 0u64;
            let mut inter = 0u64;
            for (file, lines) in &edited {
                let file = normalize_gold_path(file, Mode::Fixed);
                pred_size += lines.len() as u64;
                if let Some(ivs) = g.lines.get(&file) {
                    inter += lines
                        .iter()
                        .filter(|l| ivs.iter().any(|&(s, e)| s <= **l && **l <= e))
                        .count() as u64;
                }
            }
            let gold_size = intervals::map_size(&g.lines);
            Some(EditLoc {
                recall: (gold_size > 0).then(|| inter as f64 / gold_size as f64),
                precision: (pred_size > 0).then(|| inter as f64 / pred_size as f64),
                intersection: inter,
                gold_size,
                pred_size,
            })
        }
    }
}

/// Aggregates over scored instances: the evaluator's micro summary and the paper's
/// macro means (per-instance F1), plus macro AUC and redundancy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregate {
    /// Instances scored.
    pub instances: usize,
    /// Micro coverage Σinter/Σgold per granularity.
    pub micro_coverage: PerGranularity<Option<f64>>,
    /// Micro precision Σinter/Σpred per granularity.
    pub micro_precision: PerGranularity<Option<f64>>,
    /// Macro mean of per-instance coverage (defined values only).
    pub macro_coverage: PerGranularity<Option<f64>>,
    /// Macro mean of per-instance precision (defined values only).
    pub macro_precision: PerGranularity<Option<f64>>,
    /// Macro mean of per-instance F1 (F1 = 0 when both are 0).
    pub macro_f1: PerGranularity<Option<f64>>,
    /// Macro mean AUC-coverage.
    pub auc_coverage: PerGranularity<Option<f64>>,
    /// Macro mean redundancy.
    pub redundancy: PerGranularity<Option<f64>>,
    /// The evaluator's aggregate EditLoc recall Σinter/Σgold_size.
    pub editloc_recall: Option<f64>,
    /// Aggregate EditLoc precision Σinter/Σpred_size.
    pub editloc_precision: Option<f64>,
}

/// Aggregates `results` (error rows excluded by the caller).
pub fn aggregate(results: &[InstanceResult]) -> Aggregate {
    let sum = |f: &dyn Fn(&GranularityScore) -> u64, gr: Granularity| -> u64 {
        results.iter().map(|r| f(r.final_scores.get(gr))).sum()
    };
    let div = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
    let el: Vec<&EditLoc> = results.iter().filter_map(|r| r.editloc.as_ref()).collect();
    let el_inter: u64 = el.iter().map(|e| e.intersection).sum();
    Aggregate {
        instances: results.len(),
        micro_coverage: PerGranularity::from_fn(|gr| {
            div(sum(&|s| s.intersection, gr), sum(&|s| s.gold_size, gr))
        }),
        micro_precision: PerGranularity::from_fn(|gr| {
            div(sum(&|s| s.intersection, gr), sum(&|s| s.pred_size, gr))
        }),
        macro_coverage: PerGranularity::from_fn(|gr| {
            mean(
                results
                    .iter()
                    .filter_map(|r| r.final_scores.get(gr).coverage),
            )
        }),
        macro_precision: PerGranularity::from_fn(|gr| {
            mean(
                results
                    .iter()
                    .filter_map(|r| r.final_scores.get(gr).precision),
            )
        }),
        macro_f1: PerGranularity::from_fn(|gr| {
            mean(results.iter().filter_map(|r| {
                let s = r.final_scores.get(gr);
                match (s.coverage, s.precision) {
                    (Some(c), Some(p)) => Some(if c + p > 0.0 {
                        2.0 * c * p / (c + p)
                    } else {
                        0.0
                    }),
                    _ => None,
                }
            }))
        }),
        auc_coverage: PerGranularity::from_fn(|gr| {
            mean(
                results
                    .iter()
                    .filter_map(|r| *r.trajectory.auc_coverage.get(gr)),
            )
        }),
        redundancy: PerGranularity::from_fn(|gr| {
            mean(results.iter().map(|r| *r.trajectory.redundancy.get(gr)))
        }),
        editloc_recall: div(el_inter, el.iter().map(|e| e.gold_size).sum()),
        editloc_precision: div(el_inter, el.iter().map(|e| e.pred_size).sum()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_path_normalisation() {
        let c = Mode::Compat;
        assert_eq!(normalize_gold_path("/testbed/a/b.py", c), "a/b.py");
        assert_eq!(
            normalize_gold_path("/workspace/cli__cli__0.1/pkg/x.go", c),
            "pkg/x.go"
        );
        assert_eq!(
            normalize_gold_path("/workspace/run_test.js", c),
            "run_test.js"
        );
        assert_eq!(normalize_gold_path("/abs/x.py", c), "abs/x.py");
        // The evaluator's lstrip("./") mangles dotfiles; the fixed mode keeps them.
        assert_eq!(normalize_gold_path(".github/w.yml", c), "github/w.yml");
        assert_eq!(
            normalize_gold_path(".github/w.yml", Mode::Fixed),
            ".github/w.yml"
        );
        assert_eq!(normalize_gold_path("./src/a.py", Mode::Fixed), "src/a.py");
    }

    #[test]
    fn line_to_byte_quirks() {
        struct One;
        impl RepoView for One {
            fn read(&self, path: &str) -> Option<String> {
                (path == "f").then(|| "ab\ncd\n".to_owned())
            }
        }
        let mut compat = Files {
            repo: &One,
            cache: HashMap::new(),
            config: ContextBenchConfig {
                mode: Mode::Compat,
                ..Default::default()
            },
        };
        // Line 3 does not exist (the file ends with a newline): a 1-byte span at EOF.
        assert_eq!(compat.line_to_byte("f", 3, 3), Some((6, 6)));
        assert_eq!(compat.line_to_byte("f", 1, 400), Some((0, 5)));
        assert_eq!(compat.line_to_byte("f", 4, 4), None);
        let mut fixed = Files {
            repo: &One,
            cache: HashMap::new(),
            config: ContextBenchConfig::default(),
        };
        assert_eq!(fixed.line_to_byte("f", 3, 3), None);
        assert_eq!(fixed.line_to_byte("f", 2, 400), Some((3, 5)));
    }
}
