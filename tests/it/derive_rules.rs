//! Edit-order rules that must hold on commits nobody tuned them on: names resolved
//! through what a file can see (imports, aliases, packages, shadowing), a call given
//! a new argument, pytest fixtures and attributes named by strings. Each test commits
//! a real git repository and derives the commit.

use crate::derive_support;

use derive_support::{TestRepo, assert_edits_rebuild_commit, edge_rows};

/// Commits `before`, then `after` (files written over it), derives the second commit
/// and checks which file each edit is in and every edge.
fn check(before: &[(&str, &str)], after: &[(&str, &str)], edits: &[&str], edges: &[&str]) {
    let mut repo = TestRepo::new();
    for (path, text) in before {
        repo.write(path, text);
    }
    repo.commit("base");
    for (path, text) in after {
        repo.write(path, text);
    }
    let sha = repo.commit("change");
    let t = repo.derive(&sha).unwrap();
    assert_edits_rebuild_commit(&t);
    let files: Vec<String> = t
        .edits
        .iter()
        .map(|e| format!("{} {}", e.id, e.file))
        .collect();
    assert_eq!(files, edits);
    assert_eq!(edge_rows(&t), edges);
}

/// `load` changes in `pkg/a.py`; `pkg/b.py` has a `load` of its own. Only the calls
/// that can see a.py's `load` (an aliased relative import, `import pkg.a` +
/// `pkg.a.load`, a star import) link to it, and to the body that reads the new
/// parameter, since each passes one more argument; the call through
/// `from pkg.b import load` and the call of a parameter named `load` do not.
#[test]
fn python_uses_reach_only_the_definitions_their_file_can_see() {
    let load = "def load(path):\n    \"\"\"Load a file.\"\"\"\n    return path\n";
    check(
        &[
            ("pkg/a.py", load),
            ("pkg/b.py", load),
            (
                "pkg/c.py",
                "from pkg.b import load\n\n\ndef run():\n    first = load(1)\n",
            ),
            (
                "pkg/d.py",
                "from .a import load as fetch\n\n\ndef run(paths):\n    return [fetch(p) for p in paths]\n",
            ),
            (
                "pkg/e.py",
                "import pkg.a\n\n\ndef run(name):\n    print(pkg.a.load(name))\n",
            ),
            (
                "pkg/f.py",
                "from pkg.a import *\n\n\ndef run(x):\n    total += load(x)\n",
            ),
            (
                "pkg/g.py",
                "def run(load, limit):\n    return load(limit)\n",
            ),
        ],
        &[
            (
                "pkg/a.py",
                "def load(path, mode):\n    \"\"\"Load a file.\"\"\"\n    return open(path, mode)\n",
            ),
            (
                "pkg/c.py",
                "from pkg.b import load\n\n\ndef run():\n    first = load(1, \"text\")\n",
            ),
            (
                "pkg/d.py",
                "from .a import load as fetch\n\n\ndef run(paths):\n    return [fetch(p, \"rb\") for p in paths]\n",
            ),
            (
                "pkg/e.py",
                "import pkg.a\n\n\ndef run(name):\n    print(pkg.a.load(name, \"r\"))\n",
            ),
            (
                "pkg/f.py",
                "from pkg.a import *\n\n\ndef run(x):\n    total += load(x, \"w\")\n",
            ),
            (
                "pkg/g.py",
                "def run(load, limit):\n    return load(limit, \"ab\")\n",
            ),
        ],
        &[
            "e0 pkg/a.py",
            "e1 pkg/a.py",
            "e2 pkg/c.py",
            "e3 pkg/d.py",
            "e4 pkg/e.py",
            "e5 pkg/f.py",
            "e6 pkg/g.py",
        ],
        &[
            "e0-e1 bi: def_use/mode, def_use/path",
            "e0-e3 bi: signature_call/load",
            "e0-e4 bi: signature_call/load",
            "e0-e5 bi: signature_call/load",
            "e1-e3 bi: argument_parameter/load(+mode)",
            "e1-e4 bi: argument_parameter/load(+mode)",
            "e1-e5 bi: argument_parameter/load(+mode)",
        ],
    );
}

