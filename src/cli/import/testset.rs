//! `nextedit import historian-testset`: the testset's repositories fetched locally.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::core::import::historian::parse_testset;
use nextedit::service::git_fetch::{FetchEvent, fetch_testset};

/// Historian's testset → local repositories holding its commits, ready for derive/replay
///
/// Reads the testset (`{language: [{"commit_url": "<repository URL>/commit/<sha>"}]}`),
/// and fetches each repository once into DIR/OWNER/NAME.git (a bare repository; made
/// when absent, updated when there): only the listed commits and their parents, not
/// whole histories. Commits already there are not fetched again, so running it again
/// retries only what failed. This is the one nextedit command that uses the network:
/// it runs your `git` on the URLs in FILE (https://, http://, git://, ssh://, file://
/// or absolute paths) and sends nothing of yours.
///
/// Prints one line per ready commit: the repository directory, a tab, the commit,
/// a tab, the testset's language; on standard error one line per repository (a
/// progress bar on a terminal, nothing with --quiet) and at the end every failure with
/// git's reason. A bad
/// entry, an unreachable repository or a missing commit is skipped; the rest go on.
/// Exit code 1 when something was skipped, 2 when no commit could be had.
///
/// Example:
///   nextedit import historian-testset testset.json --clone-into ~/testset > commits.tsv
///   while IFS=$'\t' read -r repo sha lang; do
///     nextedit derive --repo "$repo" --commit "$sha" --store; done < commits.tsv
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct HistorianTestsetArgs {
    /// Historian's testset JSON file
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// Directory the repositories are fetched into, as DIR/OWNER/NAME.git
    #[arg(long, value_name = "DIR")]
    clone_into: PathBuf,

    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per repository otherwise); failures are still listed
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `nextedit import historian-testset`.
pub fn run(args: HistorianTestsetArgs) -> Result<i32> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let document: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", args.file.display()))?;
    let testset = parse_testset(&document).with_context(|| args.file.display().to_string())?;
    for problem in &testset.problems {
        eprintln!(
            "skipped {}: {}",
            args.file.display(),
            nextedit::base::secrets::scrub(&problem.to_string())
        );
    }
    if testset.repositories.is_empty() {
        bail!("{}: no usable commit URL", args.file.display());
    }
    std::fs::create_dir_all(&args.clone_into)
        .with_context(|| format!("cannot create {}", args.clone_into.display()))?;
    let total = testset.repositories.len();
    let progress = Progress::new(ProgressMode::detect(args.quiet), "repositories");
    progress.start(total);
    let outcomes = fetch_testset(
        &args.clone_into,
        &testset.repositories,
        |event| match event {
            FetchEvent::Started { repository, .. } => progress.working_on(&repository.name),
            FetchEvent::Done {
                repository,
                outcome,
                ..
            } => {
                progress.suspend(|| {
                    for commit in &outcome.ready {
                        println!(
                            "{}\t{}\t{}",
                            outcome.dir.display(),
                            commit.sha,
                            commit.language
                        );
                    }
                });
                let failed = match outcome.failed.len() {
                    0 => String::new(),
                    n => format!(", {n} failed"),
                };
                progress.item(
                    &repository.name,
                    &format!(
                        "{} of {} commits ready ({} fetched){failed}",
                        outcome.ready.len(),
                        repository.commits.len(),
                        outcome.fetched
                    ),
                );
            }
        },
    );
    progress.finish();
    let (mut ready, mut failed) = (0, 0);
    for (repository, outcome) in testset.repositories.iter().zip(&outcomes) {
        ready += outcome.ready.len();
        failed += outcome.failed.len();
        match &outcome.error {
            Some(error) => eprintln!(
                "failed {} ({}, all {} commits): {}",
                repository.name,
                nextedit::base::secrets::scrub(&repository.url),
                outcome.failed.len(),
                nextedit::base::secrets::scrub(&error.to_string())
            ),
            None => {
                for (commit, reason) in &outcome.failed {
                    eprintln!(
                        "failed {} {}: {}",
                        repository.name,
                        commit.sha,
                        nextedit::base::secrets::scrub(&reason.to_string())
                    );
                }
            }
        }
    }
    let commits = testset.commit_count();
    let usable = outcomes.iter().filter(|o| !o.ready.is_empty()).count();
    eprintln!(
        "{ready} of {commits} commits ready in {usable} of {total} repositories under {} ({failed} failed, {} entries skipped)",
        args.clone_into.display(),
        testset.problems.len()
    );
    if ready == 0 {
        bail!("no commit of {} could be fetched", args.file.display());
    }
    Ok(if failed + testset.problems.len() > 0 {
        1
    } else {
        0
    })
}
