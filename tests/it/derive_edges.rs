//! Dependency edges on real commits: each edge kind in Python, Go and Java.

use crate::derive_support;

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
            (
                "e0".into(),
                "pkg/geometry.py".into(),
                "replace".into(),
                (3, 5),
                (3, 9)
            ),
            (
                "e1".into(),
                "pkg/geometry.py".into(),
                "replace".into(),
                (8, 9),
                (12, 13)
            ),
            (
                "e2".into(),
                "pkg/geometry.py".into(),
                "replace".into(),
                (12, 13),
                (16, 17)
            ),
            (
                "e3".into(),
                "pkg/report.py".into(),
                "replace".into(),
                (0, 1),
                (0, 1)
            ),
            (
                "e4".into(),
                "pkg/report.py".into(),
                "replace".into(),
                (4, 6),
                (4, 7)
            ),
            (
                "e5".into(),
                "tests/test_geometry.py".into(),
                "replace".into(),
                (4, 5),
                (4, 6)
            ),
        ]
    );
    assert_eq!(
        edge_rows(&t),
        vec![
            "e0-e1 bi: signature_call/area",
            "e0-e2 bi: signature_call/area",
            "e0-e3 bi: def_import/perimeter",
            "e0-e4 bi: def_use/perimeter, signature_call/area, argument_parameter/area(scale)",
            // The test's `scale` is its own local, not geometry's parameter: no test_impl.
            "e0-e5 bi: signature_call/area, argument_parameter/area(scale)",
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
    assert_eq!(
        e4.after_text,
        "    total = area(r, scale=2)\n    edge = perimeter(r)\n    return total + edge\n"
    );
    assert_eq!(e4.context_before, vec!["\n", "\n", "def summary(r):\n"]);
    assert_eq!(e4.structural_path, vec!["def summary(r):"]);
    assert_eq!(
        e4.annotations.identifiers.clone().unwrap(),
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
            (
                "e0".into(),
                "app/util.py".into(),
                "delete".into(),
                (2, 7),
                (2, 2)
            ),
            (
                "e1".into(),
                "app/views.py".into(),
                "replace".into(),
                (0, 1),
                (0, 1)
            ),
            (
                "e2".into(),
                "app/views.py".into(),
                "replace".into(),
                (5, 6),
                (5, 6)
            ),
            (
                "e3".into(),
                "app/views.py".into(),
                "insert".into(),
                (7, 7),
                (7, 12)
            ),
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
    assert_eq!(
        t.edits[1].annotations.identifiers.as_ref().unwrap()["renamed"],
        serde_json::json!([{"from": "old_name", "to": "new_name"}])
    );
}

#[test]
fn go_def_use_import_signature_clone_test_and_move_edges() {
    let mut repo = TestRepo::new();
    repo.write(
        "server/server.go",
        "package server\n\nimport \"fmt\"\n\nfunc Listen(port int) string {\n\treturn fmt.Sprint(port)\n}\n\nfunc Version() string {\n\treturn \"1\"\n}\n\nfunc sum(values []int) int {\n\ttotal := 0\n\tfor _, v := range values {\n\t\ttotal += v\n\t}\n\treturn total\n}\n",
    );
    repo.write(
        "server/cmd.go",
        "package server\n\nfunc Start() string {\n\treturn Listen(8080)\n}\n\nfunc Restart() string {\n\treturn Listen(8080)\n}\n",
    );
    repo.write(
        "server/server_test.go",
        "package server\n\nimport \"testing\"\n\nfunc TestListen(t *testing.T) {\n\tif Listen(80) != \"80\" {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
    );
    repo.commit("base");
    repo.write(
        "server/server.go",
        "package server\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc Listen(host string, port int) string {\n\treturn strings.TrimSpace(fmt.Sprint(host, port))\n}\n\nfunc Version() string {\n\treturn \"1\"\n}\n",
    );
    repo.write(
        "server/cmd.go",
        "package server\n\nfunc Total() int {\n\treturn sum([]int{1, 2})\n}\n\nfunc Start() string {\n\treturn Listen(\"localhost\", 8080)\n}\n\nfunc Restart() string {\n\treturn Listen(\"localhost\", 8080)\n}\n",
    );
    repo.write(
        "server/mathutil.go",
        "package server\n\nfunc sum(values []int) int {\n\ttotal := 0\n\tfor _, v := range values {\n\t\ttotal += v\n\t}\n\treturn total\n}\n",
    );
    repo.write(
        "server/server_test.go",
        "package server\n\nimport \"testing\"\n\nfunc TestListen(t *testing.T) {\n\thost := \"\"\n\tif Listen(host, 80) != \"80\" {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
    );
    let sha = repo.commit("Listen on a host");
    let t = repo.derive(&sha).unwrap();
    assert_edits_rebuild_commit(&t);
    assert_eq!(
        edit_rows(&t),
        vec![
            (
                "e0".into(),
                "server/cmd.go".into(),
                "insert".into(),
                (2, 2),
                (2, 6)
            ),
            (
                "e1".into(),
                "server/cmd.go".into(),
                "replace".into(),
                (3, 4),
                (7, 8)
            ),
            (
                "e2".into(),
                "server/cmd.go".into(),
                "replace".into(),
                (7, 8),
                (11, 12)
            ),
            (
                "e3".into(),
                "server/mathutil.go".into(),
                "insert".into(),
                (0, 0),
                (0, 9)
            ),
            (
                "e4".into(),
                "server/server.go".into(),
                "replace".into(),
                (2, 3),
                (2, 6)
            ),
            (
                "e5".into(),
                "server/server.go".into(),
                "replace".into(),
                (4, 6),
                (7, 9)
            ),
            (
                "e6".into(),
                "server/server.go".into(),
                "delete".into(),
                (11, 19),
                (14, 14)
            ),
            (
                "e7".into(),
                "server/server_test.go".into(),
                "replace".into(),
                (5, 6),
                (5, 7)
            ),
        ]
    );
    assert_eq!(
        edge_rows(&t),
        vec![
            "e0-e3 bi: def_use/sum",
            "e0-e6 bi: def_use/sum",
            "e1-e2 bi: clone/- +\"localhost\" ,",
            "e1-e5 bi: signature_call/Listen",
            "e2-e5 bi: signature_call/Listen",
            "e6-e3 before: move/5 line(s)",
            "e4-e5 bi: import_use/strings",
            "e5-e7 bi: signature_call/Listen",
        ]
    );
    let natural = &t.order.natural;
    let position = |id: &str| natural.iter().position(|e| e == id).unwrap();
    assert!(
        position("e6") < position("e3"),
        "the cut comes before the paste: {natural:?}"
    );
}

#[test]
fn java_def_use_import_signature_clone_test_and_move_edges() {
    let mut repo = TestRepo::new();
    repo.write(
        "src/main/java/shop/Cart.java",
        "package shop;\n\npublic class Cart {\n    private int total;\n\n    public void add(int price) {\n        total += price;\n    }\n}\n",
    );
    repo.write(
        "src/main/java/shop/Main.java",
        "package shop;\n\npublic class Main {\n    public static void main(String[] args) {\n        Cart cart = new Cart();\n        cart.add(5);\n        System.out.println(cart);\n        cart.add(7);\n    }\n}\n",
    );
    repo.write(
        "src/test/java/shop/CartTest.java",
        "package shop;\n\nclass CartTest {\n    void adds() {\n        new Cart().add(3);\n    }\n}\n",
    );
    repo.write(
        "src/main/java/shop/Util.java",
        "package shop;\n\nclass Util {\n    static int one() {\n        return 1;\n    }\n\n    static int twice(int value) {\n        return value * 2;\n    }\n}\n",
    );
    repo.commit("base");
    repo.write(
        "src/main/java/shop/Cart.java",
        "package shop;\n\nimport java.util.ArrayList;\nimport java.util.List;\n\npublic class Cart {\n    private int total;\n    private final List<Integer> quantities = new ArrayList<>();\n\n    public void add(int price, int quantity) {\n        total += price * quantity;\n        quantities.add(quantity);\n    }\n}\n",
    );
    repo.write(
        "src/main/java/shop/Main.java",
        "package shop;\n\npublic class Main {\n    public static void main(String[] args) {\n        System.out.println(Numbers.twice(3));\n        Cart cart = new Cart();\n        cart.add(5, 2);\n        System.out.println(cart);\n        cart.add(7, 2);\n    }\n}\n",
    );
    repo.write(
        "src/main/java/shop/Util.java",
        "package shop;\n\nclass Util {\n    static int one() {\n        return 1;\n    }\n}\n",
    );
    repo.write(
        "src/main/java/shop/Numbers.java",
        "package shop;\n\nclass Numbers {\n    static int twice(int value) {\n        return value * 2;\n    }\n}\n",
    );
    repo.write(
        "src/test/java/shop/CartTest.java",
        "package shop;\n\nclass CartTest {\n    void adds() {\n        int quantity = 1;\n        new Cart().add(3, quantity);\n    }\n}\n",
    );
    let sha = repo.commit("Quantities");
    let t = repo.derive(&sha).unwrap();
    assert_edits_rebuild_commit(&t);
    assert_eq!(
        edit_rows(&t),
        vec![
            (
                "e0".into(),
                "src/main/java/shop/Cart.java".into(),
                "insert".into(),
                (2, 2),
                (2, 5)
            ),
            (
                "e1".into(),
                "src/main/java/shop/Cart.java".into(),
                "insert".into(),
                (4, 4),
                (7, 8)
            ),
            (
                "e2".into(),
                "src/main/java/shop/Cart.java".into(),
                "replace".into(),
                (5, 7),
                (9, 12)
            ),
            (
                "e3".into(),
                "src/main/java/shop/Main.java".into(),
                "insert".into(),
                (4, 4),
                (4, 5)
            ),
            (
                "e4".into(),
                "src/main/java/shop/Main.java".into(),
                "replace".into(),
                (5, 6),
                (6, 7)
            ),
            (
                "e5".into(),
                "src/main/java/shop/Main.java".into(),
                "replace".into(),
                (7, 8),
                (8, 9)
            ),
            (
                "e6".into(),
                "src/main/java/shop/Numbers.java".into(),
                "insert".into(),
                (0, 0),
                (0, 7)
            ),
            (
                "e7".into(),
                "src/main/java/shop/Util.java".into(),
                "delete".into(),
                (6, 10),
                (6, 6)
            ),
            (
                "e8".into(),
                "src/test/java/shop/CartTest.java".into(),
                "replace".into(),
                (4, 5),
                (4, 6)
            ),
        ]
    );
    assert_eq!(
        edge_rows(&t),
        vec![
            "e0-e1 bi: import_use/ArrayList, import_use/List",
            "e1-e2 bi: def_use/quantities",
            "e2-e4 bi: signature_call/add",
            "e2-e5 bi: signature_call/add",
            "e2-e8 bi: signature_call/add",
            "e3-e6 bi: def_use/Numbers, def_use/twice",
            "e3-e7 bi: def_use/twice",
            "e4-e5 bi: clone/- +, 2",
            "e7-e6 before: move/2 line(s)",
        ]
    );
    let natural = &t.order.natural;
    let position = |id: &str| natural.iter().position(|e| e == id).unwrap();
    assert!(
        position("e7") < position("e6"),
        "the cut comes before the paste: {natural:?}"
    );
}

/// Scope-aware resolution: `cls(...)` constructs its class, a bare name never
/// reaches a method of another class or file, keyword arguments reach the changed
/// parameter and the body that reads it, and a docstring names a new parameter.
#[test]
fn python_scopes_constructors_arguments_and_docstrings() {
    let mut repo = TestRepo::new();
    repo.write(
        "app/shapes.py",
        "class Shape:\n    def __init__(self, size):\n        self.size = size\n\n    @classmethod\n    def unit(cls):\n        return cls(1)\n\n    def describe(self):\n        return \"shape\"\n\n\ndef scale(value, factor):\n    \"\"\"Scale a value.\n\n    Multiplies by factor.\n    \"\"\"\n    return value * factor\n",
    );
    repo.write(
        "app/report.py",
        "from app.shapes import scale\n\n\ndef render(shape):\n    return describe(shape)\n\n\ndef total():\n    return scale(3, 2)\n",
    );
    repo.commit("base");
    repo.write(
        "app/shapes.py",
        "class Shape:\n    def __init__(self, size, color):\n        self.size = size\n\n    @classmethod\n    def unit(cls):\n        return cls(2)\n\n    def describe(self, verbose):\n        return \"shape\"\n\n\ndef scale(value, factor, offset):\n    \"\"\"Scale a value.\n\n    Multiplies by factor, then adds offset.\n    \"\"\"\n    return value * factor + offset\n",
    );
    repo.write(
        "app/report.py",
        "from app.shapes import scale\n\n\ndef render(shape):\n    return describe(shape) + \"!\"\n\n\ndef total():\n    return scale(3, 2,\n                 offset=1)\n",
    );
    let sha = repo.commit("Colour, verbosity and offset");
    let t = repo.derive(&sha).unwrap();
    assert_edits_rebuild_commit(&t);
    let rows: Vec<(String, (usize, usize))> = edit_rows(&t)
        .into_iter()
        .map(|(id, path, _, _, after)| (format!("{id} {path}"), after))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("e0 app/report.py".to_string(), (4, 5)),
            ("e1 app/report.py".to_string(), (8, 10)),
            ("e2 app/shapes.py".to_string(), (1, 2)),
            ("e3 app/shapes.py".to_string(), (6, 7)),
            ("e4 app/shapes.py".to_string(), (8, 9)),
            ("e5 app/shapes.py".to_string(), (12, 13)),
            ("e6 app/shapes.py".to_string(), (15, 16)),
            ("e7 app/shapes.py".to_string(), (17, 18)),
        ]
    );
    // The bare `describe(shape)` in report.py (e0) is no call of the method whose
    // signature e4 changed; `cls(2)` (e3) calls Shape's changed constructor (e2);
    // `offset=1` (e1) links to the parameter (e5) and the body reading it (e7); the
    // docstring (e6) names the new parameter.
    assert_eq!(
        edge_rows(&t),
        vec![
            "e1-e5 bi: signature_call/scale, argument_parameter/scale(offset)",
            "e1-e7 bi: argument_parameter/scale(+offset), argument_parameter/scale(offset)",
            "e2-e3 bi: signature_call/Shape",
            "e5-e6 bi: doc_impl/offset",
            "e5-e7 bi: def_use/factor, def_use/offset, def_use/value",
            "e6-e7 bi: doc_impl/offset",
        ]
    );
}
