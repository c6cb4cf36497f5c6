//! `nextedit replay`: walk trajectories through a next-edit suggester and score it.
//! Parses the arguments into the library's run plan (`run::RunSettings` and
//! `run::RunRequest`), calls [`nextedit::service::run`], prints
//! (`settings`: the arguments as the library's settings; `printer`: what a run says;
//! `output`: JSON, Historian's files, the verdict and the run's last words;
//! `shard`: the scale-out arguments, plans and shards; `repro`: cache and repetitions;
//! `limits`: the suggester's limits and `--env`; `session_slice`: which part of a
//! stored session; `judge`: the LLM-as-judge flags).

mod judge;
mod limits;
mod output;
mod printer;
mod repro;
mod session_slice;
mod settings;
mod shard;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::service::run::{self, RunSettings, plan};
use nextedit::store::Database;
use printer::Printer;

/// Replay trajectories through a next-edit suggester and score it
///
/// Each trajectory (`nextedit sessions export` or `nextedit derive` output) is
/// replayed in a scratch directory holding its files at the start state. At every
/// step the suggester proposes ranked next edits; they are matched one to one to the
/// remaining gold edits and classified (flow keeping, jumping, reverting, breaking);
/// when none keeps the flow, the suggester writes the content of the next edit's
/// location, scored with BLEU-4 and ES. Then the gold edit is applied.
///
/// Every step is stored in the database as it finishes (a run id is printed first);
/// `--resume RUN` continues an interrupted run where it stopped, with its settings,
/// given the same --suggester and sandbox flags again (they are compared with the
/// stored ones, never taken from the database).
///
/// Suggesters: builtin:noop (never suggests; scores 0), builtin:propagate (repeats
/// each applied rename or one-line change at the other places it applies, nearest
/// first), builtin:retrieve (BM25 over the worktree's functions and classes: the
/// last edit's change proposed in the chunks most like the edited one), builtin:oracle
/// (the gold answers; the maximum), openai:<URL>?model=<NAME>
/// (an OpenAI-compatible endpoint; key from $OPENAI_API_KEY or key_env=VAR, never
/// stored), lsp:'<server command>' (a language server's renames, quick fixes, fix-all
/// and completions, started behind nextedit's proxy and sandboxed like cmd:), or
/// cmd:'<command line>' speaking the protocol of docs/suggesters.md.
///
/// Examples:
///   nextedit replay --trajectory commit.json --suggester builtin:propagate
///   nextedit replay --trajectory a.json --trajectory b.json --suggester "cmd:python3 my_suggester.py" --json
///   nextedit replay --repo . --range HEAD~5..HEAD --suggester "lsp:ruff server"
///   nextedit replay --resume 7 --suggester "cmd:python3 my_suggester.py"
///   nextedit replay --repo . --range HEAD~50..HEAD --suggester builtin:propagate --plan plan.jsonl
///   nextedit replay --trajectory a.json --suggester builtin:retrieve \
///     --judge "openai:http://127.0.0.1:8080/v1?model=m" --judge-prompt zed-qa
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReplayArgs {
    /// Trajectory JSON file (can be repeated)
    #[arg(long, value_name = "FILE", required_unless_present_any = ["resume", "session", "repo"])]
    trajectory: Vec<PathBuf>,

    /// A session stored in the database (can be repeated)
    #[arg(long, value_name = "ID")]
    session: Vec<i64>,

    #[command(flatten)]
    slice: session_slice::SessionSliceArgs,

    /// A git repository whose commits to replay (with --commit or --range)
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,

    /// A commit of --repo (can be repeated); each replays in a scratch checkout of its parent
    #[arg(long, value_name = "REV", requires = "repo")]
    commit: Vec<String>,

    /// Commits of --repo, oldest first, as git reads a range: A..B, A...B, R^! (R
    /// alone), R (R and all its ancestors); what was selected is said before starting
    #[arg(long, value_name = "A..B", requires = "repo")]
    range: Option<String>,

    /// Merge commits in --range: skip (leave them out; one summary line), or
    /// first-parent (replay each as its change against its first parent)
    #[arg(long, value_name = "HOW", value_parser = super::parse_merges, default_value = "skip", requires = "range")]
    merges: nextedit::engine::history::Merges,

    /// builtin:noop, builtin:propagate, builtin:retrieve, builtin:oracle,
    /// openai:<URL>?model=<NAME>[&template=zeta|nes] (an OpenAI-compatible endpoint,
    /// docs/suggesters.md), lsp:<language server command> (e.g. "lsp:pyright-langserver
    /// --stdio"), recorded:<server> (a --session's own offers from that server, e.g.
    /// recorded:pyright; docs/live.md), or cmd:<command line>
    #[arg(long, value_name = "SPEC", required_unless_present = "resume")]
    suggester: Option<String>,

    /// Continue an interrupted run: its trajectories and settings come from the database,
    /// but --suggester and the sandbox flags must be given again as the run was made
    #[arg(long, value_name = "RUN", conflicts_with_all = ["trajectory", "session", "repo"])]
    resume: Option<i64>,

    /// Which edit comes next: the natural order (fixed) or the suggester's best kept match (adaptive)
    #[arg(long, value_enum, default_value_t = OrderArg::Fixed)]
    order: OrderArg,

    /// How predictions match gold edits: bleu (default: Historian's BLEU-4 > 50 and the
    /// prediction changes its lines), historian (Historian compat, quirk included: an
    /// unchanged prediction can match), es (ES-Line ≥ --es-threshold), exact. Outside
    /// historian, an answer that leaves its lines unchanged is never a hit and its
    /// content scores BLEU 0 / ES 0
    #[arg(long = "match", value_enum, default_value_t = MatchArg::Bleu)]
    match_rule: MatchArg,

    /// Minimum ES for --match es
    #[arg(long, default_value_t = 0.5, value_name = "ES", allow_negative_numbers = true, value_parser = nextedit::base::ranges::fraction)]
    es_threshold: f64,

    /// What the suggester may see beyond the current state: message, files, commit (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    reveal: Vec<RevealArg>,

    /// Edits made by these origins are applied silently, never asked for (recorded
    /// sessions): format, code_action, rename, completion, external (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    exclude_origin: Vec<OriginArg>,

    /// Seed for tie-breaks (initial edit in adaptive order)
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Seconds a suggester may take per call
    #[arg(long, default_value_t = 60.0, value_name = "S", allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    timeout: f64,

    /// Seconds a suggester may take to answer `initialize` (loading a model)
    #[arg(long, default_value_t = 120.0, value_name = "S", allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    init_timeout: f64,

    /// After this many process failures in a row (crash, time-out, garbage) a
    /// trajectory stops asking the suggester; its remaining steps record why
    #[arg(long, default_value_t = 3, value_name = "N", allow_negative_numbers = true, value_parser = nextedit::base::ranges::give_up_after)]
    give_up_after: u32,

    /// How cmd: and lsp: suggesters are isolated: bwrap (only their worktree, program and
    /// the system's read-only directories visible; no network, no capability; no run
    /// when it cannot be made) or off (they can read everything; said on stderr)
    #[arg(long, value_enum, default_value_t = SandboxArg::Bwrap)]
    sandbox: SandboxArg,

    /// Let sandboxed suggesters use the network (a model API)
    #[arg(long)]
    allow_network: bool,

    /// An extra path sandboxed suggesters may read (a model's weights; can be repeated)
    #[arg(long, value_name = "PATH")]
    sandbox_ro: Vec<PathBuf>,

    /// An existing path sandboxed suggesters may write (a log or cache; can be repeated)
    #[arg(long, value_name = "PATH")]
    sandbox_rw: Vec<PathBuf>,

    #[command(flatten)]
    limits: limits::LimitArgs,

    /// Database for the run [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Trajectories replayed in parallel, each with its own suggester process
    #[arg(long, default_value_t = 1, value_name = "N", allow_negative_numbers = true, value_parser = nextedit::base::ranges::jobs)]
    jobs: usize,

    #[command(flatten)]
    output: output::OutputArgs,

    #[command(flatten)]
    repro: repro::ReproArgs,

    #[command(flatten)]
    judge: judge::JudgeArgs,

    #[command(flatten)]
    scale: shard::ShardArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OrderArg {
    Fixed,
    Adaptive,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum MatchArg {
    Bleu,
    Historian,
    Es,
    Exact,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum OriginArg {
    Format,
    CodeAction,
    Rename,
    Completion,
    External,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum RevealArg {
    Message,
    Files,
    /// The project name and the trajectory's own id (a commit's sha) in `initialize`.
    Commit,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum SandboxArg {
    Bwrap,
    Off,
}

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    run::install_process_guards()?;
    let db_path = args
        .db
        .clone()
        .unwrap_or_else(nextedit::store::default_path);
    let mut db = Database::open(&db_path)?;
    let printer = Printer::new(
        args.output.layout(),
        Progress::new(ProgressMode::detect(args.output.quiet), "trajectories"),
    );
    let mut failed = 0;
    let (run_id, settings) = match args.resume {
        Some(run) => (run, RunSettings::resumed(&db, run, &args.reasserted())?),
        None => {
            let settings = args
                .limits
                .apply(
                    args.output
                        .apply(args.repro.apply(args.judge.apply(args.settings()))),
                )
                .checked(args.sandbox_mode(), &printer)?;
            if let Some(path) = args.scale.plan() {
                return shard::write_plan(path, &settings, &args.request(), &db, &printer);
            }
            let Some(collected) = plan::collect(&args.request(), &db, &printer)? else {
                return Ok(0);
            };
            let run = plan::create(&mut db, &settings, &collected, &printer)?;
            failed += collected.failures.len();
            (run, settings)
        }
    };
    let json = (printer.layout, &printer.document);
    output::start(json, run_id, &db_path, &settings)?;
    let reasserted = settings.reasserted();
    let executed = run::execute_group(&mut db, &db_path, run_id, &reasserted, args.jobs, &printer)?;
    printer.progress.finish();
    failed += executed.failed;
    output::finish(
        &db,
        json,
        run_id,
        &settings,
        failed,
        executed.never_answered,
    )
}
