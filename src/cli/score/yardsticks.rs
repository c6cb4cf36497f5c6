//! `nextedit score delta-chrf|exact-lines|nep|kept-rate`: Zed's and the Next Edit
//! Prediction benchmark's yardsticks on files.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use nextedit::core::metrics::yardsticks::{
    delta_chrf::delta_chrf,
    exact_lines::exact_lines,
    kept_rate::kept_rate,
    nep::nep_match,
    pydifflib::{splitlines, unified_diff},
};
use nextedit::service::text_inputs::read_named;
use serde_json::json;

use super::TripleArgs;

/// Arguments of `nextedit score delta-chrf` and `nextedit score nep`.
#[derive(Debug, Args)]
pub struct EditArgs {
    #[command(flatten)]
    texts: TripleArgs,
}

/// Arguments of `nextedit score exact-lines`.
#[derive(Debug, Args)]
pub struct ExactLinesArgs {
    #[command(flatten)]
    texts: TripleArgs,
    /// --reference and --prediction are unified diffs already (then --origin is not used)
    #[arg(long)]
    patches: bool,
}

/// Arguments of `nextedit score kept-rate`.
#[derive(Debug, Args)]
pub struct KeptRateArgs {
    /// The text the prediction was made from (path or `-`)
    #[arg(long, value_name = "FILE")]
    base: PathBuf,
    /// The predicted text (path or `-`)
    #[arg(long, value_name = "FILE")]
    prediction: PathBuf,
    /// The text the user ended with (path or `-`)
    #[arg(long = "final", value_name = "FILE")]
    final_text: PathBuf,
    /// Print a JSON object instead of text
    #[arg(long)]
    json: bool,
}

/// The three texts of an edit metric: origin, its one reference, prediction.
fn edit_texts(t: &TripleArgs, metric: &'static str) -> Result<[String; 3]> {
    let inputs = t.read(true)?;
    let reference = inputs.single_reference(metric)?.to_owned();
    Ok([inputs.origin, reference, inputs.prediction])
}

/// Runs `nextedit score delta-chrf`.
pub fn run_delta_chrf(a: EditArgs) -> Result<()> {
    let [o, r, p] = edit_texts(&a.texts, "delta-chrf")?;
    let score = delta_chrf(&o, &r, &p);
    if a.texts.json {
        println!("{}", json!({"metric": "delta-chrf", "score": score}));
    } else {
        println!("delta-chrf: {score}");
    }
    Ok(())
}

/// Runs `nextedit score exact-lines`.
pub fn run_exact_lines(a: ExactLinesArgs) -> Result<()> {
    let (expected, actual) = if a.patches {
        let inputs = a.texts.read(false)?;
        let reference = inputs.single_reference("exact-lines")?.to_owned();
        (reference, inputs.prediction)
    } else {
        let [o, r, p] = edit_texts(&a.texts, "exact-lines")?;
        let patch = |to: &str| unified_diff(&splitlines(&o), &splitlines(to), 3).join("\n");
        (patch(&r), patch(&p))
    };
    let m = exact_lines(&expected, &actual);
    let (p, r, f) = (m.precision(), m.recall(), m.f1());
    if a.texts.json {
        println!(
            "{}",
            json!({"metric": "exact-lines", "precision": p, "recall": r, "f1": f,
                   "tp": m.tp, "fp": m.fp, "fn": m.fn_})
        );
    } else {
        println!("exact-lines: precision {p}, recall {r}, F1 {f}");
        println!("  changed lines TP/FP/FN: {}/{}/{}", m.tp, m.fp, m.fn_);
    }
    Ok(())
}

/// Runs `nextedit score nep`.
pub fn run_nep(a: EditArgs) -> Result<()> {
    let [o, r, p] = edit_texts(&a.texts, "nep")?;
    let m = nep_match(&o, &r, &p);
    if a.texts.json {
        println!(
            "{}",
            json!({"metric": "nep", "exact_match": m.exact, "partial_match": m.partial,
                   "position_match": m.position})
        );
    } else {
        let show = |v: Option<bool>| {
            v.map_or(
                "undefined (the reference changes only blank lines)".to_owned(),
                |b| b.to_string(),
            )
        };
        println!("exact match: {}", m.exact);
        println!("partial match: {}", show(m.partial));
        println!("position match: {}", show(m.position));
    }
    Ok(())
}

/// Runs `nextedit score kept-rate`.
pub fn run_kept_rate(a: KeptRateArgs) -> Result<()> {
    let texts = read_named(&[
        ("--base", &a.base),
        ("--prediction", &a.prediction),
        ("--final", &a.final_text),
    ])?;
    let k = kept_rate(&texts[0], &texts[1], &texts[2]);
    if a.json {
        println!(
            "{}",
            json!({"metric": "kept-rate", "kept_rate": k.kept_rate, "kept_chars": k.kept_chars,
                   "discarded_chars": k.discarded_chars, "predicted_new_chars": k.predicted_new_chars,
                   "final_new_chars": k.final_new_chars, "context_chars": k.context_chars})
        );
    } else {
        println!("kept rate: {}", k.kept_rate);
        println!(
            "  bytes kept/discarded of {} new predicted; {} new final, {} context: {}/{}",
            k.predicted_new_chars,
            k.final_new_chars,
            k.context_chars,
            k.kept_chars,
            k.discarded_chars
        );
    }
    Ok(())
}
