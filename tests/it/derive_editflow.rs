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
