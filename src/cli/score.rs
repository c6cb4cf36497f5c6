//! `nextedit score`: compute one metric on files (or stdin) from the command line.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nextedit::contextbench_io::{DirRepo, load_gold, load_predictions};
use nextedit::metrics::bleu::{
    BleuFormula, BleuSpec, BleuTokenizer, NltkSmoothing, SacreSmoothing,
};
use nextedit::metrics::contextbench::{
    ContextBenchConfig, Conversion, Granularity as Level, InstanceResult, Mode, aggregate, evaluate,
};
use nextedit::metrics::diffbleu::{diff_bleu, diff_bleu_codeplan};
use nextedit::metrics::excision::{
    EsGranularity, ExcisionConfig, es_line_tokens, excision_score_text,
};
use nextedit::metrics::sari::{DeletionGood, SariConfig, SariScore, SariVariant, sari};
use nextedit::syntax::{DefinitionSet, Language, tokens};
use serde_json::json;

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
    Bleu(BleuArgs),
    /// SARI of the prediction, with the origin as source and the reference as reference
    ///
    /// Default convention: the original implementation's (0/0 = 0). Tokens: lexical tokens
    /// (tree-sitter leaves with --lang or a known file extension) or lines.
    #[command(
        after_long_help = "Example:\n  nextedit score sari --origin old.py --reference gold.py --prediction pred.py --convention hf"
    )]
    Sari(SariArgs),
    /// Excision Score: SARI on the regions where origin, reference and prediction diverge
    ///
    /// Defaults: ES-Line, skip 0/0 convention, the paper's deletion rule, common
    /// prefix/suffix trimmed. B = A scores 1; B = O scores 0 when A's edit brings new
    /// content. Prints the SARI components and the excision (anchor length, regions).
    #[command(
        after_long_help = "Example:\n  nextedit score es --origin old.py --reference gold.py --prediction pred.py --granularity token"
    )]
    Es(EsArgs),
    /// DiffBLEU (NoFunEval): BLEU of the prediction's diff against the reference's diff
    ///
    /// NoFunEval (default): NLTK sentence BLEU (smoothing method 1, wordpunct tokens) of
    /// the `git diff -U0 --ignore-all-space --ignore-blank-lines` hunks O→B against O→A; 0
    /// for an empty B. CodePlan: HF `evaluate` BLEU (13a, no smoothing) of the default
    /// `git diff` hunks; undefined (null) when either diff is empty.
    #[command(
        after_long_help = "Example:\n  nextedit score diffbleu --origin old.py --reference gold.py --prediction pred.py"
    )]
    Diffbleu(DiffBleuArgs),
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
    Contextbench(ContextBenchArgs),
}

#[derive(Debug, Args)]
struct TripleArgs {
    /// The original document O (path or `-`); required except for bleu
    #[arg(long, value_name = "FILE")]
    origin: Option<PathBuf>,
    /// The reference revision A, the ground truth (path or `-`); bleu and sari take it
    /// repeatedly (multi-reference: every reference counts, as in the reference libraries)
    #[arg(long, value_name = "FILE", required = true)]
    reference: Vec<PathBuf>,
    /// The predicted revision B (path or `-`)
    #[arg(long, value_name = "FILE")]
    prediction: PathBuf,
    /// Print a JSON object instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Flavour {
    /// NoFunEval's diff_bleu
    Nofuneval,
    /// CodePlan's scripts/metrics.py
    Codeplan,
}

