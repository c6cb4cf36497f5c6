//! `nextedit score bleu`: sentence BLEU in one reference implementation's variant.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use nextedit::core::metrics::bleu::{BleuSpec, BleuTokenizer};
use nextedit::core::metrics::bleu_variant::{BleuOptions, BleuVariant as Variant};
use serde_json::json;

use super::TripleArgs;

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

/// Arguments of `nextedit score bleu`.
#[derive(Debug, Args)]
pub struct BleuArgs {
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
    #[arg(long, value_name = "X", requires = "smoothing", allow_negative_numbers = true, value_parser = nextedit::base::ranges::smoothing)]
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
/// The library's BLEU spec for the command-line choices, and the variant's label.
fn bleu_spec(a: &BleuArgs) -> Result<(BleuSpec, String)> {
    let variant = match a.variant {
        BleuVariant::Historian => Variant::Historian,
        BleuVariant::Codexglue => Variant::Codexglue,
        BleuVariant::Sacrebleu => Variant::Sacrebleu,
        BleuVariant::Nltk => Variant::Nltk,
        BleuVariant::Nmt => Variant::Nmt,
    };
    let options = BleuOptions {
        variant,
        smoothing: a.smoothing.as_deref(),
        smooth_value: a.smooth_value,
        effective_order: !a.no_effective_order,
    };
    let (mut spec, label) = options.resolve()?;
    if let Some(tokens) = a.tokenize {
        spec.tokenizer = match tokens {
            BleuTokens::Historian => BleuTokenizer::Historian,
            BleuTokens::Nist => BleuTokenizer::Nist,
            BleuTokens::Thirteen => BleuTokenizer::Thirteen,
            BleuTokens::Wordpunct => BleuTokenizer::Wordpunct,
            BleuTokens::Whitespace => BleuTokenizer::Whitespace,
        };
    }
    Ok((spec, label))
}

/// Runs `nextedit score bleu`.
pub fn run(a: BleuArgs) -> Result<()> {
    let (spec, variant) = bleu_spec(&a)?;
    let inputs = a.texts.read(false)?;
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
