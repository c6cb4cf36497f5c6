//! `nextedit tasks cut`: reads the arguments, cuts through `task::history`, writes JSON
//! Lines and reports skipped commits.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::core::trajectory::SliceSpec;
use nextedit::engine::history::{CommitSource, GitRepository, Merges, select};
use nextedit::engine::task::cut::{CutOptions, scenario_name};
use nextedit::engine::task::session::DEFAULT_PAUSE_MS;
use nextedit::engine::task::{Scenario, Task};
use nextedit::service::sessions::load_session_trajectory;
use nextedit::service::tasks::history::{SessionBase, cut_commits, cut_session};
use nextedit::store::Database;

mod context;

use context::ContextArgs;

/// Cut completion tasks from commits or a recorded session
///
/// Each task (one JSON line, schemas/task.schema.json) is a hole in one file of one
/// exact state — a commit's tree, or a session's texts at a pause — with the prefix,
/// the suffix, the ground truth, the enclosing definition, the dependency level, the
/// tests that call it, and retrieved context. Tasks come from the code each commit
/// touched (--all-functions: every function of its state), at most --max-per-commit
/// per commit and scenario, sampled with --seed. Scenarios (comma-separated, or all):
/// full_block, incomplete_suffix, inner_block (about 20 % already complete: empty
/// ground truth), rag (plus the 3 most similar functions as hints), added_function
/// (a function the commit added: its body, signature and docstring given),
/// session_pause (with --session: what the developer typed next after a pause).
///
/// A commit with nothing to cut (a merge, only tests or docs touched, no block in
/// the lines touched) is named on stderr and is no failure; a commit that cannot be
/// read is skipped with its reason (exit status 1); nothing cut at all is an error.
///
/// Examples:
///   nextedit tasks cut --repo . --range HEAD~50..HEAD --out tasks.jsonl
///   nextedit tasks cut --repo . --commit HEAD --scenario added_function,rag
///   nextedit tasks cut --repo . --range v1..v2 --context-from head
///   nextedit tasks cut --session 3 --db rec.db
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CutArgs {
    /// The repository [default: the current directory; for --session, the session's
    /// workspace]
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
    /// Cut from this commit
    #[arg(long, value_name = "REV", conflicts_with_all = ["range", "session"])]
    commit: Option<String>,
    /// Cut from every commit of a range (`A..B`, as git reads it), merges skipped
    #[arg(long, value_name = "A..B", conflicts_with = "session")]
    range: Option<String>,
    /// Cut from a recorded session (id in --db)
    #[arg(long, value_name = "ID", required_unless_present_any = ["commit", "range"])]
    session: Option<i64>,
    /// Database of --session [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Scenarios to cut, comma-separated, or `all` [default: every commit scenario,
    /// or session_pause with --session]
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    scenario: Vec<String>,
    /// Most tasks per commit (or session) and scenario, a seeded sample
    #[arg(long, default_value_t = 10, value_name = "N", allow_negative_numbers = true, value_parser = nextedit::base::ranges::count)]
    max_per_commit: usize,
    /// Seed of the sample and of the inner blocks left complete
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Cut from every function of each commit's state, not only the code it touched
    #[arg(long)]
    all_functions: bool,
    /// With --session: milliseconds without typing that make a pause
    #[arg(long, default_value_t = DEFAULT_PAUSE_MS, value_name = "MS", allow_negative_numbers = true, value_parser = nextedit::base::ranges::pause_ms)]
    pause_ms: f64,
    #[command(flatten)]
    context: ContextArgs,
    /// Write the tasks to this file (JSON Lines) instead of stdout
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// With --range: show no progress on stderr
    #[arg(long)]
    quiet: bool,
}

/// The scenarios `names` asks for.
fn scenarios(names: &[String], session: bool) -> anyhow::Result<BTreeSet<Scenario>> {
    const COMMIT: [Scenario; 5] = [
        Scenario::FullBlock,
        Scenario::IncompleteSuffix,
        Scenario::InnerBlock,
        Scenario::Rag,
        Scenario::AddedFunction,
    ];
    if names.is_empty() {
        return Ok(if session {
            BTreeSet::from([Scenario::SessionPause])
        } else {
            COMMIT.into_iter().collect()
        });
    }
    let mut out = BTreeSet::new();
    for name in names {
        if name == "all" {
            out.extend(COMMIT);
            out.insert(Scenario::SessionPause);
            continue;
        }
        let scenario = COMMIT
            .into_iter()
            .chain([Scenario::SessionPause])
            .find(|s| scenario_name(*s) == name)
            .with_context(|| {
                format!("--scenario {name:?}: use full_block, incomplete_suffix, inner_block, rag, added_function, session_pause or all")
            })?;
        out.insert(scenario);
    }
    Ok(out)
}