#[derive(Debug, Args)]
struct DiffBleuArgs {
    #[command(flatten)]
    texts: TripleArgs,
    /// Which published DiffBLEU
    #[arg(long, value_enum, default_value_t = Flavour::Nofuneval)]
    flavour: Flavour,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum BleuVariant {
    /// Historian's BLEU-4: CodeXGLUE smoothed formula on Historian's tokens, 0–100
    Historian,
    /// CodeXGLUE code-to-text smooth BLEU (the same formula on MOSES/NIST tokens), 0–100
    Codexglue,
    /// sacrebleu 2.6 sentence_bleu (13a tokens; --smoothing exp|floor|add-k|none), 0–100
    Sacrebleu,
    /// NLTK 3.10 sentence_bleu (wordpunct tokens; --smoothing method0…method7), 0–1
    Nltk,
    /// tensorflow-nmt compute_bleu (13a tokens; --smoothing none|add-one); with the
    /// defaults this is Hugging Face evaluate's "bleu", 0–1
    Nmt,
}

#[derive(Debug, Args)]
struct BleuArgs {
    #[command(flatten)]
    texts: TripleArgs,
    /// BLEU variant (the formula of one reference implementation)
    #[arg(long, value_enum, default_value_t = BleuVariant::Historian)]
    variant: BleuVariant,
    /// Smoothing: method0…method7 (nltk; default method1), exp|floor|add-k|none
    /// (sacrebleu; default exp), none|add-one (nmt; default none); historian and
    /// codexglue have their own fixed smoothing
    #[arg(long, value_name = "METHOD")]
    smoothing: Option<String>,
    /// The value of sacrebleu's floor (default 0.1) or add-k (default 1) smoothing
    #[arg(long, value_name = "X", requires = "smoothing")]
    smooth_value: Option<f64>,
    /// sacrebleu only: use all four orders even when the hypothesis is shorter
    /// (sacrebleu's `use_effective_order=False`)
    #[arg(long)]
    no_effective_order: bool,
    /// Tokenizer; default: the variant's own (historian, nist, 13a, wordpunct, 13a)
    #[arg(long, value_enum, value_name = "TOKENS")]
    tokenize: Option<BleuTokens>,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum BleuTokens {
    /// Historian: lowercased word runs and single punctuation, then MOSES/NIST rules
    Historian,
    /// CodeXGLUE's MOSES/NIST normalisation (lowercased)
    Nist,
    /// sacrebleu's 13a (case kept)
    #[value(name = "13a")]
    Thirteen,
    /// NLTK's wordpunct_tokenize: \w+|[^\w\s]+
    Wordpunct,
    /// Split on white space only: the inputs are already tokenised
    Whitespace,
}
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Granularity {
    /// Lines (without their line break)
    Line,
    /// Tree-sitter leaf tokens (lexical tokens for unknown languages)
    Token,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SariUnit {
    /// Lines (without their line break)
    Line,
    /// Tree-sitter leaf tokens (lexical tokens for unknown languages)
    Token,
    /// Words split on white space (the inputs are already tokenised, as in the
    /// reference SARI scripts)
    Word,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Convention {
    /// cocoxu SARI.py: 0/0 = 0, per-gram keep recall
    Orig,
    /// Hugging Face evaluate: 0/0 = 1, micro keep recall
    Hf,
    /// HF counting, undefined orders skipped (nextedit; the ES default)
    Skip,
    /// EASSE sentence SARI
    Easse,
    /// tensor2tensor sari_hook
    T2t,
}

impl Convention {
    fn variant(self) -> SariVariant {
        match self {
            Convention::Orig => SariVariant::Orig,
            Convention::Hf => SariVariant::Hf,
            Convention::Skip => SariVariant::Skip,
            Convention::Easse => SariVariant::Easse,
            Convention::T2t => SariVariant::T2t,
        }
    }
}

#[derive(Debug, Args)]
struct SariArgs {
    #[command(flatten)]
    texts: TripleArgs,
    /// Token unit
    #[arg(long, value_enum, default_value_t = SariUnit::Token)]
    granularity: SariUnit,
    /// Language of the token grammar (python, go, java, javascript, typescript, tsx,
    /// rust); default: from the reference file's extension, else lexical tokens
    #[arg(long, value_name = "LANG")]
    lang: Option<String>,
    /// 0/0 and counting convention
    #[arg(long, value_enum, default_value_t = Convention::Orig)]
    convention: Convention,
}

#[derive(Debug, Args)]
struct EsArgs {
    #[command(flatten)]
    texts: TripleArgs,
    /// ES-Line or ES-Token
    #[arg(long, value_enum, default_value_t = Granularity::Line)]
    granularity: Granularity,
    /// Language of the token grammar; default: from the reference file's extension
    #[arg(long, value_name = "LANG")]
    lang: Option<String>,
    /// SARI convention on the divergent regions
    #[arg(long, value_enum, default_value_t = Convention::Skip)]
    convention: Convention,
    /// Count good deletions as HF does, `(S−C)−R`, instead of the paper's `min(S−C, S−R)`
    #[arg(long)]
    hf_deletions: bool,
    /// Do not trim the prefix and suffix common to all three before the LCS
    #[arg(long)]
    no_trim: bool,
}

#[derive(Debug, Args)]
struct ContextBenchArgs {
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
}

/// Runs `nextedit score`.
pub fn run(args: ScoreArgs) -> Result<()> {
    match args.metric {
        Metric::Bleu(a) => bleu(a),
        Metric::Sari(a) => run_sari(a),
        Metric::Es(a) => es(a),
        Metric::Diffbleu(a) => diffbleu(a),
        Metric::Contextbench(a) => contextbench(a),
    }
}

/// The texts of one scoring call: origin (empty when not needed), references, prediction.
struct Inputs {
    origin: String,
    references: Vec<String>,
    prediction: String,
}

impl Inputs {
    /// The only reference, for metrics defined on one (ES, DiffBLEU).
    fn single_reference(&self, metric: &str) -> Result<&str> {
        match self.references.as_slice() {
            [one] => Ok(one),
            many => bail!(
                "{metric} compares with one reference; {} --reference files were given",
                many.len()
            ),
        }
    }
}

/// Reads the inputs; at most one may be `-`.
fn read_inputs(t: &TripleArgs, need_origin: bool) -> Result<Inputs> {
    let dashes = t
        .origin
        .iter()
        .chain(&t.reference)
        .chain(std::iter::once(&t.prediction))
        .filter(|p| p.as_os_str() == "-")
        .count();
    if dashes > 1 {
        bail!("only one of --origin, --reference, --prediction can be `-` (standard input)");
    }
    let origin = match (&t.origin, need_origin) {
        (Some(p), _) => read_input("--origin", p)?,
        (None, true) => bail!("--origin is required for this metric"),
        (None, false) => String::new(),
    };
    Ok(Inputs {
        origin,
        references: t
            .reference
            .iter()
            .map(|p| read_input("--reference", p))
            .collect::<Result<_>>()?,
        prediction: read_input("--prediction", &t.prediction)?,
    })
}

fn read_input(flag: &str, path: &Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .with_context(|| format!("reading {flag} from standard input"))?;
        return Ok(s);
    }
    std::fs::read_to_string(path)
        .with_context(|| format!("reading {flag} file `{}`", path.display()))
}

fn language(lang: &Option<String>, t: &TripleArgs) -> Result<Option<Language>> {
    match lang {
        Some(name) => Language::from_name(name)
            .map(Some)
            .with_context(|| format!("--lang `{name}`: unknown language (python, go, java, javascript, typescript, tsx, rust)")),
        None => Ok(Language::from_path(&t.reference[0])
            .or_else(|| t.origin.as_deref().and_then(Language::from_path))),
    }
}

/// A spinner on stderr for inputs large enough to take a noticeable time.
fn spinner(total_bytes: usize, what: &str) -> Option<ProgressBar> {
    (total_bytes > 1 << 20).then(|| {
        let pb = ProgressBar::new_spinner();
        pb.set_message(format!("scoring {what} on {} KiB", total_bytes >> 10));
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        pb
    })
}

/// The library's BLEU spec for the command-line choices, and the variant's label.
fn bleu_spec(a: &BleuArgs) -> Result<(BleuSpec, String)> {
    let smoothing = a.smoothing.as_deref();
    let fixed = |name: &str| -> Result<()> {
        if a.smoothing.is_some() {
            bail!("--smoothing does not apply to --variant {name} (its smoothing is fixed)");
        }
        Ok(())
    };
    if a.no_effective_order && a.variant != BleuVariant::Sacrebleu {
        bail!("--no-effective-order applies to --variant sacrebleu only");
    }
    let (formula, tokens, label) = match a.variant {
        BleuVariant::Historian => {
            fixed("historian")?;
            (
                BleuFormula::Smooth,
                BleuTokenizer::Historian,
                "historian".to_owned(),
            )
        }
        BleuVariant::Codexglue => {
            fixed("codexglue")?;
            (
                BleuFormula::Smooth,
                BleuTokenizer::Nist,
                "codexglue".to_owned(),
            )
        }
        BleuVariant::Nltk => {
            let name = smoothing.unwrap_or("method1");
            let method = name
                .strip_prefix("method")
                .and_then(|k| k.parse::<usize>().ok())
                .and_then(|k| NltkSmoothing::ALL.get(k).copied())
                .with_context(|| {
                    format!("--smoothing `{name}`: nltk takes method0, method1, … method7")
                })?;
            if a.smooth_value.is_some() {
                bail!("--smooth-value applies to sacrebleu's floor and add-k smoothing only");
            }
            (
                BleuFormula::Nltk(method),
                BleuTokenizer::Wordpunct,
                format!("nltk-{name}"),
            )
        }
        BleuVariant::Sacrebleu => {
            let name = smoothing.unwrap_or("exp");
            let smoothing = match (name, a.smooth_value) {
                ("exp", None) => SacreSmoothing::Exp,
                ("floor", v) => SacreSmoothing::Floor(v.unwrap_or(0.1)),
                ("add-k", v) => SacreSmoothing::AddK(v.unwrap_or(1.0)),
                ("none", None) => SacreSmoothing::None,
                ("exp" | "none", Some(_)) => {
                    bail!("--smooth-value applies to floor and add-k smoothing only")
                }
                _ => bail!("--smoothing `{name}`: sacrebleu takes exp, floor, add-k or none"),
            };
            (
                BleuFormula::Sacrebleu {
                    smoothing,
                    effective_order: !a.no_effective_order,
                },
                BleuTokenizer::Thirteen,
                format!("sacrebleu-{name}"),
            )
        }
        BleuVariant::Nmt => {
            let name = smoothing.unwrap_or("none");
            let smooth = match name {
                "none" => false,
                "add-one" => true,
                _ => bail!("--smoothing `{name}`: nmt takes none or add-one"),
            };
            if a.smooth_value.is_some() {
                bail!("--smooth-value applies to sacrebleu's floor and add-k smoothing only");
            }
            (
                BleuFormula::Nmt { smooth },
                BleuTokenizer::Thirteen,
                format!("nmt-{name}"),
            )
        }
    };
    let tokenizer = match a.tokenize {
        None => tokens,
        Some(BleuTokens::Historian) => BleuTokenizer::Historian,
        Some(BleuTokens::Nist) => BleuTokenizer::Nist,
        Some(BleuTokens::Thirteen) => BleuTokenizer::Thirteen,
        Some(BleuTokens::Wordpunct) => BleuTokenizer::Wordpunct,
        Some(BleuTokens::Whitespace) => BleuTokenizer::Whitespace,
    };
    Ok((BleuSpec { tokenizer, formula }, label))
}

fn bleu(a: BleuArgs) -> Result<()> {
    let (spec, variant) = bleu_spec(&a)?;
    let inputs = read_inputs(&a.texts, false)?;
    let references: Vec<&str> = inputs.references.iter().map(String::as_str).collect();
    let score = spec
        .score(&inputs.prediction, &references)
        .with_context(|| format!("{variant} BLEU of the inputs"))?;
    let scale = spec.formula.scale();
    let tokens = spec.tokenizer.name();
    if a.texts.json {
        println!(
            "{}",
            json!({"metric": "bleu", "variant": variant, "tokenize": tokens, "scale": scale,
                   "references": references.len(), "score": score})
        );
    } else {
        println!("bleu ({variant}, 0–{scale}): {score}");
    }
    Ok(())
}

fn sari_json(s: &SariScore) -> serde_json::Value {
    json!({"keep": s.keep, "deletion": s.deletion, "addition": s.addition})
}

fn run_sari(a: SariArgs) -> Result<()> {
    let inputs = read_inputs(&a.texts, true)?;
    let lang = language(&a.lang, &a.texts)?;
    let (o, p) = (&inputs.origin, &inputs.prediction);
    let size = o.len() + p.len() + inputs.references.iter().map(String::len).sum::<usize>();
    let pb = spinner(size, "SARI");
    let split = |s: &str| -> Vec<String> {
        match a.granularity {
            SariUnit::Line => es_line_tokens(s).into_iter().map(str::to_owned).collect(),
            SariUnit::Token => tokens(lang, s).into_iter().map(str::to_owned).collect(),
            SariUnit::Word => s.split_whitespace().map(str::to_owned).collect(),
        }
    };
    let config = SariConfig::new(a.convention.variant());
    let references: Vec<Vec<String>> = inputs.references.iter().map(|r| split(r)).collect();
    let s = sari(&split(o), &split(p), &references, &config);
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    if a.texts.json {
        println!(
            "{}",
            json!({"metric": "sari", "convention": config.variant.name(), "references": references.len(),
                   "score": s.sari, "components": sari_json(&s)})
        );
    } else {
        println!("sari ({}): {}", config.variant.name(), s.sari);
        print_components(&s);
    }
    Ok(())
}

fn print_components(s: &SariScore) {
    let f = |v: Option<f64>| v.map_or("undefined".to_owned(), |v| v.to_string());
    println!("  keep F1:            {}", f(s.keep));
    println!("  deletion precision: {}", f(s.deletion));
    println!("  addition F1:        {}", f(s.addition));
}

fn es(a: EsArgs) -> Result<()> {
    let inputs = read_inputs(&a.texts, true)?;
    let (o, r, p) = (
        &inputs.origin,
        inputs.single_reference("es")?,
        &inputs.prediction,
    );
    let lang = language(&a.lang, &a.texts)?;
    let mut config = ExcisionConfig::default();
    config.sari.variant = a.convention.variant();
    if a.hf_deletions {
        config.sari.deletion_good = DeletionGood::Difference;
    }
    config.trim = !a.no_trim;
    let granularity = match a.granularity {
        Granularity::Line => EsGranularity::Line,
        Granularity::Token => EsGranularity::Token,
    };
    let pb = spinner(o.len() + r.len() + p.len(), "the Excision Score");
    let s = excision_score_text(o, r, p, granularity, lang, &config);
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let g = format!("{:?}", a.granularity).to_lowercase();
    if a.texts.json {
        println!(
            "{}",
            json!({
                "metric": "es", "granularity": g, "convention": config.sari.variant.name(),
                "score": s.score, "components": sari_json(&s.sari), "anchor_len": s.anchor_len,
                "regions": {"origin": s.regions.origin.len(), "reference": s.regions.reference.len(),
                            "prediction": s.regions.prediction.len()},
            })
        );
    } else {
        println!("es-{g}: {}", s.score);
        print_components(&s.sari);
        println!(
            "  anchor: {} tokens; divergent regions O/A/B: {}/{}/{}",
            s.anchor_len,
            s.regions.origin.len(),
            s.regions.reference.len(),
            s.regions.prediction.len()
        );
    }
    Ok(())
}

fn diffbleu(a: DiffBleuArgs) -> Result<()> {
    let inputs = read_inputs(&a.texts, true)?;
    let (o, r, p) = (
        &inputs.origin,
        inputs.single_reference("diffbleu")?,
        &inputs.prediction,
    );
    let (score, flavour) = match a.flavour {
        Flavour::Nofuneval => (Some(diff_bleu(o, r, p)), "nofuneval"),
        Flavour::Codeplan => (diff_bleu_codeplan(o, r, p), "codeplan"),
    };
    if a.texts.json {
        println!(
            "{}",
            json!({"metric": "diffbleu", "flavour": flavour, "score": score})
        );
    } else {
        match score {
            Some(s) => println!("diffbleu ({flavour}): {s}"),
            None => println!("diffbleu ({flavour}): undefined (an empty diff; CodePlan skips it)"),
        }
    }
    Ok(())
}

/// `instance_id` (and `benchkit_instance_id`) → `model_patch` from a predictions JSONL.
fn load_patches(path: &Path) -> Result<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path)?;
    let mut out = std::collections::HashMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("line {}: invalid JSON", i + 1))?;
        let patch = v["model_patch"].as_str().unwrap_or_default().to_owned();
        for key in ["instance_id", "benchkit_instance_id"] {
            if let Some(id) = v[key].as_str() {
                out.insert(id.to_owned(), patch.clone());
            }
        }
    }
    Ok(out)
}

