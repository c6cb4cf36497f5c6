//! `nextedit eval-order`: derived orders vs human-annotated ones.

use std::path::PathBuf;

use anyhow::{Context, Result};
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::engine::history::GitRepository;
use nextedit::engine::history::agreement::{
    Agreement, AnnotatedTrees, CommitOutcome, SkippedCommit, evaluate_annotations,
};
use nextedit::engine::history::crossval::{
    CrossValidation, Estimate, Headline, leave_one_repository_out, with_intervals,
};
use nextedit::engine::history::editflow::read_annotations;
use nextedit::engine::history::evaluate::{CommitEvaluation, Confusion, Figures};
use nextedit::engine::history::lsp::discover_servers;
use nextedit::engine::history::order::PairLabel;

/// Score derived edit orders against human-annotated ones (EditFlow format)
///
/// For each annotated commit, the commit is derived (edits numbered like EditFlow's
/// hunks: `git diff -U0`, files in diff order, top to bottom) and every unordered
/// pair of its edits is compared: the annotation says bi-directional, "0 before 1",
/// "1 before 0" or no relation (unlisted pairs are no relation); the derived order
/// says the same through its `bi` and `before` edges. No language model is called;
/// the result is deterministic.
///
/// Reported per commit and over all pairs of all commits: precision and recall per
/// label, related-vs-not precision/recall/F1, 4-way accuracy, and accuracy over the
/// annotated pairs only (the figure EditFlow's prompt tuning reports).
///
/// With --repo, commits are looked up by the sha at the end of `commit_url`.
/// Without it, each annotation must carry EditFlow's `commit_snapshots`, and its
/// parent and child files are rebuilt into a temporary repository (restoring the
/// final newline EditFlow's extraction lost); the report then says whether the
/// derived edits line up with EditFlow's hunks exactly.
///
/// Example:
///
///     nextedit eval-order --annotations tests/data/editflow-sample/
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct EvalOrderArgs {
    /// Annotations: an EditFlow commit file, a JSON list of them, or a directory of files
    #[arg(long, value_name = "PATH")]
    annotations: PathBuf,

    /// Repository holding the annotated commits. Default: rebuild each commit from
    /// its snapshots
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,

    /// Print the report as JSON instead of tables
    #[arg(long)]
    json: bool,

    /// Derive with `--lsp` too (language servers on the rebuilt parent and commit, one
    /// per language and side kept alive across the commits; see `nextedit derive
    /// --help`). Only when rebuilding from snapshots
    #[arg(long, conflicts_with = "repo")]
    lsp: bool,

    /// Also list every pair where the derived label differs from the annotation,
    /// with the annotator's reason, the derived edge's reasons and, with --lsp, the
    /// reasons the language server refuted (and where it resolved the use instead)
    #[arg(long)]
    explain: bool,

    /// Cross-validate by repository: for each repository, choose which rule kinds to
    /// trust on the other repositories' commits (dropping a kind while that raises
    /// all-pairs accuracy) and score the left-out repository with them; figures are
    /// pooled over the left-out repositories. Also lists each rule kind's links and
    /// how many of them are annotated related, per repository where below half
    #[arg(long, value_name = "UNIT", value_parser = ["repo"])]
    cv: Option<String>,

    /// Seed of the bootstrap behind the 95 % intervals (repositories resampled)
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per annotated commit otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `nextedit eval-order`.
pub fn run(args: EvalOrderArgs) -> Result<i32> {
    let commits = read_annotations(&args.annotations)
        .with_context(|| format!("reading annotations from {}", args.annotations.display()))?;
    let repo = args
        .repo
        .as_ref()
        .map(|path| {
            // The error names the repository already.
            GitRepository::open(path)
        })
        .transpose()?;
    let scratch = tempfile::tempdir().context("creating a scratch directory")?;
    let servers = args.lsp.then(discover_servers);
    let trees = match &repo {
        Some(repo) => AnnotatedTrees::Repository(repo),
        None => AnnotatedTrees::Snapshots {
            scratch: scratch.path(),
            servers: servers.as_ref(),
        },
    };
    let Agreement {
        results,
        disagreements,
        samples,
        skipped,
    } = {
        let progress = Progress::new(ProgressMode::detect(args.quiet), "commits");
        progress.start(commits.len());
        evaluate_annotations(&commits, trees, args.explain, |outcome| {
            progress.item(outcome.name(), &outcome.summary());
            if let CommitOutcome::Skipped(skipped) = outcome {
                let reason = nextedit::base::secrets::scrub(&skipped.reason);
                progress.suspend(|| eprintln!("skipped {}: {reason}", skipped.name));
            }
        })
    };
    let intervals = with_intervals(&samples, args.seed);
    let cross = args
        .cv
        .is_some()
        .then(|| leave_one_repository_out(&samples, args.seed));
    let mut all = Confusion::default();
    let mut annotated = Confusion::default();
    for result in &results {
        all.merge(&result.all_pairs);
        annotated.merge(&result.annotated_pairs);
    }
    if args.json {
        let report = serde_json::json!({
            "commits": results.iter().map(|r| serde_json::json!({
                "name": r.name, "edits": r.edits, "hunks_aligned": r.hunks_aligned,
                "all_pairs": Figures::from(&r.all_pairs), "annotated_pairs": Figures::from(&r.annotated_pairs),
            })).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|s| serde_json::json!({"name": s.name, "reason": s.reason})).collect::<Vec<_>>(),
            "overall": {"all_pairs": Figures::from(&all), "annotated_pairs": Figures::from(&annotated),
                        "confusion_all_pairs": all.counts},
        });
        let mut report = report;
        if args.explain {
            report["disagreements"] = serde_json::to_value(&disagreements)?;
        }
        report["overall"]["intervals"] = serde_json::to_value(&intervals)?;
        if let Some(cv) = &cross {
            report["cross_validation"] = serde_json::to_value(cv)?;
        }
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for d in &disagreements {
            println!("{d}");
        }
        if !disagreements.is_empty() {
            println!();
        }
        print_tables(&results, &skipped, &all, &annotated);
        print_intervals("all rules, 95 % intervals over repositories", &intervals);
        if let Some(cv) = &cross {
            print_cross_validation(cv);
        }
    }
    Ok(if skipped.is_empty() { 0 } else { 1 })
}