/// Go: `Run` changes in package `a`. A bare `Run` reaches it from its own package
/// (directory) only, and `x.Run` only when `x` imports a path ending in `a`: not
/// package `b`'s own `Run`, nor package `b` imported under the alias `a`.
#[test]
fn go_uses_reach_their_package_or_an_import_of_it() {
    check(
        &[
            (
                "a/run.go",
                "package a\n\nfunc Run(n int) int {\n\treturn n\n}\n",
            ),
            (
                "a/use.go",
                "package a\n\nfunc Twice() int {\n\treturn Run(2) * 2\n}\n",
            ),
            (
                "b/run.go",
                "package b\n\nfunc Run(s string) string {\n\treturn s\n}\n\nfunc Call() string {\n\treturn Run(\"x\")\n}\n",
            ),
            (
                "c/main.go",
                "package main\n\nimport \"example.com/m/a\"\n\nfunc main() {\n\tprintln(a.Run(3))\n}\n",
            ),
            (
                "d/main.go",
                "package main\n\nimport a \"example.com/m/b\"\n\nfunc main() {\n\tprintln(a.Run(\"y\"))\n}\n",
            ),
        ],
        &[
            (
                "a/run.go",
                "package a\n\nfunc Run(n int, m int) int {\n\treturn n * m\n}\n",
            ),
            (
                "a/use.go",
                "package a\n\nfunc Twice() int {\n\treturn Run(2, 1) * 2\n}\n",
            ),
            (
                "b/run.go",
                "package b\n\nfunc Run(s string) string {\n\treturn s\n}\n\nfunc Call() string {\n\treturn Run(\"x\") + \"!\"\n}\n",
            ),
            (
                "c/main.go",
                "package main\n\nimport \"example.com/m/a\"\n\nfunc main() {\n\tprintln(a.Run(3, 4))\n}\n",
            ),
            (
                "d/main.go",
                "package main\n\nimport a \"example.com/m/b\"\n\nfunc main() {\n\tprintln(a.Run(\"y\") + a.Run(\"z\"))\n}\n",
            ),
        ],
        &[
            "e0 a/run.go",
            "e1 a/use.go",
            "e2 b/run.go",
            "e3 c/main.go",
            "e4 d/main.go",
        ],
        &[
            "e0-e1 bi: signature_call/Run",
            "e0-e3 bi: signature_call/Run",
        ],
    );
}

/// A fixture added to `tests/conftest.py` and the tests that start taking it: pytest
/// binds the parameter by name, for tests under `tests/` only.
#[test]
fn pytest_fixtures_bind_test_parameters_by_name() {
    check(
        &[
            (
                "tests/conftest.py",
                "import pytest\n\n\n@pytest.fixture\ndef client():\n    return 1\n",
            ),
            (
                "tests/api/test_users.py",
                "def test_list(client):\n    assert client\n",
            ),
            ("other/test_jobs.py", "def test_jobs(client):\n    pass\n"),
        ],
        &[
            (
                "tests/conftest.py",
                "import pytest\n\n\n@pytest.fixture\ndef client():\n    return 1\n\n\n@pytest.fixture\ndef db():\n    return {}\n",
            ),
            (
                "tests/api/test_users.py",
                "def test_list(client, db):\n    assert client\n",
            ),
            (
                "other/test_jobs.py",
                "def test_jobs(client, db):\n    pass\n",
            ),
        ],
        &[
            "e0 other/test_jobs.py",
            "e1 tests/api/test_users.py",
            "e2 tests/conftest.py",
        ],
        // The two tests add the same parameter: a clone, whatever the fixture.
        &["e0-e1 bi: clone/- +, db", "e1-e2 bi: fixture/db"],
    );
}

/// `getattr(settings, "verbose")` reads the attribute a constructor starts setting.
#[test]
fn getattr_strings_name_attributes() {
    check(
        &[
            (
                "app/config.py",
                "class Settings:\n    def __init__(self):\n        self.debug = False\n",
            ),
            ("app/run.py", "def main(settings):\n    return settings\n"),
        ],
        &[
            (
                "app/config.py",
                "class Settings:\n    def __init__(self):\n        self.debug = False\n        self.verbose = True\n",
            ),
            (
                "app/run.py",
                "def main(settings):\n    return getattr(settings, \"verbose\", False)\n",
            ),
        ],
        &["e0 app/config.py", "e1 app/run.py"],
        &["e0-e1 bi: def_use/verbose"],
    );
}

