//! EditFlow's annotated commits: rebuilding them as git repositories, hunk
//! numbering, and the agreement of derived orders with the human annotations.

use std::path::Path;

use nextedit::core::trajectory::OrderKind;
use nextedit::engine::history::editflow::{derive_rebuilt, hunks_aligned, read_annotations};
use nextedit::engine::history::evaluate::{Confusion, evaluate_commit};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/editflow-sample");

/// A two-file commit in EditFlow's format, written by this test: `a/mod.py` gains an
/// import and a changed body; `b.py` is new. EditFlow lost the final newline of
/// each file's last line (`print(f(1))`, `y = f(2)`).
const OWN_SAMPLE: &str = r#"{
  "language": "python",
  "commit_url": "https://github.com/example/demo/commit/0123456789abcdef0123456789abcdef01234567",
  "commit_message": "Floor f and use it",
  "commit_snapshots": {
    "a/mod.py": [
      ["import os\n"],
      {"type": "insert", "before": [], "after": ["import math\n"], "idx": 0,
       "parent_version_range": {"start": 1, "end": 1}, "child_version_range": {"start": 1, "end": 2}},
      ["\n", "\n", "def f(x):\n"],
      {"type": "replace", "before": ["    return x\n"], "after": ["    return math.floor(x)\n"], "idx": 1,
       "parent_version_range": {"start": 4, "end": 5}, "child_version_range": {"start": 5, "end": 6}},
      ["\n", "\n", "print(f(1))"]
    ],
    "b.py": [
      {"type": "insert", "before": [], "after": ["from a.mod import f\n", "y = f(2)"], "idx": 2,
       "parent_version_range": {"start": 0, "end": 0}, "child_version_range": {"start": 0, "end": 2}}
    ]
  },
  "partial_orders": [
    {"edit_hunk_pair": [1, 0], "edit_order": "bi-directional", "reason": "import and use"},
    {"edit_hunk_pair": [0, 2], "edit_order": "no relation", "reason": ""}
  ]
}"#;

#[test]
fn own_sample_rebuilds_with_editflow_hunk_numbering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("demo-0123456789abcdef0123456789abcdef01234567.json");
    std::fs::write(&path, OWN_SAMPLE).unwrap();
    let commits = read_annotations(dir.path()).unwrap();
    assert_eq!(commits.len(), 1);
    assert_eq!(
        commits[0].name(),
        "demo-0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(commits[0].sha(), "0123456789abcdef0123456789abcdef01234567");

    let (t, rebuilt) = derive_rebuilt(&commits[0], &dir.path().join("repo")).unwrap();
    // The lost final newlines are back, on both sides.
    assert_eq!(
        String::from_utf8(rebuilt.child["a/mod.py"].clone()).unwrap(),
        "import os\nimport math\n\n\ndef f(x):\n    return math.floor(x)\n\n\nprint(f(1))\n"
    );
    assert_eq!(
        String::from_utf8(rebuilt.child["b.py"].clone()).unwrap(),
        "from a.mod import f\ny = f(2)\n"
    );
    assert!(!rebuilt.parent.contains_key("b.py"));

    assert!(hunks_aligned(&t, &rebuilt.hunks));
    let rows: Vec<_> = t
        .edits
        .iter()
        .map(|e| {
            (
                e.id.as_str(),
                e.file.as_str(),
                (e.before_lines.start, e.before_lines.end),
                (e.after_lines.start, e.after_lines.end),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("e0", "a/mod.py", (1, 1), (1, 2)),
            ("e1", "a/mod.py", (4, 5), (5, 6)),
            ("e2", "b.py", (0, 0), (0, 2))
        ]
    );
    let edges: Vec<_> = t
        .order
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str(), e.kind))
        .collect();
    // e1 changes f's body, not its signature, so b.py's call does not depend on it.
    assert_eq!(edges, vec![("e0", "e1", OrderKind::Bi)]);

    let result = evaluate_commit(
        commits[0].name(),
        &t,
        &commits[0].partial_orders,
        Some(true),
    )
    .unwrap();
    // Pairs (0,1) bi = bi, (0,2) no relation = none, (1,2) unlisted = none.
    assert_eq!(
        result.all_pairs.counts,
        [[1, 0, 0, 0], [0; 4], [0; 4], [0, 0, 0, 2]]
    );
    assert_eq!(result.all_pairs.accuracy(), Some(1.0));
    assert_eq!(result.annotated_pairs.total(), 2);
}

