//! Zed's and the Next Edit Prediction benchmark's yardsticks, value by value against the
//! vectors their reference implementations produced (`tests/data/yardsticks/`, README
//! there), through the library and through `nextedit score`; and the Python `difflib`
//! port against the real `python3` on random inputs.

use std::io::Write;
use std::process::{Command, Stdio};

use nextedit::core::metrics::yardsticks::{
    delta_chrf::delta_chrf,
    exact_lines::exact_lines,
    kept_rate::{TokenFate, kept_rate},
    nep::nep_match,
    pydifflib::{splitlines, unified_diff},
};
use serde_json::{Value, json};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/yardsticks/");

fn rows(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{VECTORS}{name}")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn s<'v>(row: &'v Value, key: &str) -> &'v str {
    row[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {row}"))
}

/// Scores within 1e-9; everything else (counts, booleans, nulls) exactly.
#[track_caller]
fn check(case: &str, got: &Value, want: &Value) {
    let keys = want.as_object().unwrap();
    for (k, w) in keys {
        let g = &got[k];
        match (g.as_f64(), w.as_f64()) {
            (Some(g), Some(w)) if !w.is_nan() && want[k].is_f64() => {
                assert!((g - w).abs() <= 1e-9, "{case}: {k} = {g}, reference {w}")
            }
            _ => assert_eq!(g, w, "{case}: {k}"),
        }
    }
}

/// How many vectors of each file come from the reference's own unit tests.
fn own_and_random(rows: &[Value]) -> (usize, usize) {
    let own = rows
        .iter()
        .filter(|r| s(r, "case").starts_with("zed:"))
        .count();
    (own, rows.len() - own)
}

#[test]
fn delta_chrf_equals_zeds_on_its_tests_and_random_triples() {
    let rows = rows("delta_chrf.jsonl");
    assert_eq!(own_and_random(&rows), (27, 300));
    for r in &rows {
        let got = delta_chrf(s(r, "original"), s(r, "expected"), s(r, "actual"));
        check(
            s(r, "case"),
            &json!({"score": got}),
            &json!({"score": r["score"]}),
        );
    }
}

#[test]
fn exact_lines_equal_zeds_on_its_tests_and_random_patches() {
    let rows = rows("exact_lines.jsonl");
    assert_eq!(own_and_random(&rows), (7, 300));
    for r in &rows {
        let m = exact_lines(s(r, "expected_patch"), s(r, "actual_patch"));
        let got = json!({"tp": m.tp, "fp": m.fp, "fn": m.fn_, "precision": m.precision(),
                         "recall": m.recall(), "f1": m.f1()});
        let want = json!({"tp": r["tp"], "fp": r["fp"], "fn": r["fn"], "precision": r["precision"],
                          "recall": r["recall"], "f1": r["f1"]});
        check(s(r, "case"), &got, &want);
    }
}

#[test]
fn kept_rate_equals_zeds_on_its_tests_and_random_triples() {
    let rows = rows("kept_rate.jsonl");
    assert_eq!(own_and_random(&rows), (15, 300));
    for r in &rows {
        let k = kept_rate(s(r, "base"), s(r, "predicted"), s(r, "final"));
        let fates: String = k
            .fates
            .iter()
            .map(|f| match f {
                TokenFate::Context => 'c',
                TokenFate::Kept => 'k',
                TokenFate::Discarded => 'd',
            })
            .collect();
        let got = json!({"kept_rate": k.kept_rate, "kept_chars": k.kept_chars,
            "discarded_chars": k.discarded_chars, "predicted_new_chars": k.predicted_new_chars,
            "final_new_chars": k.final_new_chars, "context_chars": k.context_chars,
            "annotations": fates});
        let mut want = r.clone();
        for key in ["case", "base", "predicted", "final"] {
            want.as_object_mut().unwrap().remove(key);
        }
        check(s(r, "case"), &got, &want);
    }
}

#[test]
fn nep_matches_equal_evaluate_py_on_random_triples() {
    let rows = rows("nep.jsonl");
    assert_eq!(rows.len(), 304);
    assert!(rows.iter().filter(|r| r["partial_match"].is_null()).count() > 10);
    for r in &rows {
        let m = nep_match(s(r, "original"), s(r, "ground_truth"), s(r, "output"));
        let got = json!({"exact_match": m.exact, "partial_match": m.partial, "position_match": m.position});
        let want = json!({"exact_match": r["exact_match"], "partial_match": r["partial_match"],
                          "position_match": r["position_match"]});
        check(s(r, "case"), &got, &want);
    }
}

/// A small deterministic generator (xorshift), so a failure names a reproducible case.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Random line lists: short ones from a varied alphabet, long ones (≥ 200 lines) from a
/// few repeated lines so that difflib's autojunk heuristic decides the matching.
fn random_lines(rng: &mut Rng, long: bool) -> Vec<String> {
    const SHORT: [&str; 8] = ["a", "b", "c", "", "  ", "x = 1", "é", "\tz"];
    let n = if long {
        200 + rng.below(80)
    } else {
        rng.below(25)
    };
    let alphabet = if long { 3 } else { SHORT.len() };
    (0..n)
        .map(|_| {
            let mut l = SHORT[rng.below(alphabet)].to_owned();
            if long && rng.below(4) == 0 {
                l.push_str(&rng.below(40).to_string());
            }
            l
        })
        .collect()
}

fn edit(rng: &mut Rng, lines: &[String]) -> Vec<String> {
    let mut v = lines.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(3) {
            0 => v.insert(at, format!("new{}", rng.below(5))),
            1 if at < v.len() => {
                v.remove(at);
            }
            _ if at < v.len() => v[at] = "changed".into(),
            _ => {}
        }
    }
    v
}