/// `self.describe()` reaches the enclosing class's (or a base's) `describe`, never an
/// unrelated class's; `super().__init__(…)` reaches the base's constructor only.
#[test]
fn python_self_and_super_reach_their_class_hierarchy() {
    check(
        &[
            (
                "app/cart.py",
                "class Cart:\n    def __init__(self, items):\n        self.items = items\n\n    def describe(self):\n        return \"cart\"\n\n    def show(self):\n        return self.describe()\n",
            ),
            (
                "app/shapes.py",
                "class Shape:\n    def __init__(self, size):\n        self.size = size\n\n    def describe(self):\n        return \"shape\"\n\n\nclass Square(Shape):\n    def __init__(self, size):\n        super().__init__(size)\n\n    def show(self):\n        return self.describe()\n",
            ),
        ],
        &[
            (
                "app/cart.py",
                "class Cart:\n    def __init__(self, items, owner=None, *, limit=3):\n        self.items = items\n\n    def describe(self):\n        return \"cart\"\n\n    def show(self):\n        return self.describe().upper()\n",
            ),
            (
                "app/shapes.py",
                "class Shape:\n    def __init__(self, size, color):\n        self.size = size\n\n    def describe(self, verbose=False):\n        return \"shape\"\n\n\nclass Square(Shape):\n    def __init__(self, size):\n        super().__init__(size, \"red\")\n\n    def show(self):\n        return self.describe() + \"!\"\n",
            ),
        ],
        &[
            "e0 app/cart.py",
            "e1 app/cart.py",
            "e2 app/shapes.py",
            "e3 app/shapes.py",
            "e4 app/shapes.py",
            "e5 app/shapes.py",
        ],
        // Not e0 (Cart's constructor) with e4, nor e3 (Shape's describe) with e1.
        &[
            "e2-e4 bi: signature_call/__init__",
            "e3-e5 bi: signature_call/describe",
        ],
    );
}

/// Go: `server.Server{Name: "a", Port: 80}` sets the field `Port` that the struct gains.
#[test]
fn go_struct_literal_keys_name_fields() {
    check(
        &[
            (
                "server/server.go",
                "package server\n\ntype Server struct {\n\tName string\n}\n",
            ),
            (
                "cmd/main.go",
                "package main\n\nimport \"example.com/m/server\"\n\nfunc main() {\n\ts := server.Server{Name: \"a\"}\n\tprintln(s.Name)\n}\n",
            ),
        ],
        &[
            (
                "server/server.go",
                "package server\n\ntype Server struct {\n\tName string\n\tPort int\n}\n",
            ),
            (
                "cmd/main.go",
                "package main\n\nimport \"example.com/m/server\"\n\nfunc main() {\n\ts := server.Server{Name: \"a\", Port: 80}\n\tprintln(s.Name)\n}\n",
            ),
        ],
        &["e0 cmd/main.go", "e1 server/server.go"],
        &["e0-e1 bi: def_use/Server(Port)"],
    );
}

/// A docstring entry for a new parameter goes with the signature that adds it and the
/// body that reads it; a module docstring naming a new public function goes with its
/// definition.
#[test]
fn docstrings_name_new_parameters_and_functions() {
    check(
        &[(
            "net/client.py",
            "\"\"\"HTTP helpers: get.\"\"\"\n\n\ndef get(url):\n    \"\"\"Fetch a page.\n\n    :param url: the address\n    \"\"\"\n    session = open_session()\n    return session.get(url)\n\n\ndef other():\n    return 1\n",
        )],
        &[(
            "net/client.py",
            "\"\"\"HTTP helpers: get, fetch_all.\"\"\"\n\n\ndef get(url, timeout):\n    \"\"\"Fetch a page.\n\n    :param url: the address\n    :param timeout: seconds to wait\n    \"\"\"\n    session = open_session()\n    return session.get(url, timeout=timeout)\n\n\ndef other():\n    return 1\n\n\ndef fetch_all(urls):\n    return [get(u, 5) for u in urls]\n",
        )],
        &[
            "e0 net/client.py",
            "e1 net/client.py",
            "e2 net/client.py",
            "e3 net/client.py",
            "e4 net/client.py",
        ],
        // `session.get(url, timeout=timeout)` is no call of this `get`: e1-e3 is the
        // parameter read, not an argument passed to it.
        &[
            "e0-e4 bi: doc_impl/fetch_all",
            "e1-e2 bi: doc_impl/timeout",
            "e1-e3 bi: def_use/timeout, def_use/url",
            "e1-e4 bi: signature_call/get",
            "e2-e3 bi: doc_impl/timeout",
        ],
    );
}