#[test]
fn all_editflow_samples_line_up_and_score_deterministically() {
    let commits = read_annotations(Path::new(SAMPLES)).unwrap();
    assert_eq!(commits.len(), 40);
    let scratch = tempfile::tempdir().unwrap();
    let mut all = Confusion::default();
    let mut annotated = Confusion::default();
    let mut aligned = 0;
    let mut skipped = Vec::new();
    for (index, commit) in commits.iter().enumerate() {
        let (t, rebuilt) = derive_rebuilt(commit, &scratch.path().join(index.to_string())).unwrap();
        aligned += usize::from(hunks_aligned(&t, &rebuilt.hunks));
        match evaluate_commit(commit.name(), &t, &commit.partial_orders, None) {
            Ok(result) => {
                all.merge(&result.all_pairs);
                annotated.merge(&result.annotated_pairs);
            }
            Err(error) => skipped.push(error.to_string()),
        }
    }
    // openpilot's snapshot is empty in EditFlow's data although 4 pairs are labelled.
    assert_eq!(aligned, 40);
    assert_eq!(
        skipped,
        vec![
            "annotation: openpilot-1abea5a2596f36eec56d52c9d3a900b7396cf262: pair [0, 1] names a hunk the commit does not have (0 hunks)"
        ]
    );
    assert_eq!(all.total(), 1140);
    assert_eq!(annotated.total(), 360);
    // Rows gold, columns derived: bi, lower first, higher first, no relation.
    assert_eq!(
        all.counts,
        [[288, 0, 1, 58], [2, 4, 0, 0], [0, 0, 4, 0], [28, 1, 1, 753]]
    );
    assert_eq!(annotated.related_counts(), (299, 1, 58));
    assert_eq!(format!("{:.4}", all.accuracy().unwrap()), "0.9202");
    assert_eq!(format!("{:.4}", all.related_f1().unwrap()), "0.8717");
}

/// `x` (a fraction) as docs/derive.md writes it: `92.0 %`, `100 %`.
fn percent(x: f64) -> String {
    let p = format!("{:.1}", x * 100.0);
    format!("{} %", if p == "100.0" { "100" } else { &p })
}

/// A figure with its 95 % interval (`{value, low, high}`): `92.0 % [89.7, 94.2]`.
fn with_interval(figure: &serde_json::Value) -> String {
    let f = |key: &str| figure[key].as_f64().unwrap();
    format!(
        "{} [{:.1}, {:.1}]",
        percent(f("value")),
        f("low") * 100.0,
        f("high") * 100.0
    )
}

/// The rows of the first Markdown table after `anchor` (cells trimmed, `**` bold
/// marks removed; header and rule rows left out).
fn table_rows(doc: &str, anchor: &str) -> Vec<Vec<String>> {
    let section = doc
        .split_once(anchor)
        .unwrap_or_else(|| panic!("docs/derive.md has no {anchor:?}"))
        .1;
    section
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().replace("**", ""))
                .collect()
        })
        .collect()
}

/// Checks the cells of a docs/derive.md table against what the command printed: each
/// `(row label, column, expected)`.
fn check_table(doc: &str, heading: &str, expected: &[(&str, usize, String)]) {
    let rows = table_rows(doc, heading);
    for (label, column, want) in expected {
        let row = rows
            .iter()
            .find(|r| r[0] == *label)
            .unwrap_or_else(|| panic!("{heading}: no row {label:?} in {rows:?}"));
        assert_eq!(
            &row[*column], want,
            "docs/derive.md, {heading}, {label:?}: the doc says {:?}, eval-order prints {want:?}",
            row[*column]
        );
    }
}