/// Runs a Python script on `input` as JSON on its standard input; its JSON output.
fn python<T: serde::de::DeserializeOwned>(script: &str, input: &impl serde::Serialize) -> T {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let input = serde_json::to_string(input).unwrap();
    (child.stdin.take().unwrap())
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python3 failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn unified_diff_equals_pythons_difflib_on_random_inputs() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let cases: Vec<(Vec<String>, Vec<String>)> = (0..240)
        .map(|i| {
            let a = random_lines(&mut rng, i % 8 == 0);
            let b = edit(&mut rng, &a);
            (a, b)
        })
        .collect();
    let script = "import difflib, json, sys\n\
        cases = json.load(sys.stdin)\n\
        json.dump([list(difflib.unified_diff(a, b, lineterm='')) for a, b in cases], sys.stdout)";
    let python: Vec<Vec<String>> = python(script, &cases);
    let mut long_with_hunks = 0;
    for (i, ((a, b), want)) in cases.iter().zip(&python).enumerate() {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let b: Vec<&str> = b.iter().map(String::as_str).collect();
        assert_eq!(&unified_diff(&a, &b, 3), want, "case {i}");
        if a.len() >= 200 && !want.is_empty() {
            long_with_hunks += 1;
        }
    }
    assert!(long_with_hunks >= 25, "{long_with_hunks} long cases");
}

#[test]
fn splitlines_equals_pythons() {
    let texts = [
        "a\r\nb\rc\n",
        "",
        "\n",
        "x\x0by\x0cz\x1c\u{85}w\u{2028}",
        "\r\r\n\n",
        "no break",
    ];
    let script =
        "import json, sys\njson.dump([t.splitlines() for t in json.load(sys.stdin)], sys.stdout)";
    let python: Vec<Vec<String>> = python(script, &texts);
    for (t, want) in texts.iter().zip(python) {
        assert_eq!(splitlines(t), want, "{t:?}");
    }
}