/// A test that starts calling a function its implementation file adds (test_impl);
/// the test's own local `side` ties it to nothing.
#[test]
fn tests_link_to_the_implementation_they_start_exercising() {
    check(
        &[
            ("pkg/shapes.py", "def area(r):\n    return r * r\n"),
            (
                "tests/test_shapes.py",
                "from pkg.shapes import area\n\n\ndef test_area():\n    assert area(2) == 4\n",
            ),
        ],
        &[
            (
                "pkg/shapes.py",
                "def area(r):\n    return r * r\n\n\ndef perimeter(side):\n    return 4 * side\n",
            ),
            (
                "tests/test_shapes.py",
                "from pkg.shapes import area, perimeter\n\n\ndef test_area():\n    assert area(2) == 4\n\n\ndef test_perimeter():\n    side = 2\n    assert perimeter(side) == 8\n",
            ),
        ],
        &[
            "e0 pkg/shapes.py",
            "e1 tests/test_shapes.py",
            "e2 tests/test_shapes.py",
        ],
        &[
            "e0-e1 bi: def_import/perimeter, test_impl/perimeter",
            "e0-e2 bi: def_use/perimeter, test_impl/perimeter, test_name/test_perimeter",
            "e1-e2 bi: import_use/perimeter",
        ],
    );
}

/// Java: `Cart`'s constructor changes in package `shop`. `new Cart(…)` reaches it from
/// `shop` and through `import shop.Cart`, not from package `other`, which has a `Cart`
/// of its own.
#[test]
fn java_types_reach_their_package_or_an_import_of_them() {
    let cart = |package: &str, parameters: &str| {
        format!(
            "package {package};\n\npublic class Cart {{\n    public Cart({parameters}) {{\n    }}\n}}\n"
        )
    };
    let user = |package: &str, import: &str, arguments: &str| {
        format!(
            "package {package};\n{import}\nclass Use {{\n    Object make() {{\n        return new Cart({arguments});\n    }}\n}}\n"
        )
    };
    let before = [
        ("src/main/java/shop/Cart.java", cart("shop", "int n")),
        ("src/main/java/shop/Use.java", user("shop", "", "1")),
        ("src/main/java/other/Cart.java", cart("other", "int n")),
        ("src/main/java/other/Use.java", user("other", "", "3")),
        (
            "src/main/java/app/Use.java",
            user("app", "import shop.Cart;\n", "5"),
        ),
    ];
    let after = [
        ("src/main/java/shop/Cart.java", cart("shop", "int n, int m")),
        ("src/main/java/shop/Use.java", user("shop", "", "1, 2")),
        ("src/main/java/other/Use.java", user("other", "", "3, 4")),
        (
            "src/main/java/app/Use.java",
            user("app", "import shop.Cart;\n", "5, 6"),
        ),
    ];
    let before: Vec<(&str, &str)> = before.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let after: Vec<(&str, &str)> = after.iter().map(|(p, t)| (*p, t.as_str())).collect();
    check(
        &before,
        &after,
        &[
            "e0 src/main/java/app/Use.java",
            "e1 src/main/java/other/Use.java",
            "e2 src/main/java/shop/Cart.java",
            "e3 src/main/java/shop/Use.java",
        ],
        // Not e1: package `other`'s `new Cart(3, 4)` is its own Cart.
        &[
            "e0-e2 bi: signature_call/Cart",
            "e2-e3 bi: signature_call/Cart",
        ],
    );
}

/// `json.dumps(…)` calls an attribute of a module, never the method `dumps` that a
/// class of the commit changes; `Codec().dumps(…)` may be that method.
#[test]
fn a_module_attribute_is_no_class_member() {
    check(
        &[
            (
                "app/codec.py",
                "class Codec:\n    def dumps(self, value):\n        return str(value)\n",
            ),
            (
                "app/io.py",
                "import json\n\n\ndef save(value):\n    return json.dumps(value)\n",
            ),
            (
                "app/other.py",
                "from app.codec import Codec\n\n\ndef encode(value):\n    return Codec().dumps(value)\n",
            ),
        ],
        &[
            (
                "app/codec.py",
                "class Codec:\n    def dumps(self, value, indent=0):\n        return str(value)\n",
            ),
            (
                "app/io.py",
                "import json\n\n\ndef save(value):\n    return json.dumps(value, indent=2)\n",
            ),
            (
                "app/other.py",
                "from app.codec import Codec\n\n\ndef encode(value):\n    return Codec().dumps(value, 4)\n",
            ),
        ],
        &["e0 app/codec.py", "e1 app/io.py", "e2 app/other.py"],
        &["e0-e2 bi: signature_call/dumps"],
    );
}

