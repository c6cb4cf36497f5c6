//! `nextedit score`: compute one metric on files (or stdin) from the command line.
//!
//! One file per metric family: [`bleu`], [`sari`] (SARI and the Excision Score),
//! [`diffbleu`], [`contextbench`] and [`yardsticks`] (Zed's and NEP's); the texts they
//! compare are [`TripleArgs`].

mod bleu;
mod contextbench;
mod diffbleu;
mod sari;
mod yardsticks;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use nextedit::core::syntax::Language;
use nextedit::service::text_inputs::TextInputs;

/// Arguments of `nextedit score` (the help text is on `Command::Score`).
#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  nextedit score es --origin before.py --reference gold.py --prediction pred.py --granularity token
  git show HEAD:src/a.rs | nextedit score sari --origin - --reference a.rs --prediction b.rs --json
  nextedit score contextbench --gold gold.jsonl --pred trace.jsonl --repo ./checkout --compat")]
pub struct ScoreArgs {
    #[command(subcommand)]
    metric: Metric,
}

#[derive(Debug, Subcommand)]
enum Metric {
    /// Sentence BLEU of the prediction against the reference
    ///
    /// The default variant is Historian's BLEU-4 (CodeXGLUE/MOSES smoothed, lowercased,
    /// 0–100; Historian matches when > 50). --origin is accepted and ignored.
    #[command(
        after_long_help = "Example:\n  nextedit score bleu --reference gold.txt --prediction pred.txt --variant sacrebleu --json"
    )]
    Bleu(bleu::BleuArgs),
    /// SARI of the prediction, with the origin as source and the reference as reference
    ///
    /// Default convention: the original implementation's (0/0 = 0). Tokens: lexical tokens
    /// (tree-sitter leaves with --lang or a known file extension) or lines.
    #[command(
        after_long_help = "Example:\n  nextedit score sari --origin old.py --reference gold.py --prediction pred.py --convention hf"
    )]
    Sari(sari::SariArgs),
    /// Excision Score: SARI on the regions where origin, reference and prediction diverge
    ///
    /// Defaults: ES-Line, skip 0/0 convention, the paper's deletion rule, common
    /// prefix/suffix trimmed. B = A scores 1; B = O scores 0 when A's edit brings new
    /// content. Prints the SARI components and the excision (anchor length, regions).
    #[command(
        after_long_help = "Example:\n  nextedit score es --origin old.py --reference gold.py --prediction pred.py --granularity token"
    )]
    Es(sari::EsArgs),
    /// DiffBLEU (NoFunEval): BLEU of the prediction's diff against the reference's diff
    ///
    /// NoFunEval (default): NLTK sentence BLEU (smoothing method 1, wordpunct tokens) of
    /// the `git diff -U0 --ignore-all-space --ignore-blank-lines` hunks O→B against O→A; 0
    /// for an empty B. CodePlan: HF `evaluate` BLEU (13a, no smoothing) of the default
    /// `git diff` hunks; undefined (null) when either diff is empty.
    #[command(
        after_long_help = "Example:\n  nextedit score diffbleu --origin old.py --reference gold.py --prediction pred.py"
    )]
    Diffbleu(diffbleu::DiffBleuArgs),
    /// ContextBench: coverage and precision of the read context, AUC, redundancy, EditLoc
    ///
    /// Reads gold rows (the evaluator's gold JSONL, or Hugging Face rows with
    /// `gold_context`), predictions (the evaluator's JSONL with `traj_data`, or Benchkit
    /// `trace.jsonl` rows, detected per row) and a checkout of the repository at the base
    /// commit. The default mode fixes the reference evaluator's documented defects
    /// (unclipped lines, 1.0 for empty sets, EditLoc on the gold patch, `tail -n` read as
    /// the head…); --compat reproduces the reference evaluator bit for bit.
    #[command(
        after_long_help = "Examples:\n  nextedit score contextbench --gold gold.jsonl --pred predictions.jsonl --repo ./checkout --compat --json\n  nextedit score contextbench --gold gold.jsonl --pred runs/attempt-01/trace.jsonl --repo ./checkout"
    )]
    Contextbench(contextbench::ContextBenchArgs),
    /// Zed's delta-chrF (0–100): character n-grams of the edit O→B against those of O→A
    ///
    /// Gained n-grams and lost ones (as deletions) of each edit's changed window, whitespace
    /// runs collapsed; precision and recall averaged over the orders, F-beta with β = 2.
    /// Equal to Zed's `metrics.rs::delta_chr_f` (commit in docs/metrics.md).
    #[command(
        name = "delta-chrf",
        after_long_help = "Example:\n  nextedit score delta-chrf --origin old.py --reference gold.py --prediction pred.py --json"
    )]
    DeltaChrf(yardsticks::EditArgs),
    /// Zed's exact lines: precision/recall/F1 of the prediction's changed lines
    ///
    /// The `+`/`-` lines of the two unified diffs (O→A and O→B, from Python difflib's
    /// unified diff, or given with --patches) compared as bags.
    #[command(
        name = "exact-lines",
        after_long_help = "Examples:\n  nextedit score exact-lines --origin old.py --reference gold.py --prediction pred.py\n  nextedit score exact-lines --patches --reference gold.diff --prediction pred.diff --json"
    )]
    ExactLines(yardsticks::ExactLinesArgs),
    /// The Next Edit Prediction benchmark's exact, partial and position match
    ///
    /// Partial: the first chunk of difflib's unified diff O→A (blank-only chunks dropped)
    /// is a chunk of O→B; position: its context lines are those of one. Undefined (null)
    /// when A changes only blank lines (the reference evaluator fails there).
    #[command(
        after_long_help = "Example:\n  nextedit score nep --origin before.py --reference truth.py --prediction output.py --json"
    )]
    Nep(yardsticks::EditArgs),
    /// Zed's kept rate: the share of the prediction's new text that the final text keeps
    ///
    /// Tokens shared by base, prediction and final text are context; of the rest of the
    /// prediction, the bytes on a longest common subsequence with the final text's new
    /// tokens are kept. Equal to Zed's `kept_rate.rs::compute_kept_rate`.
    #[command(
        name = "kept-rate",
        after_long_help = "Example:\n  nextedit score kept-rate --base before.rs --prediction predicted.rs --final after.rs --json"
    )]
    KeptRate(yardsticks::KeptRateArgs),
}

