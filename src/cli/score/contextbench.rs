//! `nextedit score contextbench`: ContextBench scores of agents' reads, printed.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::core::metrics::contextbench::{
    ContextBenchConfig, Conversion, Granularity as Level, Mode, aggregate,
};
use nextedit::core::syntax::DefinitionSet;
use nextedit::service::contextbench_io::{
    DirRepo, add_patches, load_gold, load_patches, load_predictions, score_predictions,
};
use serde_json::json;

/// Arguments of `nextedit score contextbench`.
#[derive(Debug, Args)]
pub struct ContextBenchArgs {
    /// Gold rows: evaluator gold JSONL, or Hugging Face rows (JSONL or a JSON array)
    #[arg(long, value_name = "FILE")]
    gold: PathBuf,
    /// Predictions: evaluator JSONL (`traj_data`) or Benchkit trace.jsonl rows
    #[arg(long, value_name = "FILE")]
    pred: PathBuf,
    /// Checkout of the repository at the instances' base commit
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// Model patches for trace rows: Benchkit's predictions.jsonl (`instance_id` or
    /// `benchkit_instance_id`, `model_patch`); without it traces have no patch
    #[arg(long, value_name = "FILE")]
    patches: Option<PathBuf>,
    /// Reproduce the reference evaluator exactly, defects included (default: fixed mode)
    #[arg(long)]
    compat: bool,
    /// Also count the definition kinds the evaluator misses (TS arrow functions, Rust
    /// enums and modules…); breaks comparability with published numbers
    #[arg(long)]
    extended_symbols: bool,
    /// Print one JSON document (`instances`, `errors`, `aggregate`) instead of text
    #[arg(long)]
    json: bool,
    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per instance otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// The granularities in the evaluator's order, with their names.
const LEVELS: [(&str, Level); 4] = [
    ("file", Level::File),
    ("symbol", Level::Symbol),
    ("span", Level::Span),
    ("line", Level::Line),
];

/// Runs `nextedit score contextbench`.
pub fn run(a: ContextBenchArgs) -> Result<()> {
    let mode = if a.compat { Mode::Compat } else { Mode::Fixed };
    let config = ContextBenchConfig {
        mode,
        definitions: if a.extended_symbols {
            DefinitionSet::Extended
        } else {
            DefinitionSet::ContextBench
        },
    };
    if !a.repo.is_dir() {
        bail!("--repo `{}`: not a directory", a.repo.display());
    }
    let repo = DirRepo::new(&a.repo);
    let golds =
        load_gold(&a.gold).with_context(|| format!("loading --gold `{}`", a.gold.display()))?;
    let conversion = match mode {
        Mode::Compat => Conversion::Compat,
        Mode::Fixed => Conversion::Fixed,
    };
    let mut preds = load_predictions(&a.pred, conversion, &repo)
        .with_context(|| format!("loading --pred `{}`", a.pred.display()))?;
    if let Some(path) = &a.patches {
        let patches = load_patches(path)
            .with_context(|| format!("loading --patches `{}`", path.display()))?;
        add_patches(&mut preds, &patches);
    }
    let progress = Progress::new(ProgressMode::detect(a.quiet), "instances");
    progress.start(preds.len());
    let scored = score_predictions(&golds, &preds, &repo, &config, |id| {
        progress.item(id, "scored");
    });
    progress.finish();
    let (results, errors) = (scored.results, scored.errors);
    let agg = aggregate(&results);
    if a.json {
        println!(
            "{}",
            json!({"mode": if a.compat {"compat"} else {"fixed"}, "instances": results, "errors": errors, "aggregate": agg})
        );
        return Ok(());
    }
    let f = |v: Option<f64>| v.map_or("  n/a ".to_owned(), |v| format!("{v:.4}"));
    println!(
        "contextbench ({} mode): {} scored, {} errors",
        if a.compat { "compat" } else { "fixed" },
        results.len(),
        errors.len()
    );
    for r in &results {
        println!("\n{}  ({} steps)", r.instance_id, r.num_steps);
        println!(
            "  {:<8} {:>8} {:>9} {:>8} {:>10}",
            "", "coverage", "precision", "AUC", "redundancy"
        );
        for (name, level) in LEVELS {
            let s = r.final_scores.get(level);
            println!(
                "  {name:<8} {:>8} {:>9} {:>8} {:>10.4}",
                f(s.coverage),
                f(s.precision),
                f(*r.trajectory.auc_coverage.get(level)),
                r.trajectory.redundancy.get(level)
            );
        }
        if let Some(e) = &r.editloc {
            println!(
                "  editloc  recall {} precision {}",
                f(e.recall),
                f(e.precision)
            );
        }
        if !r.unreachable_gold.is_empty() {
            println!(
                "  gold files outside the repository: {}",
                r.unreachable_gold.join(", ")
            );
        }
        if !r.clipped_gold.is_empty() {
            println!(
                "  gold regions past the end of their file (scored clipped): {}",
                r.clipped_gold.join(", ")
            );
        }
    }
    for e in &errors {
        // JSON strings, quotes and all, as this line has always printed them.
        println!("\n{}: {}", json!(e.instance_id), json!(e.error));
    }
    if results.len() > 1 {
        println!("\naggregate (micro coverage / macro F1):");
        for (name, g) in LEVELS {
            println!(
                "  {name:<8} {} / {}",
                f(*agg.micro_coverage.get(g)),
                f(*agg.macro_f1.get(g))
            );
        }
    }
    Ok(())
}