/// A package exports a new function: the definition, its import into the package and
/// its name in `__all__` are one change.
#[test]
fn dunder_all_exports_a_name() {
    check(
        &[
            (
                "pkg/__init__.py",
                "from .a import load\n\n__all__ = [\"load\"]\n",
            ),
            ("pkg/a.py", "def load():\n    return 1\n"),
        ],
        &[
            (
                "pkg/__init__.py",
                "from .a import load, save\n\n__all__ = [\"load\", \"save\"]\n",
            ),
            (
                "pkg/a.py",
                "def load():\n    return 1\n\n\ndef save():\n    return 2\n",
            ),
        ],
        &["e0 pkg/__init__.py", "e1 pkg/__init__.py", "e2 pkg/a.py"],
        &[
            "e0-e1 bi: import_use/save",
            "e0-e2 bi: def_import/save",
            "e1-e2 bi: def_use/save",
        ],
    );
}

/// A dataclass gains a field: the constructor calls that pass it by name, `Point(…)`
/// and `cls(…)` in a classmethod, go with it.
#[test]
fn dataclass_fields_and_constructor_keywords() {
    let point = |field: &str, call: &str| {
        format!(
            "from dataclasses import dataclass\n\n\n@dataclass\nclass Point:\n    x: int\n    y: int\n{field}\n    @classmethod\n    def origin(cls):\n        return cls({call})\n"
        )
    };
    let before = point("", "x=0, y=0");
    let after = point("    z: int = 0\n", "x=0, y=0, z=0");
    check(
        &[
            ("app/point.py", &before),
            (
                "app/use.py",
                "from app.point import Point\n\n\ndef make():\n    return Point(x=1, y=2)\n",
            ),
        ],
        &[
            ("app/point.py", &after),
            (
                "app/use.py",
                "from app.point import Point\n\n\ndef make():\n    return Point(x=1, y=2, z=3)\n",
            ),
        ],
        &["e0 app/point.py", "e1 app/point.py", "e2 app/use.py"],
        // The keyword `z` is no reference to the field: only the member rule links it.
        &[
            "e0-e1 bi: def_use/Point(z), argument_parameter/Point(+z)",
            "e0-e2 bi: def_use/Point(z), argument_parameter/Point(+z)",
        ],
    );
}

/// A `NamedTuple` gains a field: a call that passes one more positional argument goes
/// with it; a call of another module's `Pair` does not.
#[test]
fn record_fields_are_new_constructor_arguments() {
    check(
        &[
            (
                "geo/pair.py",
                "from typing import NamedTuple\n\n\nclass Pair(NamedTuple):\n    left: int\n    right: int\n",
            ),
            (
                "geo/use.py",
                "from geo.pair import Pair\n\n\ndef make():\n    return Pair(1, 2)\n",
            ),
            (
                "geo/other.py",
                "from cards.pair import Pair\n\n\ndef deal():\n    return Pair(\"a\", \"b\")\n",
            ),
        ],
        &[
            (
                "geo/pair.py",
                "from typing import NamedTuple\n\n\nclass Pair(NamedTuple):\n    left: int\n    right: int\n    weight: float = 1.0\n",
            ),
            (
                "geo/use.py",
                "from geo.pair import Pair\n\n\ndef make():\n    return Pair(1, 2, 0.5)\n",
            ),
            (
                "geo/other.py",
                "from cards.pair import Pair\n\n\ndef deal():\n    return Pair(\"a\", \"b\", \"c\")\n",
            ),
        ],
        &["e0 geo/other.py", "e1 geo/pair.py", "e2 geo/use.py"],
        &["e1-e2 bi: argument_parameter/Pair(+weight)"],
    );
}

