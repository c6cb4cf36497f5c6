//! ContextBench against the reference evaluator's outputs on the shared demo cases,
//! plus the fixed mode's documented differences on the same inputs.

use nextedit::core::metrics::contextbench::{
    ContextBenchConfig, Conversion, Mode, Prediction, RepoView, aggregate, evaluate,
    parse_gold_jsonl, parse_predictions_jsonl, trace_to_steps,
};
use serde_json::Value;

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/contextbench-demo/");

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{DEMO}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The demo repository: exactly the two committed files.
struct DemoRepo;

impl RepoView for DemoRepo {
    fn read(&self, path: &str) -> Option<String> {
        matches!(path, "mod.py" | "other.py").then(|| read(path))
    }
}

fn compat() -> ContextBenchConfig {
    ContextBenchConfig {
        mode: Mode::Compat,
        ..Default::default()
    }
}

fn fixed() -> ContextBenchConfig {
    ContextBenchConfig::default()
}

fn run(gold: &str, pred: &Prediction, config: &ContextBenchConfig) -> Value {
    let gold = parse_gold_jsonl(&read(gold)).unwrap();
    let result = evaluate(&gold[0], pred, &DemoRepo, config).unwrap();
    serde_json::to_value(&result).unwrap()
}

fn expected(name: &str) -> Value {
    serde_json::from_str(read(name).trim()).unwrap()
}

fn pred(name: &str) -> Prediction {
    parse_predictions_jsonl(&read(name)).unwrap().remove(0)
}

#[test]
fn case1_compat_matches_reference_exactly() {
    let got = run("case1_gold.jsonl", &pred("case1_pred.jsonl"), &compat());
    assert_eq!(got, expected("case1_expected_results.jsonl"));
}

#[test]
fn case2_compat_matches_reference_exactly() {
    let got = run("case2_gold.jsonl", &pred("case2_pred.jsonl"), &compat());
    assert_eq!(got, expected("case2_expected_results.jsonl"));
}

#[test]
fn case3_compat_matches_reference_exactly() {
    let got = run(
        "case3_benchkit_gold.jsonl",
        &pred("case3_benchkit_converted_pred.jsonl"),
        &compat(),
    );
    assert_eq!(got, expected("case3_expected_results.jsonl"));
}

#[test]
fn case3_trace_conversion_matches_benchkit() {
    let trace: Value = serde_json::from_str(read("case3_trace.jsonl").trim()).unwrap();
    let no_lines = |_: &str| None;
    let (steps, final_context) = trace_to_steps(&trace, Conversion::Compat, &no_lines);
    let converted = pred("case3_benchkit_converted_pred.jsonl");
    assert_eq!(steps, converted.steps);
    assert_eq!(final_context.files, converted.final_context.files);
    // Benchkit keeps span insertion order per file; compare as sets of spans.
    let mut got: Vec<_> = final_context.spans["mod.py"].clone();
    let mut want: Vec<_> = converted.final_context.spans["mod.py"].clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // End to end: trace → steps → evaluator equals the reference output.
    let p = Prediction {
        steps,
        final_context,
        ..converted
    };
    let got = run("case3_benchkit_gold.jsonl", &p, &compat());
    assert_eq!(got, expected("case3_expected_results.jsonl"));
}

#[test]
fn case1_fixed_clips_lines_and_fixes_symbol_overlap() {
    let got = run("case1_gold.jsonl", &pred("case1_pred.jsonl"), &fixed());
    let line = &got["final"]["line"];
    // 1–400 clipped to the 18 lines of mod.py.
    assert_eq!(line["pred_size"], 18);
    assert_eq!(line["precision"], 5.0 / 18.0);
    assert_eq!(line["f1"], 2.0 * (5.0 / 18.0) / (1.0 + 5.0 / 18.0));
    // other.py (file-only read) still counts as a file.
    assert_eq!(got["final"]["file"]["pred_size"], 2);
    assert_eq!(got["trajectory"]["redundancy"]["line"], 1.0 - 18.0 / 34.0);
    // EditLoc: deleted lines {10, 18}, one in gold; recall over the 5 gold lines.
    assert_eq!(got["editloc"]["precision"], 0.5);
    assert_eq!(got["editloc"]["recall"], 0.2);
}

#[test]
fn case2_fixed_reports_undefined_and_unreachable() {
    let got = run("case2_gold.jsonl", &pred("case2_pred.jsonl"), &fixed());
    // run_test.py is outside the repository: reported, not scored.
    assert_eq!(
        got["unreachable_gold"],
        serde_json::json!(["/workspace/run_test.py"])
    );
    assert_eq!(got["final"]["file"]["gold_size"], 1);
    assert_eq!(got["final"]["file"]["coverage"], 1.0);
    // Nothing predicted at line/span/symbol level: precision undefined, not 1.0.
    for g in ["symbol", "span", "line"] {
        assert_eq!(got["final"][g]["precision"], Value::Null, "{g}");
        assert_eq!(got["final"][g]["coverage"], 0.0, "{g}");
    }
    assert_eq!(got["final"]["line"]["gold_size"], 2);
    // The unresolvable step is dropped; the empty model patch gets no EditLoc.
    assert_eq!(got["num_steps"], 1);
    assert_eq!(got.get("editloc"), None);
}

#[test]
fn case1_compat_aggregate_editloc_is_the_printed_summary() {
    // The evaluator prints Σhits / Σgold_size = 1/5 for this single instance (README).
    let gold = parse_gold_jsonl(&read("case1_gold.jsonl")).unwrap();
    let r = evaluate(&gold[0], &pred("case1_pred.jsonl"), &DemoRepo, &compat()).unwrap();
    let agg = aggregate(std::slice::from_ref(&r));
    assert_eq!(agg.editloc_recall, Some(0.2));
    assert_eq!(agg.micro_precision.line, Some(0.0125));
    assert_eq!(agg.auc_coverage.line, Some(0.6799999999999999));
}