/// Runs `nextedit score`.
pub fn run(args: ScoreArgs) -> Result<()> {
    match args.metric {
        Metric::Bleu(a) => bleu::run(a),
        Metric::Sari(a) => sari::run_sari(a),
        Metric::Es(a) => sari::run_es(a),
        Metric::Diffbleu(a) => diffbleu::run(a),
        Metric::Contextbench(a) => contextbench::run(a),
        Metric::DeltaChrf(a) => yardsticks::run_delta_chrf(a),
        Metric::ExactLines(a) => yardsticks::run_exact_lines(a),
        Metric::Nep(a) => yardsticks::run_nep(a),
        Metric::KeptRate(a) => yardsticks::run_kept_rate(a),
    }
}

#[derive(Debug, Args)]
pub struct TripleArgs {
    /// The original document O (path or `-`); required except for bleu
    #[arg(long, value_name = "FILE")]
    pub origin: Option<PathBuf>,
    /// The reference revision A, the ground truth (path or `-`); bleu and sari take it
    /// repeatedly (multi-reference: every reference counts, as in the reference libraries)
    #[arg(long, value_name = "FILE", required = true)]
    pub reference: Vec<PathBuf>,
    /// The predicted revision B (path or `-`)
    #[arg(long, value_name = "FILE")]
    pub prediction: PathBuf,
    /// Print a JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

impl TripleArgs {
    /// Reads the texts; at most one may be `-`.
    pub fn read(&self, need_origin: bool) -> Result<TextInputs> {
        Ok(TextInputs::read(
            self.origin.as_deref(),
            &self.reference,
            &self.prediction,
            need_origin,
        )?)
    }
}

/// The token grammar: `--lang`, else the reference's (or the origin's) file extension.
pub fn language(lang: &Option<String>, t: &TripleArgs) -> Result<Option<Language>> {
    match lang {
        Some(name) => Language::from_name(name)
            .map(Some)
            .with_context(|| format!("--lang `{name}`: unknown language (python, go, java, javascript, typescript, tsx, rust)")),
        None => Ok(Language::from_path(&t.reference[0])
            .or_else(|| t.origin.as_deref().and_then(Language::from_path))),
    }
}

/// A spinner on stderr for inputs large enough to take a noticeable time.
pub fn spinner(total_bytes: usize, what: &str) -> Option<ProgressBar> {
    (total_bytes > 1 << 20).then(|| {
        let pb = ProgressBar::new_spinner();
        pb.set_message(format!("scoring {what} on {} KiB", total_bytes >> 10));
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        pb
    })
}