/// What a `cmd:` retriever must never see: `paths` (the repository, the database),
/// as given and canonicalized.
fn forbidden(paths: &[&Path]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in paths {
        out.push(path.to_path_buf());
        out.extend(path.canonicalize());
    }
    out
}

/// Runs `tasks cut`; returns 1 when commits could not be read.
pub fn run(args: CutArgs) -> anyhow::Result<i32> {
    let options = CutOptions {
        scenarios: scenarios(&args.scenario, args.session.is_some())?,
        max_per_commit: Some(args.max_per_commit),
        seed: args.seed,
        all_functions: args.all_functions,
        context: args.context.options(),
    };
    let (tasks, skipped) = match args.session {
        Some(id) => (cut_from_session(&args, &options, id)?, 0),
        None => cut_from_commits(&args, &options)?,
    };
    let mut text = String::new();
    for task in &tasks {
        text.push_str(&serde_json::to_string(task)?);
        text.push('\n');
    }
    match &args.out {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(if skipped == 0 { 0 } else { 1 })
}

/// `--session`: the tasks of one recorded session's pauses.
fn cut_from_session(args: &CutArgs, options: &CutOptions, id: i64) -> anyhow::Result<Vec<Task>> {
    let path = args
        .db
        .clone()
        .unwrap_or_else(nextedit::store::default_path);
    let db = Database::open_existing(&path)
        .with_context(|| format!("opening the database {}", path.display()))?;
    // The session's own repository unless told otherwise.
    let dir = match &args.repo {
        Some(dir) => dir.clone(),
        None => load_session_trajectory(&db, id, &SliceSpec::default(), None)
            .with_context(|| format!("session {id} of {}", path.display()))?
            .session
            .workspace
            .map_or_else(|| PathBuf::from("."), PathBuf::from),
    };
    let repo = GitRepository::discover(&dir).ok();
    let mut retriever = args
        .context
        .retriever(forbidden(&[dir.as_path(), path.as_path()]))?;
    let mut head = args.context.head_index(repo.as_ref(), &dir)?;
    let base = SessionBase {
        repo: repo.as_ref(),
        pause_ms: args.pause_ms,
    };
    let tasks = cut_session(&db, id, &base, options, retriever.as_mut(), head.as_mut())
        .with_context(|| format!("cutting session {id} of {}", path.display()))?;
    if tasks.is_empty() {
        anyhow::bail!(
            "session {id}: no pause of {} ms followed by typing: nothing to cut",
            args.pause_ms
        );
    }
    Ok(tasks)
}

/// `--commit` or `--range`: the tasks of each commit, and how many commits were
/// skipped (each said on stderr).
fn cut_from_commits(args: &CutArgs, options: &CutOptions) -> anyhow::Result<(Vec<Task>, usize)> {
    let dir = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let repo = GitRepository::open(&dir)
        .with_context(|| format!("opening the repository {}", dir.display()))?;
    let commits = match (&args.commit, &args.range) {
        (Some(rev), _) => vec![
            repo.resolve(rev)
                .with_context(|| format!("--commit {rev} in {}", dir.display()))?,
        ],
        (None, Some(spec)) => {
            select(&repo, spec, Merges::Skip)
                .with_context(|| format!("reading the range {spec:?}"))?
                .commits
        }
        (None, None) => unreachable!("clap requires --commit, --range or --session"),
    };
    let mut retriever = args.context.retriever(forbidden(&[dir.as_path()]))?;
    let mut head = args.context.head_index(Some(&repo), &dir)?;
    let progress = Progress::new(
        if args.range.is_some() {
            ProgressMode::detect(args.quiet)
        } else {
            ProgressMode::detect(true)
        },
        "commits",
    );
    progress.start(commits.len());
    let outcome = cut_commits(
        &repo,
        &commits,
        options,
        retriever.as_mut(),
        head.as_mut(),
        |sha, outcome| progress.item(sha, outcome),
    )
    .with_context(|| format!("cutting tasks from {}", dir.display()))?;
    progress.finish();
    for (sha, reason) in &outcome.nothing {
        eprintln!("{sha}: {reason}");
    }
    for (sha, reason) in &outcome.skipped {
        eprintln!(
            "skipped {sha}: {}",
            nextedit::base::secrets::scrub(&reason.to_string())
        );
    }
    if outcome.tasks.is_empty() {
        anyhow::bail!(
            "no task cut from {} commit(s) of {}",
            commits.len(),
            dir.display()
        );
    }
    Ok((outcome.tasks, outcome.skipped.len()))
}