/// `@pytest.mark.parametrize("mode, size", …)` names parameters pytest passes to the
/// test it decorates: the decorator and the signature that takes them are one change.
#[test]
fn pytest_parametrize_names_bind_test_parameters() {
    check(
        &[(
            "tests/test_io.py",
            "import pytest\n\n\n@pytest.mark.slow\ndef test_write(tmp_path):\n    assert tmp_path\n    print(tmp_path)\n",
        )],
        &[(
            "tests/test_io.py",
            "import pytest\n\n\n@pytest.mark.parametrize(\"mode, size\", [(\"w\", 1), (\"a\", 2)])\n@pytest.mark.slow\ndef test_write(tmp_path, mode, size):\n    assert tmp_path\n    print(tmp_path, mode * size)\n",
        )],
        &[
            "e0 tests/test_io.py",
            "e1 tests/test_io.py",
            "e2 tests/test_io.py",
        ],
        &[
            "e0-e1 bi: fixture/mode, fixture/size",
            "e1-e2 bi: def_use/mode, def_use/size, def_use/tmp_path",
        ],
    );
}

/// `test_name`: a test is linked to the edit its name says it tests — the longest
/// word prefix of `test_<subject>_<case>` (or `Test<Subject>`, Go's
/// `Test<Subject><Case>`) that an implementation edit defines, changes the body of, or
/// (two words or more) names on its lines. `test_provide_automatic_options_enable`
/// reaches the body edit of `add_url_rule` that handles `provide_automatic_options`;
/// `class TestFlaskClient` the method added to `FlaskClient`; Go's `TestParseHeaderEmpty` the
/// new `ParseHeader`. Not linked: `test_get_value` (a one-word subject shorter than 4
/// letters), `test_add_muted_user` (the run `muted_user` is not its prefix).
#[test]
fn tests_are_linked_to_what_their_names_say_they_test() {
    let app = "class App:\n    def add_url_rule(self, rule, provide_automatic_options=None):\n        if provide_automatic_options is None:\n            provide_automatic_options = False\n        self.rules.append(rule)\n\n\ndef get(key):\n    return key\n\n\ndef mute(muted_user):\n    return muted_user\n";
    let app_after = "class App:\n    def add_url_rule(self, rule, provide_automatic_options=None):\n        if provide_automatic_options is None:\n            provide_automatic_options = \"OPTIONS\" not in rule\n        self.rules.append(rule)\n\n\ndef get(key):\n    return key.strip()\n\n\ndef mute(muted_user):\n    return [muted_user]\n";
    let client = "class FlaskClient:\n    def open(self, path):\n        return path\n";
    let client_after = "class FlaskClient:\n    def open(self, path):\n        return path\n\n    def options(self, path):\n        return path\n";
    let tests = "def test_provide_automatic_options_disable(app):\n    assert app\n\n\nclass TestFlaskClient:\n    def test_open(self, client):\n        assert client\n\n\ndef test_get_value():\n    assert True\n\n\ndef test_add_muted_user(app):\n    assert app\n";
    let tests_after = "def test_provide_automatic_options_disable(app):\n    assert app\n\n\ndef test_provide_automatic_options_enable(app):\n    assert app.rules\n\n\nclass TestFlaskClient:\n    def test_open(self, client):\n        assert client.open(\"/\")\n\n\ndef test_get_value():\n    assert not False\n\n\ndef test_add_muted_user(app):\n    assert app.muted\n";
    let header = "package web\n\nfunc Split(s string) []string {\n\treturn nil\n}\n";
    let header_after = "package web\n\nfunc Split(s string) []string {\n\treturn nil\n}\n\nfunc ParseHeader(s string) string {\n\treturn s\n}\n";
    let header_test = "package web\n\nimport \"testing\"\n\nfunc TestSplit(t *testing.T) {\n}\n";
    let header_test_after = "package web\n\nimport \"testing\"\n\nfunc TestSplit(t *testing.T) {\n}\n\nfunc TestParseHeaderEmpty(t *testing.T) {\n\tif got := Parse(\"\"); got != \"\" {\n\t\tt.Fatal(got)\n\t}\n}\n";
    check(
        &[
            ("flask/app.py", app),
            ("flask/testing.py", client),
            ("tests/test_basic.py", tests),
            ("web/header.go", header),
            ("web/header_test.go", header_test),
        ],
        &[
            ("flask/app.py", app_after),
            ("flask/testing.py", client_after),
            ("tests/test_basic.py", tests_after),
            ("web/header.go", header_after),
            ("web/header_test.go", header_test_after),
        ],
        &[
            "e0 flask/app.py",
            "e1 flask/app.py",
            "e2 flask/app.py",
            "e3 flask/testing.py",
            "e4 tests/test_basic.py",
            "e5 tests/test_basic.py",
            "e6 tests/test_basic.py",
            "e7 tests/test_basic.py",
            "e8 web/header.go",
            "e9 web/header_test.go",
        ],
        &[
            "e0-e4 bi: test_name/test_provide_automatic_options_enable",
            "e3-e5 bi: test_name/TestFlaskClient",
            "e8-e9 bi: test_name/TestParseHeaderEmpty",
        ],
    );
}

