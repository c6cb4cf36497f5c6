//! `nextedit replay`: walk trajectories through a next-edit suggester and score it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use nextedit::metrics::flow::{FlowStep, HISTORIAN_KS, aggregate};
use nextedit::replay::matching::MatchRule;
use nextedit::replay::{
    DirWorkspace, OracleFeed, OracleSuggester, OrderMode, ReplayConfig, ReplayOutcome, replay,
};
use nextedit::suggest::protocol::Revealed;
use nextedit::suggest::{NoopSuggester, ProcessSuggester, PropagateSuggester, Suggester};
use nextedit::trajectory::Trajectory;

/// Replay trajectories through a next-edit suggester and score it
///
/// Each trajectory (`nextedit sessions export` or `nextedit derive` output) is
/// replayed in a scratch directory holding its files at the start state. At every
/// step the suggester proposes ranked next edits; they are matched one to one to the
/// remaining gold edits and classified (flow keeping, jumping, reverting, breaking);
/// when none keeps the flow, the suggester writes the content of the next edit's
/// location, scored with BLEU-4 and ES. Then the gold edit is applied.
///
/// Suggesters: builtin:noop (never suggests; scores 0), builtin:propagate (repeats
/// each applied rename or one-line change at the other places it applies, nearest
/// first), builtin:oracle (the gold answers; the maximum), or cmd:'<command line>'
/// speaking the protocol of docs/suggesters.md.
///
/// Examples:
///   nextedit replay --trajectory commit.json --suggester builtin:oracle
///   nextedit replay --trajectory commit.json --suggester "cmd:python3 my_suggester.py" --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReplayArgs {
    /// Trajectory JSON file (can be repeated)
    #[arg(long, value_name = "FILE", required = true)]
    trajectory: Vec<PathBuf>,

    /// builtin:noop, builtin:propagate, builtin:oracle, or cmd:<command line>
    #[arg(long, value_name = "SPEC")]
    suggester: String,

    /// Which edit comes next: the natural order (fixed) or the suggester's best kept match (adaptive)
    #[arg(long, value_enum, default_value_t = OrderArg::Fixed)]
    order: OrderArg,

    /// How predictions match gold edits
    #[arg(long = "match", value_enum, default_value_t = MatchArg::Historian)]
    match_rule: MatchArg,

    /// Minimum ES for --match es
    #[arg(long, default_value_t = 0.5, value_name = "ES")]
    es_threshold: f64,

    /// What the suggester may see beyond the current state: message, files (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    reveal: Vec<RevealArg>,

    /// Seed for tie-breaks (initial edit in adaptive order)
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Seconds a suggester may take per call
    #[arg(long, default_value_t = 60.0, value_name = "S")]
    timeout: f64,

    /// Print JSON (one object per trajectory, then the summary) instead of tables
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OrderArg {
    Fixed,
    Adaptive,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum MatchArg {
    Historian,
    Es,
    Exact,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum RevealArg {
    Message,
    Files,
}

/// A suggester and, for the oracle, the feed the engine fills with gold answers.
type BuiltSuggester = (Box<dyn Suggester>, Option<std::sync::Arc<OracleFeed>>);

/// A suggester built from its spec.
fn build_suggester(spec: &str, timeout: Duration) -> anyhow::Result<BuiltSuggester> {
    Ok(match spec {
        "builtin:noop" => (Box::new(NoopSuggester), None),
        "builtin:propagate" => (Box::new(PropagateSuggester::default()), None),
        "builtin:oracle" => {
            let (oracle, feed) = OracleSuggester::new();
            (Box::new(oracle), Some(feed))
        }
        _ => match spec.strip_prefix("cmd:") {
            Some(command) if !command.trim().is_empty() => (
                Box::new(ProcessSuggester::from_shell(command, timeout)),
                None,
            ),
            _ => bail!(
                "unknown suggester {spec:?}: use builtin:noop, builtin:propagate, builtin:oracle or cmd:<command line>"
            ),
        },
    })
}

/// Scratch directories in use, removed by the Ctrl-C handler (drop removes them otherwise).
static SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// On SIGINT/SIGTERM: remove the scratch directories, then exit like the signal would.
fn clean_up_on_signals() -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install signal handlers")?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            for dir in SCRATCH.lock().map(|d| d.clone()).unwrap_or_default() {
                let _ = std::fs::remove_dir_all(dir);
            }
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    clean_up_on_signals()?;
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds");
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let rule = match args.match_rule {
        MatchArg::Historian => MatchRule::Historian,
        MatchArg::Es => MatchRule::Es {
            threshold: args.es_threshold,
        },
        MatchArg::Exact => MatchRule::Exact,
    };
    let order = match args.order {
        OrderArg::Fixed => OrderMode::Fixed,
        OrderArg::Adaptive => OrderMode::Adaptive,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut all_steps: Vec<FlowStep> = Vec::new();
    let mut failed = 0;
    for path in &args.trajectory {
        let trajectory: Trajectory = match std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))
            .and_then(|text| {
                serde_json::from_str(&text)
                    .with_context(|| format!("{} is not a trajectory", path.display()))
            }) {
            Ok(t) => t,
            Err(error) => {
                eprintln!("nextedit: skipping {}: {error:#}", path.display());
                failed += 1;
                continue;
            }
        };
        let (mut suggester, feed) = build_suggester(&args.suggester, timeout)?;
        let scratch = tempfile::Builder::new()
            .prefix("nextedit-replay-")
            .tempdir()
            .context("cannot create a scratch directory")?;
        SCRATCH
            .lock()
            .expect("scratch lock")
            .push(scratch.path().to_path_buf());
        let revealed = Revealed {
            commit_message: args
                .reveal
                .contains(&RevealArg::Message)
                .then(|| {
                    trajectory
                        .session
                        .commit
                        .as_ref()
                        .and_then(|c| c.message.clone())
                })
                .flatten(),
            changed_files: args
                .reveal
                .contains(&RevealArg::Files)
                .then(|| trajectory.files.iter().map(|f| f.path.clone()).collect()),
        };
        let language = trajectory.files.iter().find_map(|f| f.language.clone());
        let config = ReplayConfig {
            order,
            rule,
            seed: args.seed,
            revealed,
            language,
            project: trajectory
                .session
                .commit
                .as_ref()
                .and_then(|c| c.project.clone()),
        };
        let outcome = match replay(
            &trajectory,
            suggester.as_mut(),
            &mut DirWorkspace::new(scratch.path()),
            &config,
            feed.as_deref(),
        ) {
            Ok(outcome) => outcome,
            Err(error) => {
                eprintln!("nextedit: skipping {}: {error}", path.display());
                failed += 1;
                continue;
            }
        };
        SCRATCH
            .lock()
            .expect("scratch lock")
            .retain(|d| d != scratch.path());
        all_steps.extend(outcome.steps.iter().map(|s| s.flow.clone()));
        if args.json {
            writeln!(out, "{}", outcome_json(&trajectory, &outcome))?;
        } else {
            print_outcome(&mut out, path, &trajectory, &outcome)?;
        }
    }
    let summary = aggregate(&all_steps, &HISTORIAN_KS);
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({"type": "summary", "suggester": args.suggester, "summary": summary, "failed": failed})
        )?;
    } else {
        writeln!(
            out,
            "\n{} over {} steps ({} trajectories failed)",
            args.suggester, summary.steps, failed
        )?;
        writeln!(
            out,
            "  micro P/R/F1 {:.3} / {:.3} / {:.3}   macro P/R/F1 {:.3} / {:.3} / {:.3}",
            summary.micro.precision,
            summary.micro.recall,
            summary.micro.f1,
            summary.macro_.precision,
            summary.macro_.recall,
            summary.macro_.f1
        )?;
        let hits: Vec<String> = summary
            .hit_at
            .iter()
            .map(|(k, v)| format!("hit@{k} {v:.3}"))
            .collect();
        writeln!(out, "  {}   MRR {:.3}", hits.join("  "), summary.mrr)?;
        writeln!(
            out,
            "  flow: keeping {:.3}  jumping {:.3}  reverting {:.3}  breaking {:.3}",
            summary.shares.flow_keeping,
            summary.shares.flow_jumping,
            summary.shares.flow_reverting,
            summary.shares.flow_breaking
        )?;
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

fn outcome_json(trajectory: &Trajectory, outcome: &ReplayOutcome) -> serde_json::Value {
    let id = |i: usize| trajectory.edits[i].id.clone();
    let steps: Vec<serde_json::Value> = outcome
        .steps
        .iter()
        .map(|s| {
            let prf = s.flow.prf();
            serde_json::json!({
                "step": s.step,
                "allowed": s.allowed.iter().map(|&i| id(i)).collect::<Vec<_>>(),
                "predictions": s.predictions.iter().map(|p| serde_json::json!({
                    "rank": p.rank, "file": p.edit.file, "start_line": p.edit.start_line, "end_line": p.edit.end_line,
                    "matched": p.matched.map(id), "class": p.class.key(),
                })).collect::<Vec<_>>(),
                "precision": prf.precision, "recall": prf.recall, "f1": prf.f1,
                "content": s.content.as_ref().map(|c| serde_json::json!({"edit": id(c.gold), "bleu": c.bleu, "es": c.es, "generated": c.generated})),
                "suggest_error": s.suggest_error, "generate_error": s.generate_error,
                "suggest_ms": s.suggest_latency.as_secs_f64() * 1e3,
                "generate_ms": s.generate_latency.map(|d| d.as_secs_f64() * 1e3),
                "applied": id(s.applied),
            })
        })
        .collect();
    serde_json::json!({
        "type": "trajectory",
        "trajectory": trajectory.session.id,
        "initial": id(outcome.initial),
        "order": outcome.order.iter().map(|&i| id(i)).collect::<Vec<_>>(),
        "initialize_error": outcome.initialize_error,
        "steps": steps,
    })
}

fn print_outcome(
    out: &mut impl Write,
    path: &std::path::Path,
    trajectory: &Trajectory,
    outcome: &ReplayOutcome,
) -> std::io::Result<()> {
    let id = |i: usize| trajectory.edits[i].id.as_str();
    writeln!(
        out,
        "{} ({} edits, initial {})",
        path.display(),
        trajectory.edits.len(),
        id(outcome.initial)
    )?;
    if let Some(error) = &outcome.initialize_error {
        writeln!(out, "  initialize failed: {error}")?;
    }
    writeln!(
        out,
        "  {:>4}  {:>5}  {:>5}  {:>5}  {:>4}  {:>4}  {:>4}  {:>4}  {:>6}  {:>5}  {:>8}  APPLIED",
        "STEP", "PREDS", "P", "R", "KEEP", "JUMP", "REV", "BRK", "BLEU", "ES", "MS"
    )?;
    for s in &outcome.steps {
        let prf = s.flow.prf();
        let count = |c| s.predictions.iter().filter(|p| p.class == c).count();
        use nextedit::metrics::flow::FlowClass::*;
        let (bleu, es) = s
            .content
            .as_ref()
            .map_or(("-".to_string(), "-".to_string()), |c| {
                (format!("{:.1}", c.bleu), format!("{:.3}", c.es))
            });
        writeln!(
            out,
            "  {:>4}  {:>5}  {:>5.3}  {:>5.3}  {:>4}  {:>4}  {:>4}  {:>4}  {:>6}  {:>5}  {:>8.1}  {}{}",
            s.step,
            s.predictions.len(),
            prf.precision,
            prf.recall,
            count(Keeping),
            count(Jumping),
            count(Reverting),
            count(Breaking),
            bleu,
            es,
            s.suggest_latency.as_secs_f64() * 1e3,
            id(s.applied),
            s.suggest_error
                .as_deref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}
