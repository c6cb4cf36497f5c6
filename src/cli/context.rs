//! `nextedit context`: ContextBench scores of what a session read.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use nextedit::core::metrics::contextbench::{
    ContextBenchConfig, Gold, GoldSource, Granularity, Mode, SessionScores, TrajectoryRepo,
    default_gold, evaluate_steps, regions_to_gold, session_steps,
};
use nextedit::core::trajectory::{SliceSpec, Trajectory};
use nextedit::service::contextbench_io::load_gold;
use nextedit::service::sessions::{SessionArg, load_session_trajectory, read_trajectory_file};
use nextedit::store::Database;
use serde_json::json;

/// Score what a session read with ContextBench metrics
///
/// SESSION is a stored session id or a trajectory JSON file. Its reads become
/// ContextBench steps in temporal order: each opened file, each request (hover,
/// definition, references… with the locations its answer pointed to) and each
/// visible-range update of the editor. When the editor reported visible ranges for a
/// file, its opens name the file only and the ranges say which lines were seen.
///
/// The gold context is, in order of preference: --gold (a ContextBench gold file, the
/// row named by --instance or its only row); the trajectory's own gold context
/// (imported benchmarks); else the lines the session finally edited plus the
/// definitions those lines use (functions, classes and methods named by their
/// identifiers, in any file of the session).
///
/// Files come from the trajectory itself (final texts), so the workspace need not
/// exist. Reads made before later edits are carried forward to the final text.
///
/// Prints coverage, precision and F1 of the final context (the union of all steps)
/// per granularity (file, symbol, span, line), AUC of the coverage curve, redundancy
/// and the number of steps. The default mode fixes the reference evaluator's
/// documented defects; --mode compat reproduces it (docs/metrics.md §5).
///
/// Examples:
///   nextedit context 12
///   nextedit context 12 --curve coverage.csv --json
///   nextedit context session.json --gold gold.jsonl --instance django__django-11099 --mode compat
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ContextArgs {
    /// Session id in the database, or a trajectory JSON file
    #[arg(value_name = "SESSION")]
    session: String,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// ContextBench gold (evaluator JSONL, Hugging Face rows as JSONL or a JSON array)
    #[arg(long, value_name = "FILE")]
    gold: Option<PathBuf>,

    /// Which row of --gold (`inst_id`, `instance_id` or `original_inst_id`)
    #[arg(long, value_name = "ID", requires = "gold")]
    instance: Option<String>,

    /// fixed (documented defects corrected) or compat (the reference evaluator exactly)
    #[arg(long, value_enum, default_value_t = ModeArg::Fixed)]
    mode: ModeArg,

    /// Write the coverage curve (step, t_ms, coverage per granularity) to FILE: .csv or .json
    #[arg(long, value_name = "FILE")]
    curve: Option<PathBuf>,

    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Fixed,
    Compat,
}

const LEVELS: [(&str, Granularity); 4] = [
    ("file", Granularity::File),
    ("symbol", Granularity::Symbol),
    ("span", Granularity::Span),
    ("line", Granularity::Line),
];

fn load_trajectory(args: &ContextArgs) -> anyhow::Result<Trajectory> {
    match SessionArg::parse(&args.session) {
        SessionArg::Stored(id) => {
            let db_path = args
                .db
                .clone()
                .unwrap_or_else(nextedit::store::default_path);
            let db = Database::open_existing(&db_path)?;
            load_session_trajectory(&db, id, &SliceSpec::default(), None)
                .with_context(|| format!("reading session {id} from {}", db_path.display()))
        }
        SessionArg::File(file) => Ok(read_trajectory_file(&file)?),
    }
}

fn pick_gold(path: &Path, instance: Option<&str>) -> anyhow::Result<Gold> {
    let rows = load_gold(path).with_context(|| format!("loading --gold `{}`", path.display()))?;
    match instance {
        Some(id) => rows
            .into_iter()
            .find(|g| g.matches(id))
            .with_context(|| format!("--gold `{}` has no row for instance {id}", path.display())),
        None if rows.len() == 1 => Ok(rows.into_iter().next().expect("one row")),
        None => bail!(
            "--gold `{}` has {} rows: name one with --instance",
            path.display(),
            rows.len()
        ),
    }
}

