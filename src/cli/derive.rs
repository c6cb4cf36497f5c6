//! `nextedit derive`: git commits → trajectories.

use nextedit::store::SessionStore;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::engine::history::derive::LspPlan;
use nextedit::engine::history::lsp::{LspStats, ServerSet, discover_servers};
use nextedit::engine::history::order_file::read_order_file;
use nextedit::engine::history::selection::describe_selection;
use nextedit::engine::history::{CommitSource, GitRepository, Merges, select, workspace_name};

/// Derive trajectories (edits and their natural partial order) from git commits
///
/// Each commit becomes one trajectory of kind `commit`: its changed files with
/// parent and commit text, its edits (maximal runs of changed lines, numbered like
/// `git diff -U0`: files in diff order, top to bottom, ids e0, e1, …) with
/// structural paths and the identifiers each edit defines, imports and uses, and a
/// partial order over the edits built from dependency edges (def→use,
/// signature→call, import→use, clones, test↔implementation: `bi`; moves:
/// `before`).
///
/// Binary, vendored, generated and non-UTF-8 files are listed with a `skipped`
/// reason. Applying all edits to the parent must give the commit byte for byte; a
/// commit where it does not is reported and skipped. Merge commits are refused.
///
/// With --range, what was selected is said first ("43 commits, 41 merges skipped");
/// a failing commit is reported on stderr and the batch goes on (exit code 1 at the
/// end). Merges are left out (exit 0 if nothing else failed), or with
/// --merges first-parent derived against their first parent.
///
/// Example:
///
///     nextedit derive --repo ~/src/flask --commit HEAD --out head.json
///     nextedit derive --repo ~/src/flask --range v3.0.0..v3.1.0 --out trajectories/
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DeriveArgs {
    /// Repository to read (the directory or any directory inside it)
    #[arg(long, value_name = "PATH", default_value = ".")]
    repo: PathBuf,

    /// Commit to derive: any revision git understands (sha, HEAD~2, tag)
    #[arg(
        long,
        value_name = "REV",
        required_unless_present = "range",
        conflicts_with = "range"
    )]
    commit: Option<String>,

    /// Commits to derive, oldest first, as git reads a range: A..B (reachable from B,
    /// not from A), A...B (from either, not both), R^! (R alone), R (R and all its
    /// ancestors: the whole history up to R)
    #[arg(long, value_name = "A..B")]
    range: Option<String>,

    /// Merge commits in --range: skip (leave them out), or first-parent (derive each
    /// against its first parent)
    #[arg(long, value_name = "HOW", value_parser = super::parse_merges, default_value = "skip", requires = "range")]
    merges: Merges,

    /// Where to write: a file for --commit, a directory (one <sha>.json each) for
    /// --range. Default: standard output (pretty JSON for --commit, one trajectory
    /// per line for --range)
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,

    /// Replace the derived order with an external one: an EditFlow annotation
    /// (`partial_orders` with `edit_hunk_pair`), a Historian/EditFlow order file
    /// (`partial_orders` with `src`/`tgt`) or a Historian results file
    /// (`partial_order_graph.edges`). Only with --commit
    #[arg(long, value_name = "FILE", requires = "commit")]
    order_from: Option<PathBuf>,

    /// Check and extend the tree-sitter edges with language servers run on the parent
    /// and commit trees: pyright-langserver (Python), gopls (Go), jdtls (Java), found on
    /// PATH or named by NEXTEDIT_PYRIGHT, NEXTEDIT_GOPLS, NEXTEDIT_JDTLS. A name-based
    /// reason whose use the server resolves elsewhere is dropped (kept in the dependent
    /// edit's `lsp_refuted` annotation); references to a changed definition inside
    /// another edit add `lsp_reference`. At most 2000 requests per side and language.
    /// A language without a server keeps its tree-sitter edges. Costs seconds per commit
    /// with --commit; with --range the servers are started once and kept alive, told of
    /// each commit's changed files (a server that dies is started again)
    #[arg(long)]
    lsp: bool,

    /// With --lsp --range: start the servers afresh for each commit (slower; to compare)
    #[arg(long, requires_all = ["lsp", "range"])]
    lsp_per_commit: bool,

    /// Also store each trajectory as a session of kind `commit` in the database
    /// (then `nextedit replay --session ID` replays it)
    #[arg(long)]
    store: bool,

    /// Database for --store [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH", requires = "store")]
    db: Option<std::path::PathBuf>,

    /// With --range: show no progress on stderr (else a bar with count, rate and ETA on
    /// a terminal, one line per commit otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `nextedit derive`.
pub fn run(args: DeriveArgs) -> Result<i32> {
    let servers = args.lsp.then(discover_servers);
    if servers.as_ref() == Some(&ServerSet::default()) {
        bail!(
            "--lsp found no language server: install pyright-langserver, gopls or jdtls, or set NEXTEDIT_PYRIGHT / NEXTEDIT_GOPLS / NEXTEDIT_JDTLS"
        );
    }
    // One server per language and side for a whole range, unless asked otherwise.
    let mut plan = LspPlan::new(servers, args.lsp_per_commit || args.commit.is_some())?;
    // The error names the repository already (no "opening …" context repeating it).
    let repo = GitRepository::open(&args.repo)?;
    let mut db = match args.store {
        true => Some(nextedit::store::Database::open(
            &args
                .db
                .clone()
                .unwrap_or_else(nextedit::store::default_path),
        )?),
        false => None,
    };
    match &args.commit {
        Some(rev) => derive_commit(&args, &repo, db.as_mut(), &mut plan, rev),
        None => derive_range(&args, &repo, db.as_mut(), &mut plan),
    }
}