/// `value [low, high]` in percent.
fn interval(e: &Estimate) -> String {
    let (low, high) = (percent(e.low), percent(e.high));
    format!("{}% [{}, {}]", percent(e.value), low.trim(), high.trim())
}

fn print_intervals(title: &str, f: &Headline) {
    println!("{title}:");
    println!(
        "  accuracy (all pairs)        {}",
        interval(&f.accuracy_all_pairs)
    );
    println!(
        "  accuracy (annotated pairs)  {}",
        interval(&f.accuracy_annotated_pairs)
    );
    println!("  related F1                  {}", interval(&f.related_f1));
    println!(
        "  related precision           {}",
        interval(&f.related_precision)
    );
    println!(
        "  related recall              {}",
        interval(&f.related_recall)
    );
}

fn print_cross_validation(cv: &CrossValidation) {
    println!();
    println!(
        "leave-one-repository-out ({} repositories): rule kinds dropped on the others",
        cv.folds.len()
    );
    for fold in &cv.folds {
        println!(
            "  {:<40} {:>6}%  dropped: {}",
            fold.repository,
            percent(fold.accuracy_all_pairs),
            if fold.dropped.is_empty() {
                "-".to_owned()
            } else {
                fold.dropped.join(", ")
            }
        );
    }
    print_intervals(
        "held out, pooled, 95 % intervals over repositories",
        &cv.held_out,
    );
    println!();
    println!("links per rule kind (a pair counts once per kind), annotated related:");
    for rule in &cv.rules {
        println!("  {}", rule.row());
    }
}

fn percent(value: Option<f64>) -> String {
    value
        .map(|v| format!("{:5.1}", v * 100.0))
        .unwrap_or_else(|| "    -".to_string())
}

fn print_tables(
    results: &[CommitEvaluation],
    skipped: &[SkippedCommit],
    all: &Confusion,
    annotated: &Confusion,
) {
    println!(
        "{:<58} {:>5} {:>5} {:>7} {:>6} {:>6} {:>6} {:>6}",
        "commit", "edits", "pairs", "aligned", "acc%", "relP%", "relR%", "relF1%"
    );
    for r in results {
        let c = &r.all_pairs;
        let aligned = match r.hunks_aligned {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        println!(
            "{:<58} {:>5} {:>5} {:>7} {:>6} {:>6} {:>6} {:>6}",
            r.name,
            r.edits,
            c.total(),
            aligned,
            percent(c.accuracy()),
            percent(c.related_precision()),
            percent(c.related_recall()),
            percent(c.related_f1())
        );
    }
    if !skipped.is_empty() {
        println!(
            "{} commits skipped (each named with its reason on stderr)",
            skipped.len()
        );
    }
    println!();
    println!(
        "overall ({} commits, {} pairs, {} annotated)",
        results.len(),
        all.total(),
        annotated.total()
    );
    println!("  accuracy (all pairs)        {}%", percent(all.accuracy()));
    println!(
        "  accuracy (annotated pairs)  {}%",
        percent(annotated.accuracy())
    );
    println!(
        "  related vs not: precision {}%  recall {}%  F1 {}%",
        percent(all.related_precision()),
        percent(all.related_recall()),
        percent(all.related_f1())
    );
    for label in PairLabel::ALL {
        println!(
            "  {:<22} precision {}%  recall {}%",
            label.as_str(),
            percent(all.precision(label)),
            percent(all.recall(label))
        );
    }
}
