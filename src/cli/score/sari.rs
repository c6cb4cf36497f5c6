//! `nextedit score sari` and `nextedit score es`: SARI, and SARI on the divergent
//! regions (the Excision Score).

use anyhow::Result;
use clap::{Args, ValueEnum};
use nextedit::core::metrics::excision::{
    EsGranularity, ExcisionConfig, es_line_tokens, excision_score_text,
};
use nextedit::core::metrics::sari::{DeletionGood, SariConfig, SariScore, SariVariant, sari};
use nextedit::core::syntax::tokens;
use serde_json::json;

use super::{TripleArgs, language, spinner};

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

/// Arguments of `nextedit score sari`.
#[derive(Debug, Args)]
pub struct SariArgs {
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

/// Arguments of `nextedit score es`.
#[derive(Debug, Args)]
pub struct EsArgs {
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

fn sari_json(s: &SariScore) -> serde_json::Value {
    json!({"keep": s.keep, "deletion": s.deletion, "addition": s.addition})
}

/// Runs `nextedit score sari`.
pub fn run_sari(a: SariArgs) -> Result<()> {
    let inputs = a.texts.read(true)?;
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

/// Runs `nextedit score es`.
pub fn run_es(a: EsArgs) -> Result<()> {
    let inputs = a.texts.read(true)?;
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