/// Runs `nextedit score METRIC` on texts written to files, `--json`; returns its object.
fn score(metric: &str, texts: &[(&str, &str)], extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["score".to_owned(), metric.to_owned()];
    for (i, (flag, text)) in texts.iter().enumerate() {
        let path = dir.path().join(format!("t{i}"));
        std::fs::write(&path, text).unwrap();
        args.extend([flag.to_string(), path.to_str().unwrap().to_owned()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--json".into());
    let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The reference's own cases and every 10th random one, through the binary.
fn sample(rows: Vec<Value>) -> impl Iterator<Item = Value> {
    rows.into_iter()
        .enumerate()
        .filter(|(i, r)| !s(r, "case").starts_with("random:") || i % 10 == 0)
        .map(|(_, r)| r)
}

#[test]
fn score_commands_print_the_reference_values() {
    for r in sample(rows("delta_chrf.jsonl")) {
        let texts = [
            ("--origin", s(&r, "original")),
            ("--reference", s(&r, "expected")),
            ("--prediction", s(&r, "actual")),
        ];
        let got = score("delta-chrf", &texts, &[]);
        check(
            s(&r, "case"),
            &got,
            &json!({"metric": "delta-chrf", "score": r["score"]}),
        );
    }
    for r in sample(rows("exact_lines.jsonl")) {
        let texts = [
            ("--reference", s(&r, "expected_patch")),
            ("--prediction", s(&r, "actual_patch")),
        ];
        let got = score("exact-lines", &texts, &["--patches"]);
        let mut want = r.clone();
        for key in ["case", "expected_patch", "actual_patch"] {
            want.as_object_mut().unwrap().remove(key);
        }
        check(s(&r, "case"), &got, &want);
    }
    for r in sample(rows("kept_rate.jsonl")) {
        let texts = [
            ("--base", s(&r, "base")),
            ("--prediction", s(&r, "predicted")),
            ("--final", s(&r, "final")),
        ];
        let got = score("kept-rate", &texts, &[]);
        let mut want = r.clone();
        for key in ["case", "base", "predicted", "final", "annotations"] {
            want.as_object_mut().unwrap().remove(key);
        }
        check(s(&r, "case"), &got, &want);
    }
    for r in sample(rows("nep.jsonl")) {
        let texts = [
            ("--origin", s(&r, "original")),
            ("--reference", s(&r, "ground_truth")),
            ("--prediction", s(&r, "output")),
        ];
        let got = score("nep", &texts, &[]);
        let want = json!({"metric": "nep", "exact_match": r["exact_match"],
            "partial_match": r["partial_match"], "position_match": r["position_match"]});
        check(s(&r, "case"), &got, &want);
    }
}

#[test]
fn exact_lines_of_texts_diffs_them_first() {
    let o = "def f():\n    return 1\n\nx = f()\n";
    let a = "def f():\n    return 2\n\nx = f()\n";
    let b = "def f():\n    return 2\n\nx = f() + 1\n";
    let texts = [("--origin", o), ("--reference", a), ("--prediction", b)];
    let got = score("exact-lines", &texts, &[]);
    // Expected: -return 1, +return 2. Actual adds -x = f(), +x = f() + 1.
    check(
        "texts",
        &got,
        &json!({"tp": 2, "fp": 2, "fn": 0, "precision": 0.5, "recall": 1.0}),
    );
}

#[test]
fn score_yardsticks_name_bad_inputs() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[
        "score",
        "kept-rate",
        "--base",
        "-",
        "--prediction",
        "-",
        "--final",
        "/x",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("only one of --base, --prediction, --final can be `-`"),
        "{err}"
    );
    let (code, err) = run(&[
        "score",
        "kept-rate",
        "--base",
        "/nonexistent/b",
        "--prediction",
        "/x",
        "--final",
        "/x",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("reading --base file `/nonexistent/b`"),
        "{err}"
    );
    let (code, err) = run(&["score", "nep", "--reference", "/x", "--prediction", "/y"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--origin is required"), "{err}");
}