/// `--commit`: one trajectory, written pretty.
fn derive_commit(
    args: &DeriveArgs,
    repo: &GitRepository,
    db: Option<&mut nextedit::store::Database>,
    plan: &mut LspPlan,
    rev: &str,
) -> Result<i32> {
    let project = repo.project();
    let sha = repo.resolve(rev)?;
    let record = repo.load(&sha)?;
    let (mut trajectory, stats) = plan.derive(repo, &record, project.as_deref())?;
    if let Some(stats) = stats {
        report_lsp(&sha, &stats);
    }
    trajectory.session.workspace = Some(workspace_name(&args.repo));
    if let Some(path) = &args.order_from {
        trajectory.order = read_order_file(path, trajectory.edits.len())?;
    }
    if let Some(db) = db {
        let id = db.import_trajectory(&trajectory)?;
        eprintln!("stored {} as session {id}", &sha[..10]);
    }
    let json = serde_json::to_string_pretty(&trajectory)?;
    match &args.out {
        Some(path) => std::fs::write(path, json + "\n")
            .with_context(|| format!("writing {}", path.display()))?,
        None => println!("{json}"),
    }
    Ok(0)
}

/// `--range`: one trajectory per selected commit, a commit that fails skipped (and
/// said), one JSON line each or one file each in `--out`.
fn derive_range(
    args: &DeriveArgs,
    repo: &GitRepository,
    mut db: Option<&mut nextedit::store::Database>,
    plan: &mut LspPlan,
) -> Result<i32> {
    let project = repo.project();
    let spec = args
        .range
        .as_deref()
        .expect("clap requires --commit or --range");
    let selection =
        select(repo, spec, args.merges).with_context(|| format!("reading the range {spec:?}"))?;
    eprintln!("{}", describe_selection(spec, &selection));
    let commits = selection.commits;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let progress = Progress::new(ProgressMode::detect(args.quiet), "commits");
    progress.start(commits.len());
    let mut failed = 0usize;
    let mut lsp = LspTotals::default();
    let mut stdout = std::io::stdout().lock();
    for sha in &commits {
        let failed_before = failed;
        let derived = repo
            .load_with(sha, args.merges)
            .map_err(anyhow::Error::from)
            .and_then(|record| {
                let (mut trajectory, stats) = plan.derive(repo, &record, project.as_deref())?;
                if let Some(stats) = stats {
                    lsp.add(&stats);
                    progress.suspend(|| report_unavailable(sha, &stats));
                }
                trajectory.session.workspace = Some(workspace_name(&args.repo));
                Ok(trajectory)
            });
        match derived {
            Ok(trajectory) => {
                if let Some(db) = db.as_deref_mut() {
                    db.import_trajectory(&trajectory)?;
                }
                match &args.out {
                    Some(dir) => {
                        let path = dir.join(format!("{sha}.json"));
                        let json = serde_json::to_string_pretty(&trajectory)?;
                        std::fs::write(&path, json + "\n")
                            .with_context(|| format!("writing {}", path.display()))?;
                    }
                    None => {
                        serde_json::to_writer(&mut stdout, &trajectory)?;
                        stdout.write_all(b"\n")?;
                    }
                }
            }
            Err(error) => {
                failed += 1;
                let error = format!("{error:#}");
                progress.suspend(|| {
                    eprintln!("skipped {sha}: {}", nextedit::base::secrets::scrub(&error))
                });
            }
        }
        let outcome = if failed > failed_before {
            "skipped"
        } else {
            "derived"
        };
        progress.item(&sha[..10.min(sha.len())], outcome);
    }
    progress.finish();
    eprintln!(
        "derived {} of {} commits ({failed} skipped)",
        commits.len() - failed,
        commits.len()
    );
    lsp.report();
    Ok(if failed > 0 { 1 } else { 0 })
}

/// The `--lsp` pass's figures summed over a range's commits, and how many had it.
#[derive(Default)]
struct LspTotals {
    stats: LspStats,
    commits: usize,
}

impl LspTotals {
    fn add(&mut self, stats: &LspStats) {
        self.stats.add(stats);
        self.commits += 1;
    }

    /// One line on stderr, when any commit had the pass.
    fn report(&self) {
        let s = &self.stats;
        if self.commits > 0 {
            eprintln!(
                "lsp: {} server(s) started ({} restarted), {} definition and {} references requests, {} reasons refuted, {:.1} s per commit on average",
                s.servers_started,
                s.restarted,
                s.requests,
                s.reference_requests,
                s.refuted,
                s.seconds / self.commits as f64
            );
        }
    }
}

fn report_lsp(sha: &str, stats: &LspStats) {
    eprintln!(
        "lsp {}: {} server(s), {} definition and {} references requests ({} failed), {} reasons refuted, in {:.1} s",
        &sha[..10.min(sha.len())],
        stats.servers_started,
        stats.requests,
        stats.reference_requests,
        stats.failures,
        stats.refuted,
        stats.seconds
    );
    report_unavailable(sha, stats);
}

/// The servers that could not start or answer for a commit, one line each.
fn report_unavailable(sha: &str, stats: &LspStats) {
    let short = &sha[..10.min(sha.len())];
    for reason in &stats.unavailable {
        eprintln!("lsp {short}: {}", nextedit::base::secrets::scrub(reason));
    }
}
