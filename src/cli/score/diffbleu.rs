//! `nextedit score diffbleu`: BLEU of the prediction's diff against the reference's.

use anyhow::Result;
use clap::{Args, ValueEnum};
use nextedit::core::metrics::diffbleu::{diff_bleu, diff_bleu_codeplan};
use serde_json::json;

use super::TripleArgs;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Flavour {
    /// NoFunEval's diff_bleu
    Nofuneval,
    /// CodePlan's scripts/metrics.py
    Codeplan,
}

/// Arguments of `nextedit score diffbleu`.
#[derive(Debug, Args)]
pub struct DiffBleuArgs {
    #[command(flatten)]
    texts: TripleArgs,
    /// Which published DiffBLEU
    #[arg(long, value_enum, default_value_t = Flavour::Nofuneval)]
    flavour: Flavour,
}

/// Runs `nextedit score diffbleu`.
pub fn run(a: DiffBleuArgs) -> Result<()> {
    let inputs = a.texts.read(true)?;
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