/// docs/derive.md's figures of the current build on the EditFlow sample are what
/// `nextedit eval-order --annotations tests/data/editflow-sample --cv repo --seed 1`
/// prints (the command the doc names next to them); the "before" columns are earlier
/// builds' output of the same command, a record.
#[test]
fn the_figures_docs_derive_gives_are_what_eval_order_prints() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(["eval-order", "--annotations", SAMPLES])
        .args(["--cv", "repo", "--seed", "1", "--json", "--quiet"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/derive.md")).unwrap();
    let all = &report["overall"]["all_pairs"];
    let annotated = &report["overall"]["annotated_pairs"];
    let p = |v: &serde_json::Value| percent(v.as_f64().unwrap());
    let label = |set: &serde_json::Value, name: &str| {
        format!(
            "{} / {}",
            p(&set["per_label"][name][0]),
            p(&set["per_label"][name][1])
        )
    };
    let related = |set: &serde_json::Value| {
        format!(
            "{} / {} / {}",
            p(&set["related_precision"]),
            p(&set["related_recall"]),
            p(&set["related_f1"])
        )
    };
    assert!(doc.contains(&format!(
        "39 commits evaluated ({} pairs, {} annotated)",
        all["pairs"], annotated["pairs"]
    )));
    check_table(
        &doc,
        "### Figures on `tests/data/editflow-sample/` (40 commits, Python)",
        &[
            ("accuracy, all pairs (4-way)", 2, p(&all["accuracy"])),
            (
                "accuracy, annotated pairs only",
                2,
                p(&annotated["accuracy"]),
            ),
            (
                "related vs not, all pairs: precision / recall / F1",
                2,
                related(all),
            ),
            (
                "related vs not, annotated pairs only: precision / recall / F1",
                2,
                related(annotated),
            ),
            (
                "bi-directional: precision / recall",
                2,
                label(all, "bi-directional"),
            ),
            (
                "lower before higher: precision / recall",
                2,
                label(all, "lower before higher"),
            ),
            (
                "higher before lower: precision / recall",
                2,
                label(all, "higher before lower"),
            ),
            (
                "no relation: precision / recall",
                2,
                label(all, "no relation"),
            ),
        ],
    );
    let confusion = |spaced: bool| {
        let rows: Vec<String> = report["overall"]["confusion_all_pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let cells: Vec<String> = row
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.to_string())
                    .collect();
                format!("[{}]", cells.join(if spaced { ", " } else { "," }))
            })
            .collect();
        format!("[{}]", rows.join(if spaced { ", " } else { "," }))
    };
    assert!(
        doc.contains(&format!("none): `{}` (before:", confusion(true))),
        "docs/derive.md's confusion over all pairs is not {}",
        confusion(true)
    );
    let cv = &report["cross_validation"];
    let (rules, held) = (&cv["all_rules"], &cv["held_out"]);
    let mut lsp_table: Vec<(&str, usize, String)> = [
        ("accuracy, all pairs", rules, "accuracy_all_pairs"),
        (
            "accuracy, annotated pairs",
            rules,
            "accuracy_annotated_pairs",
        ),
        ("related precision", rules, "related_precision"),
        ("related recall", rules, "related_recall"),
        ("related F1", rules, "related_f1"),
        (
            "held out (`--cv repo`): all pairs",
            held,
            "accuracy_all_pairs",
        ),
        (
            "held out: annotated pairs",
            held,
            "accuracy_annotated_pairs",
        ),
        ("held out: related F1", held, "related_f1"),
    ]
    .into_iter()
    .map(|(label, set, key)| (label, 1, with_interval(&set[key])))
    .collect();
    lsp_table.push((
        "confusion, all pairs (rows gold: bi, lower-first, higher-first, none)",
        1,
        format!("`{}`", confusion(false)),
    ));
    check_table(&doc, "### `--lsp` on the samples", &lsp_table);
    // Per rule kind: links, annotated related, precision, repositories below half.
    let rows = table_rows(&doc, "now also prints, per rule kind");
    let kinds = cv["rules"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        kinds.len(),
        "docs/derive.md's rule kinds: {rows:?}"
    );
    for (row, kind) in rows.iter().zip(kinds) {
        let (links, related) = (
            kind["links"].as_u64().unwrap(),
            kind["related"].as_u64().unwrap(),
        );
        let below: Vec<String> = kind["by_repository"]
            .as_object()
            .unwrap()
            .iter()
            .filter_map(|(repository, counts)| {
                let (l, r) = (counts[0].as_u64().unwrap(), counts[1].as_u64().unwrap());
                (2 * r < l).then(|| format!("{} {r}/{l}", repository.rsplit('/').next().unwrap()))
            })
            .collect();
        let below = if below.is_empty() {
            "—".to_string()
        } else {
            below.join(", ")
        };
        let want = [
            format!("`{}`", kind["kind"].as_str().unwrap()),
            links.to_string(),
            related.to_string(),
            percent(related as f64 / links as f64),
        ];
        assert_eq!(
            row[..4],
            want,
            "docs/derive.md's row of rule kind {}",
            kind["kind"]
        );
        assert!(
            row[4].starts_with(&below),
            "docs/derive.md's repositories below half for {}: {:?}, eval-order: {below:?}",
            kind["kind"],
            row[4]
        );
    }
}