/// `test_id`: a test's fixture or a new string naming a definition an implementation
/// edit changes — a parametrized id, `monkeypatch.setattr("pkg.headers.parse_header",
/// …)`, a fixture `flask_client_factory` for the class `FlaskClient`. A string the
/// implementation does not define (`"parse_body"`) links nothing.
#[test]
fn fixtures_and_strings_of_tests_name_what_they_test() {
    check(
        &[
            (
                "pkg/headers.py",
                "def split(text):\n    return text.split()\n",
            ),
            ("pkg/client.py", "class FlaskClient:\n    pass\n"),
            ("tests/conftest.py", "import pytest\n"),
            (
                "tests/test_api.py",
                "import pytest\n\n\ndef test_split():\n    assert True\n",
            ),
        ],
        &[
            (
                "pkg/headers.py",
                "def split(text):\n    return text.split()\n\n\ndef parse_header(text):\n    return text.strip()\n",
            ),
            (
                "pkg/client.py",
                "class FlaskClient:\n    def __init__(self, app):\n        self.app = app\n",
            ),
            (
                "tests/conftest.py",
                "import pytest\n\n\n@pytest.fixture\ndef flask_client_factory():\n    return None\n",
            ),
            (
                "tests/test_api.py",
                "import pytest\n\n\ndef test_split():\n    assert True\n\n\n@pytest.mark.parametrize(\"name\", [\"parse_header\", \"parse_body\"])\ndef test_exported(name):\n    assert name\n\n\ndef test_patched(monkeypatch):\n    monkeypatch.setattr(\"pkg.headers.parse_header\", len)\n",
            ),
        ],
        &[
            "e0 pkg/client.py",
            "e1 pkg/headers.py",
            "e2 tests/conftest.py",
            "e3 tests/test_api.py",
        ],
        &[
            "e0-e2 bi: test_id/flask_client_factory",
            "e1-e3 bi: test_id/parse_header",
        ],
    );
}

/// `test_assert`: an implementation edit introduces a value (an error message, a
/// default) and a test edit asserts on the same value. A key-shaped string
/// (`"max_port"`) and a small constant (`1`) are not values that tie two edits.
#[test]
fn a_test_asserting_a_new_value_is_linked_to_the_edit_that_introduces_it() {
    check(
        &[
            (
                "net/config.py",
                "TIMEOUT = 30\n\n\ndef check(port):\n    if port < 0:\n        raise ValueError(\"bad port\")\n    return port\n",
            ),
            (
                "tests/test_config.py",
                "from net.config import TIMEOUT, check\n\n\ndef test_timeout():\n    assert TIMEOUT\n\n\ndef test_check():\n    assert check(1)\n",
            ),
        ],
        &[
            (
                "net/config.py",
                "TIMEOUT = 45\n\n\ndef check(port):\n    if port < 1:\n        raise ValueError(\"port must be positive\", \"max_port\")\n    return port\n",
            ),
            (
                "tests/test_config.py",
                "from net.config import TIMEOUT, check\n\n\ndef test_timeout():\n    assert TIMEOUT == 45\n\n\ndef test_check():\n    assert check(1)\n    with pytest.raises(ValueError, match=\"port must be positive\"):\n        check(-1)\n    assert \"max_port\" and 1\n",
            ),
        ],
        &[
            "e0 net/config.py",
            "e1 net/config.py",
            "e2 tests/test_config.py",
            "e3 tests/test_config.py",
        ],
        &[
            "e0-e2 bi: test_assert/45",
            "e1-e3 bi: def_use/\"max_port\", test_name/test_check, test_assert/\"port must be positive\"",
        ],
    );
}

