//! Every shared metric vector file, checked value by value.
//!
//! Data: `tests/data/metric-vectors/` (produced by the reference implementations; see tests/data/README.md).

use nextedit::core::metrics::bleu::{
    NltkSmoothing, SacreSmoothing, historian_bleu, nltk_sentence_bleu, nmt_bleu,
    sacrebleu_sentence_bleu, sacrebleu_sentence_bleu_tokens, smooth_bleu,
};
use nextedit::core::metrics::sari::{SariConfig, SariVariant, sari};
use serde_json::Value;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/metric-vectors/");

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{VECTORS}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn jsonl(name: &str) -> Vec<Value> {
    read(name)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

/// Within 1e-9 absolute; values below 1e-6 (e.g. Historian's ≈ 1e-75 for no unigram match)
/// must agree to 1e-9 *relative*, and a zero must be exactly zero.
fn close(got: f64, want: f64) -> bool {
    if want == 0.0 {
        return got == 0.0;
    }
    let diff = (got - want).abs();
    if want.abs() < 1e-6 {
        diff <= 1e-9 * want.abs()
    } else {
        diff <= 1e-9
    }
}

#[track_caller]
fn check(label: &str, got: f64, want: f64) {
    assert!(close(got, want), "{label}: got {got:e}, want {want:e}");
}

#[test]
fn historian_bleu4_sample() {
    let rows: Vec<Value> = serde_json::from_str(&read("historian_bleu4_sample.json")).unwrap();
    assert!(rows.len() > 10);
    for (i, row) in rows.iter().enumerate() {
        let got = historian_bleu(
            row["prediction"].as_str().unwrap(),
            row["reference"].as_str().unwrap(),
        );
        let want = row["historian_bleu4"].as_f64().unwrap();
        check(&format!("row {i} {row}"), got, want);
    }
}

fn nltk_method(key: &str) -> Option<NltkSmoothing> {
    let idx = key.chars().last()?.to_digit(10)? as usize;
    NltkSmoothing::ALL.get(idx).copied()
}

#[test]
fn bleu_vectors() {
    let rows: Vec<Value> = serde_json::from_str(&read("bleu_vectors.json")).unwrap();
    for (i, row) in rows.iter().enumerate() {
        let hyp_s = row["hyp"].as_str().unwrap();
        let refs_s = strings(&row["refs"]);
        let hyp: Vec<&str> = hyp_s.split_whitespace().collect();
        let refs: Vec<Vec<&str>> = refs_s
            .iter()
            .map(|r| r.split_whitespace().collect())
            .collect();
        let obj = row.as_object().unwrap();
        let mut checked = 0;
        for (key, want) in obj {
            let label = format!("case {i} {key}");
            let got: Result<f64, String> = match key.as_str() {
                k if k.starts_with("nltk_m") => {
                    nltk_sentence_bleu(&hyp, &refs, nltk_method(k).unwrap())
                        .map_err(|e| e.to_string())
                }
                "sacrebleu_default" => {
                    let r: Vec<&str> = refs_s.iter().map(String::as_str).collect();
                    Ok(sacrebleu_sentence_bleu(hyp_s, &r) / 100.0)
                }
                "sacrebleu_tok_none" => {
                    Ok(
                        sacrebleu_sentence_bleu_tokens(&hyp, &refs, SacreSmoothing::Exp, true)
                            / 100.0,
                    )
                }
                "nmt_smooth_false" => nmt_bleu(&hyp, &refs, false).map_err(|e| e.to_string()),
                "nmt_smooth_true" => nmt_bleu(&hyp, &refs, true).map_err(|e| e.to_string()),
                // HF evaluate "bleu" = nmt compute_bleu, smooth=False, on 13a tokens.
                "hf_evaluate_bleu" => {
                    let h = nextedit::core::metrics::bleu::tokenize_13a(hyp_s);
                    let r: Vec<Vec<String>> = refs_s
                        .iter()
                        .map(|r| nextedit::core::metrics::bleu::tokenize_13a(r))
                        .collect();
                    nmt_bleu(&h, &r, false).map_err(|e| e.to_string())
                }
                "cxg_code_to_text_smooth_bleu" => {
                    let h = nextedit::core::metrics::bleu::nist_tokens(hyp_s);
                    let r: Vec<Vec<String>> = refs_s
                        .iter()
                        .map(|r| nextedit::core::metrics::bleu::nist_tokens(r))
                        .collect();
                    Ok(smooth_bleu(&h, &r) / 100.0)
                }
                _ => continue,
            };
            match want {
                Value::String(err) => {
                    assert!(err.starts_with("error"), "{label}");
                    assert!(got.is_err(), "{label}: expected an error, got {got:?}");
                }
                _ => check(&label, got.unwrap(), want.as_f64().unwrap()),
            }
            checked += 1;
        }
        assert_eq!(checked, obj.len() - 2, "case {i}: every column is checked");
    }
}

#[test]
fn bleu_random_sample() {
    let rows = jsonl("bleu_random_sample.jsonl");
    assert_eq!(rows.len(), 100);
    for (i, row) in rows.iter().enumerate() {
        let hyp = strings(&row["hypothesis"]);
        let refs: Vec<Vec<String>> = row["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(strings)
            .collect();
        let obj = row.as_object().unwrap();
        for (key, want) in obj {
            let label = format!("row {i} {key}");
            let got = match key.as_str() {
                k if k.starts_with("nltk_method") => {
                    nltk_sentence_bleu(&hyp, &refs, nltk_method(k).unwrap()).unwrap()
                }
                "sacrebleu_sentence_exp_none_tok" => {
                    sacrebleu_sentence_bleu_tokens(&hyp, &refs, SacreSmoothing::Exp, true) / 100.0
                }
                "sacrebleu_sentence_floor_none_tok" => {
                    sacrebleu_sentence_bleu_tokens(&hyp, &refs, SacreSmoothing::Floor(0.1), true)
                        / 100.0
                }
                "sacrebleu_sentence_addk_none_tok" => {
                    sacrebleu_sentence_bleu_tokens(&hyp, &refs, SacreSmoothing::AddK(1.0), true)
                        / 100.0
                }
                "sacrebleu_sentence_none_none_tok_noeff" => {
                    sacrebleu_sentence_bleu_tokens(&hyp, &refs, SacreSmoothing::None, false) / 100.0
                }
                "nmt_compute_bleu_smooth_false" => nmt_bleu(&hyp, &refs, false).unwrap(),
                "nmt_compute_bleu_smooth_true" => nmt_bleu(&hyp, &refs, true).unwrap(),
                "codexglue_code_to_text_bleu" => smooth_bleu(&hyp, &refs) / 100.0,
                "hypothesis" | "references" => continue,
                other => panic!("unknown column {other}"),
            };
            check(&label, got, want.as_f64().unwrap());
        }
    }
}

/// Python's `str.split()`, which EASSE and t2t use.
fn ws(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// Python's `str.split(" ")`, which the orig and HF reference code use.
fn split_space(s: &str) -> Vec<&str> {
    s.split(' ').collect()
}

#[test]
fn sari_vectors() {
    let rows: Vec<Value> = serde_json::from_str(&read("sari_vectors.json")).unwrap();
    assert_eq!(rows.len(), 16);
    for (i, row) in rows.iter().enumerate() {
        let src = row["source"].as_str().unwrap();
        let pred = row["prediction"].as_str().unwrap();
        let refs = strings(&row["references"]);
        // orig and hf: [sari, keep, del, add] on split(" ") tokens.
        for (key, variant) in [("orig", SariVariant::Orig), ("hf", SariVariant::Hf)] {
            let r: Vec<Vec<&str>> = refs.iter().map(|r| split_space(r)).collect();
            let got = sari(
                &split_space(src),
                &split_space(pred),
                &r,
                &SariConfig::new(variant),
            );
            let want: Vec<f64> = row[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            check(&format!("{i} {key} sari"), got.sari, want[0]);
            check(&format!("{i} {key} keep"), got.keep.unwrap(), want[1]);
            check(&format!("{i} {key} del"), got.deletion.unwrap(), want[2]);
            check(&format!("{i} {key} add"), got.addition.unwrap(), want[3]);
        }
        let r: Vec<Vec<&str>> = refs.iter().map(|r| split_space(r)).collect();
        let hf = sari(
            &split_space(src),
            &split_space(pred),
            &r,
            &SariConfig::new(SariVariant::Hf),
        );
        check(
            &format!("{i} hf_compute_normalized"),
            hf.sari,
            row["hf_compute_normalized"].as_f64().unwrap(),
        );
        // EASSE and t2t tokenise with split() (no empty tokens).
        let r: Vec<Vec<&str>> = refs.iter().map(|r| ws(r)).collect();
        let easse = sari(
            &ws(src),
            &ws(pred),
            &r,
            &SariConfig::new(SariVariant::Easse),
        );
        check(
            &format!("{i} easse"),
            easse.sari,
            row["easse_sentence"].as_f64().unwrap(),
        );
        // t2t: [sari, keep, add, del].
        let t2t = sari(&ws(src), &ws(pred), &r, &SariConfig::new(SariVariant::T2t));
        let want: Vec<f64> = row["t2t"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        check(&format!("{i} t2t sari"), t2t.sari, want[0]);
        check(&format!("{i} t2t keep"), t2t.keep.unwrap(), want[1]);
        check(&format!("{i} t2t add"), t2t.addition.unwrap(), want[2]);
        check(&format!("{i} t2t del"), t2t.deletion.unwrap(), want[3]);
    }
}

#[test]
fn sari_random_sample() {
    let rows = jsonl("sari_random_sample.jsonl");
    assert_eq!(rows.len(), 100);
    for (i, row) in rows.iter().enumerate() {
        let src = strings(&row["source"]);
        let pred = strings(&row["prediction"]);
        let refs: Vec<Vec<String>> = row["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(strings)
            .collect();
        for (key, variant) in [
            ("orig", SariVariant::Orig),
            ("hf", SariVariant::Hf),
            ("easse_sentence", SariVariant::Easse),
            ("t2t", SariVariant::T2t),
            ("skip_proposal", SariVariant::Skip),
        ] {
            let got = sari(&src, &pred, &refs, &SariConfig::new(variant));
            check(
                &format!("row {i} {key}"),
                got.sari,
                row[key].as_f64().unwrap(),
            );
        }
    }
}
