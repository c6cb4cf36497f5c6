//! Dependency edges on real commits: each edge kind in Python, Go and Java.

mod derive_support;

use derive_support::{TestRepo, assert_edits_rebuild_commit, edge_rows, edit_rows};

fn python_repo() -> (TestRepo, String) {
    let mut repo = TestRepo::new();
    repo.write(
        "pkg/geometry.py",
        "import math\n\n\ndef area(radius):\n    return math.pi * radius ** 2\n\n\ndef log_area(radius):\n    print(\"area\", area(radius))\n\n\ndef log_twice(radius):\n    print(\"area\", area(radius))\n    print(\"twice\")\n",
    );
    repo.write(
        "pkg/report.py",
        "from pkg.geometry import area\n\n\ndef summary(r):\n    total = area(r)\n    return total\n",
    );
    repo.write(
        "tests/test_geometry.py",
        "from pkg.geometry import area\n\n\ndef test_area():\n    assert area(1) > 3\n",
    );
    repo.commit("base");
    repo.write(
        "pkg/geometry.py",
        "import math\n\n\ndef area(radius, scale=1):\n    return math.pi * radius ** 2 * scale\n\n\ndef perimeter(radius):\n    return 2 * math.pi * radius\n\n\ndef log_area(radius):\n    print(\"area\", round(area(radius), 2))\n\n\ndef log_twice(radius):\n    print(\"area\", round(area(radius), 2))\n    print(\"twice\")\n",
    );
    repo.write(
        "pkg/report.py",
        "from pkg.geometry import area, perimeter\n\n\ndef summary(r):\n    total = area(r, scale=2)\n    edge = perimeter(r)\n    return total + edge\n",
    );
    repo.write(
        "tests/test_geometry.py",
        "from pkg.geometry import area\n\n\ndef test_area():\n    scale = 2\n    assert area(1, scale=scale) > 6\n",
    );
    let sha = repo.commit("Add scale and perimeter");
    (repo, sha)
}

#[test]
fn python_def_use_import_signature_clone_and_test_edges() {
    let (repo, sha) = python_repo();
    let t = repo.derive(&sha).unwrap();
    assert_edits_rebuild_commit(&t);
    assert_eq!(
        edit_rows(&t),
        vec![
            ("e0".into(), "pkg/geometry.py".into(), "replace".into(), (3, 5), (3, 9)),
            ("e1".into(), "pkg/geometry.py".into(), "replace".into(), (8, 9), (12, 13)),
            ("e2".into(), "pkg/geometry.py".into(), "replace".into(), (12, 13), (16, 17)),
            ("e3".into(), "pkg/report.py".into(), "replace".into(), (0, 1), (0, 1)),
            ("e4".into(), "pkg/report.py".into(), "replace".into(), (4, 6), (4, 7)),
            ("e5".into(), "tests/test_geometry.py".into(), "replace".into(), (4, 5), (4, 6)),
        ]
    );
    assert_eq!(
        edge_rows(&t),
        vec![
            "e0-e1 bi: signature_call/area",
            "e0-e2 bi: signature_call/area",
            "e0-e3 bi: def_import/perimeter",
            "e0-e4 bi: def_use/perimeter, signature_call/area",
            "e0-e5 bi: signature_call/area, test_impl/scale",
            "e1-e2 bi: clone/- +( ) , 2 round",
            "e3-e4 bi: import_use/perimeter",
        ]
    );
    // Mutual edges count both ways; the test edit has the fewest (only e0).
    assert_eq!(t.order.initial, vec!["e5"]);
    assert_eq!(t.order.natural, vec!["e5", "e0", "e1", "e2", "e3", "e4"]);
    assert_eq!(t.order.source.as_deref(), Some("derived"));

    let e4 = &t.edits[4];
    assert_eq!(e4.before_text, "    total = area(r)\n    return total\n");
    assert_eq!(e4.after_text, "    total = area(r, scale=2)\n    edge = perimeter(r)\n    return total + edge\n");
    assert_eq!(e4.context_before, vec!["\n", "\n", "def summary(r):\n"]);
    assert_eq!(e4.structural_path, vec!["def summary(r):"]);
    assert_eq!(
        e4.annotations["identifiers"],
        serde_json::json!({
            "parent": {"defined": ["total"], "used": ["area", "r", "total"], "imported": []},
            "child": {"defined": ["edge", "total"], "used": ["area", "edge", "perimeter", "r", "scale", "total"], "imported": []},
            "added": ["edge"], "removed": [], "renamed": [],
        })
    );
    // Historian: the construct around the edit's first line, in the parent.
    assert_eq!(t.edits[0].structural_path, vec!["def area(radius):"]);
    assert_eq!(t.edits[1].structural_path, vec!["def log_area(radius):"]);
}

#[test]
fn python_move_and_rename() {
    let mut repo = TestRepo::new();
    repo.write(
        "app/util.py",
        "def keep():\n    return 1\n\n\ndef slugify(text):\n    cleaned = text.strip().lower()\n    return cleaned.replace(' ', '-')\n",
    );
    repo.write("app/views.py", "def old_name(x):\n    return x\n\n\ndef page():\n    value = old_name(2)\n    return value\n");
    repo.commit("base");
    repo.write("app/util.py", "def keep():\n    return 1\n");
    repo.write(
        "app/views.py",
        "def new_name(x):\n    return x\n\n\ndef page():\n    value = new_name(2)\n    return value\n\n\ndef slugify(text):\n    cleaned = text.strip().lower()\n    return cleaned.replace(' ', '-')\n",
    );
    let sha = repo.commit("Move slugify next to its views, rename old_name");
    let t = repo.derive(&sha).unwrap();
    assert_edits_rebuild_commit(&t);
    assert_eq!(
        edit_rows(&t),
        vec![
            ("e0".into(), "app/util.py".into(), "delete".into(), (2, 7), (2, 2)),
            ("e1".into(), "app/views.py".into(), "replace".into(), (0, 1), (0, 1)),
            ("e2".into(), "app/views.py".into(), "replace".into(), (5, 6), (5, 6)),
            ("e3".into(), "app/views.py".into(), "insert".into(), (7, 7), (7, 12)),
        ]
    );
    assert_eq!(
        edge_rows(&t),
        vec![
            "e0-e3 before: move/3 line(s)",
            "e1-e2 bi: def_use/new_name, def_use/old_name, clone/-old_name +new_name"
        ]
    );
    // The deletion has no incoming edge; the insertion must wait for it.
    assert_eq!(t.order.initial, vec!["e0"]);
    assert_eq!(t.order.natural, vec!["e0", "e3", "e1", "e2"]);
    assert_eq!(t.edits[1].annotations["identifiers"]["renamed"], serde_json::json!([{"from": "old_name", "to": "new_name"}]));
}