/// The granularities in the evaluator's order, with their names.
const LEVELS: [(&str, Level); 4] = [
    ("file", Level::File),
    ("symbol", Level::Symbol),
    ("span", Level::Span),
    ("line", Level::Line),
];

fn contextbench(a: ContextBenchArgs) -> Result<()> {
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
    let mut golds =
        load_gold(&a.gold).with_context(|| format!("loading --gold `{}`", a.gold.display()))?;
    if mode == Mode::Compat {
        // The evaluator indexes gold rows by `inst_id` only.
        golds.retain(|g| g.keyed_inst_id);
    }
    let conversion = match mode {
        Mode::Compat => Conversion::Compat,
        Mode::Fixed => Conversion::Fixed,
    };
    let mut preds = load_predictions(&a.pred, conversion, &repo)
        .with_context(|| format!("loading --pred `{}`", a.pred.display()))?;
    if let Some(path) = &a.patches {
        let patches = load_patches(path)
            .with_context(|| format!("loading --patches `{}`", path.display()))?;
        for lp in preds
            .iter_mut()
            .filter(|lp| lp.prediction.model_patch.is_empty())
        {
            if let Some(patch) = patches.get(&lp.prediction.instance_id) {
                lp.prediction.model_patch = patch.clone();
            }
        }
    }
    let pb = (preds.len() >= 20).then(|| {
        let pb = ProgressBar::new(preds.len() as u64);
        pb.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} instances {per_sec} {eta}")
                .expect("valid template"),
        );
        pb
    });
    let mut results: Vec<InstanceResult> = Vec::new();
    let mut errors = Vec::new();
    for lp in &preds {
        let p = &lp.prediction;
        let gold = golds
            .iter()
            .find(|g| g.matches(&p.instance_id) || lp.aliases.iter().any(|al| g.matches(al)))
            // A single trace against a single gold row pairs up even when Benchkit's ids differ.
            .or_else(|| (lp.from_trace && golds.len() == 1 && preds.len() == 1).then(|| &golds[0]));
        match gold {
            None => errors.push(json!({"instance_id": p.instance_id, "error": "missing_gold"})),
            Some(g) => match evaluate(g, p, &repo, &config) {
                Ok(r) => results.push(r),
                Err(e) => {
                    errors.push(json!({"instance_id": p.instance_id, "error": e.to_string()}))
                }
            },
        }
        if let Some(pb) = &pb {
            pb.inc(1);
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
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
        println!("\n{}: {}", e["instance_id"], e["error"]);
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