/// JavaScript, as Python: `load` changes in `lib/a.js`; `lib/b.js` has a `load` of its
/// own. The calls that can see a.js's `load` (a named import under an alias, a
/// namespace import + `a.load`, a destructured `require`, a whole `require` +
/// `a.load`, a directory import whose index re-exports it) link to it; the call
/// through `import {load} from './b'` and the call of a parameter named `load` do not.
#[test]
fn javascript_uses_reach_only_the_definitions_their_file_can_see() {
    let load = "export function load(path) {\n  return path;\n}\n";
    // Each call gains an argument of its own (the same one everywhere would be a clone).
    let files = |args: [&str; 7]| {
        [
            (
                "lib/c.js".to_string(),
                format!(
                    "import {{ load }} from './b';\n\nexport function run() {{\n  return load(1{});\n}}\n",
                    args[0]
                ),
            ),
            (
                "lib/d.js".to_string(),
                format!(
                    "import {{ load as fetch }} from './a.js';\n\nexport function run(paths) {{\n  return paths.map((p) => fetch(p{}));\n}}\n",
                    args[1]
                ),
            ),
            (
                "lib/e.js".to_string(),
                format!(
                    "import * as a from './a';\n\nexport function run(name) {{\n  return a.load(name{});\n}}\n",
                    args[2]
                ),
            ),
            (
                "app/f.js".to_string(),
                format!(
                    "const {{ load }} = require('../lib/a');\n\nfunction run(x) {{\n  return load(x{});\n}}\n",
                    args[3]
                ),
            ),
            (
                "app/g.js".to_string(),
                format!(
                    "const a = require('../lib/a');\n\nfunction run(x) {{\n  return a.load(x{});\n}}\n",
                    args[4]
                ),
            ),
            (
                "app/h.js".to_string(),
                format!(
                    "function run(load, limit) {{\n  return load(limit{});\n}}\n",
                    args[5]
                ),
            ),
            (
                "app/i.js".to_string(),
                format!(
                    "import {{ load }} from '../lib';\n\nexport function run(x) {{\n  return load(x{});\n}}\n",
                    args[6]
                ),
            ),
        ]
    };
    let before = files([""; 7]);
    let after = files([", 1", ", true", ", 'x'", ", []", ", {}", ", null", ", 0.5"]);
    let mut base: Vec<(&str, &str)> = vec![
        ("lib/a.js", load),
        ("lib/b.js", load),
        ("lib/index.js", "export { load } from './a';\n"),
    ];
    base.extend(before.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let mut change: Vec<(&str, &str)> = vec![(
        "lib/a.js",
        "export function load(path, mode) {\n  return [path, mode];\n}\n",
    )];
    change.extend(after.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    check(
        &base,
        &change,
        &[
            "e0 app/f.js",
            "e1 app/g.js",
            "e2 app/h.js",
            "e3 app/i.js",
            "e4 lib/a.js",
            "e5 lib/c.js",
            "e6 lib/d.js",
            "e7 lib/e.js",
        ],
        &[
            "e0-e4 bi: signature_call/load",
            "e1-e4 bi: signature_call/load",
            "e3-e4 bi: signature_call/load",
            "e4-e6 bi: signature_call/load",
            "e4-e7 bi: signature_call/load",
        ],
    );
}

/// TypeScript: a changed interface field and function reach the files that import
/// them (`import type`, a named import) and not a file importing another module's
/// same-named ones.
#[test]
fn typescript_uses_reach_only_the_definitions_their_file_can_see() {
    check(
        &[
            (
                "src/model.ts",
                "export interface Item {\n  id: number;\n}\n\nexport function price(item: Item): number {\n  return item.id;\n}\n",
            ),
            (
                "src/legacy.ts",
                "export function price(n: number): number {\n  return n;\n}\n",
            ),
            (
                "src/cart.ts",
                "import { price, type Item } from './model';\n\nexport function total(items: Item[]): number {\n  return items.map((i) => price(i)).length;\n}\n",
            ),
            (
                "src/old.ts",
                "import { price } from './legacy';\n\nexport function total(n: number): number {\n  return price(n);\n}\n",
            ),
        ],
        &[
            (
                "src/model.ts",
                "export interface Item {\n  id: number;\n}\n\nexport function price(item: Item, rate: number): number {\n  return item.id * rate;\n}\n",
            ),
            (
                "src/cart.ts",
                "import { price, type Item } from './model';\n\nexport function total(items: Item[]): number {\n  return items.map((i) => price(i, 2)).length;\n}\n",
            ),
            (
                "src/old.ts",
                "import { price } from './legacy';\n\nexport function total(n: number): number {\n  return price(n, 2);\n}\n",
            ),
        ],
        &["e0 src/cart.ts", "e1 src/model.ts", "e2 src/old.ts"],
        &["e0-e1 bi: signature_call/price"],
    );
}