/// Writes the coverage curve to `path`, CSV or JSON by its extension.
fn write_curve(path: &Path, scores: &SessionScores) -> anyhow::Result<()> {
    let text = match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "json" => scores.coverage_curve_json()?,
        "csv" => scores.coverage_curve_csv(),
        _ => bail!(
            "--curve `{}`: use a .csv or .json file name",
            path.display()
        ),
    };
    std::fs::write(path, text).with_context(|| format!("writing --curve `{}`", path.display()))
}

/// Runs `nextedit context`.
pub fn run(args: ContextArgs) -> anyhow::Result<i32> {
    let trajectory = load_trajectory(&args)?;
    let id = trajectory.session.id.clone();
    let (gold, source, regions) = match &args.gold {
        Some(path) => {
            let gold = pick_gold(path, args.instance.as_deref())?;
            let n = gold.init.len() + gold.add.len();
            (gold, GoldSource::File, n)
        }
        None => {
            let (regions, source) = default_gold(&trajectory);
            (regions_to_gold(&id, &regions), source, regions.len())
        }
    };
    let mode = match args.mode {
        ModeArg::Fixed => Mode::Fixed,
        ModeArg::Compat => Mode::Compat,
    };
    let config = ContextBenchConfig {
        mode,
        ..Default::default()
    };
    let steps = session_steps(&trajectory);
    let repo = TrajectoryRepo::new(&trajectory);
    let scores = evaluate_steps(&gold, &id, &steps, &repo, &config).map_err(|e| {
        anyhow::anyhow!("session {id}: nothing it read can be scored ({e}): it read no file the trajectory has text for")
    })?;
    if let Some(path) = &args.curve {
        write_curve(path, &scores)?;
    }
    let mode_name = match mode {
        Mode::Fixed => "fixed",
        Mode::Compat => "compat",
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let gold_regions: Vec<_> = gold
            .init
            .iter()
            .chain(&gold.add)
            .map(|r| json!({"file": r.file, "start_line": r.start_line, "end_line": r.end_line}))
            .collect();
        writeln!(
            out,
            "{}",
            json!({"session": id, "mode": mode_name, "gold_source": source, "gold": gold_regions,
                   "read_steps": steps.len(), "scores": scores})
        )?;
        return Ok(0);
    }
    let r = &scores.result;
    let source_name = match source {
        GoldSource::File => "the --gold row",
        GoldSource::Trajectory => "the trajectory's gold context",
        GoldSource::Edits => "the edited lines and the definitions they use",
    };
    writeln!(
        out,
        "session {id}: {} steps scored of {} read ({mode_name} mode)",
        r.num_steps,
        steps.len()
    )?;
    writeln!(out, "gold: {regions} regions from {source_name}")?;
    let f = |v: Option<f64>| v.map_or("   n/a".to_owned(), |v| format!("{v:.4}"));
    writeln!(
        out,
        "  {:<8} {:>8} {:>9} {:>8} {:>8} {:>10}",
        "", "coverage", "precision", "F1", "AUC", "redundancy"
    )?;
    for (name, level) in LEVELS {
        let s = r.final_scores.get(level);
        writeln!(
            out,
            "  {name:<8} {:>8} {:>9} {:>8} {:>8} {:>10.4}",
            f(s.coverage),
            f(s.precision),
            f(*scores.f1.get(level)),
            f(*r.trajectory.auc_coverage.get(level)),
            r.trajectory.redundancy.get(level)
        )?;
    }
    if !r.unreachable_gold.is_empty() {
        writeln!(
            out,
            "  gold files without text in the trajectory: {}",
            r.unreachable_gold.join(", ")
        )?;
    }
    if !r.clipped_gold.is_empty() {
        writeln!(
            out,
            "  gold regions past the end of their file (scored clipped): {}",
            r.clipped_gold.join(", ")
        )?;
    }
    Ok(0)
}
