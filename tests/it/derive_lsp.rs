//! `--lsp`: real pyright and gopls confirm, refute and extend the tree-sitter edges.
//! Needs the servers of `scripts/test` (pyright via `npm ci --prefix tests/servers`,
//! Debian's gopls with Go 1.19). Fault injection uses `tests/fake_server.py`.

use crate::common;
use crate::derive_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Server;
use derive_support::{TestRepo, edge_rows};
use nextedit::core::trajectory::Trajectory;
use nextedit::engine::history::agreement::disagreements;
use nextedit::engine::history::lsp::{LspSetup, LspStats, ServerCommand, ServerSet};
use nextedit::engine::history::order::AnnotatedPair;
use nextedit::engine::history::{CommitSource, GitRepository, derive_commit_with_lsp};

fn pyright() -> ServerCommand {
    ServerCommand {
        program: common::pyright(),
        args: vec!["--stdio".into()],
        env: Vec::new(),
    }
}

fn gopls(scratch: &Path) -> ServerCommand {
    let env = vec![
        ("PATH".to_string(), common::go_path_var()),
        (
            "GOPATH".to_string(),
            scratch.join("gopath").display().to_string(),
        ),
        (
            "GOCACHE".to_string(),
            scratch.join("gocache").display().to_string(),
        ),
        ("GOPROXY".to_string(), "off".to_string()),
        ("GOFLAGS".to_string(), "-mod=mod".to_string()),
    ];
    ServerCommand {
        program: common::Server::Gopls.path(),
        args: Vec::new(),
        env,
    }
}

/// jdtls from its venv with the venv's Java runtime; its configuration and workspace
/// data beside each side's tree (`../jdtls-<side>`: the two sides run at once and may
/// not share them).
fn jdtls() -> ServerCommand {
    let venv = common::jdtls_venv();
    let java_home = common::jdtls_java_home();
    let script = format!(
        "d=\"$PWD/../jdtls-$(basename \"$PWD\")\"; exec '{}' -configuration \"$d/config\" -data \"$d/data\"",
        venv.join("bin/jdtls").display()
    );
    let path = format!(
        "{}/bin:{}",
        java_home.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    ServerCommand {
        program: PathBuf::from("sh"),
        args: vec!["-c".into(), script],
        env: vec![
            ("JAVA_HOME".into(), java_home.display().to_string()),
            ("PATH".into(), path),
        ],
    }
}

fn derive_with(repo: &TestRepo, servers: ServerSet, scratch: &Path) -> (Trajectory, LspStats) {
    let git = GitRepository::open(repo.path()).unwrap();
    let sha = git.resolve("HEAD").unwrap();
    let record = git.load(&sha).unwrap();
    let parent_root: PathBuf = scratch.join("parent");
    git.checkout(&record.parents[0], &parent_root).unwrap();
    let child_root = scratch.join("commit");
    git.checkout(&sha, &child_root).unwrap();
    let setup = LspSetup {
        parent_root: Some(parent_root),
        child_root,
        servers,
        timeout: Duration::from_secs(120),
        max_requests: 500,
    };
    derive_commit_with_lsp(&record, Some("test"), &setup).unwrap()
}

#[test]
fn pyright_resolves_an_aliased_import_tree_sitter_cannot() {
    if !common::available(
        "pyright_resolves_an_aliased_import_tree_sitter_cannot",
        &[common::Server::Pyright],
    ) {
        return;
    }
    let mut repo = TestRepo::new();
    repo.write("pkg/__init__.py", "");
    repo.write(
        "pkg/geometry.py",
        "def area(radius):\n    return 3 * radius\n",
    );
    repo.write(
        "pkg/report.py",
        "from pkg.geometry import area as surface\n\n\ndef summary(r):\n    return surface(r)\n",
    );
    repo.commit("base");
    repo.write(
        "pkg/geometry.py",
        "def area(radius, scale=1):\n    return 3 * radius * scale\n",
    );
    repo.write(
        "pkg/report.py",
        "from pkg.geometry import area as surface\n\n\ndef summary(r):\n    return surface(r, 2)\n",
    );
    repo.commit("scale");
    // Without a server: `surface` resolves through its import (`history::visibility`).
    assert_eq!(
        edge_rows(&repo.derive("HEAD").unwrap()),
        vec!["e0-e1 bi: signature_call/area"]
    );

    let scratch = tempfile::tempdir().unwrap();
    let servers = ServerSet {
        python: Some(pyright()),
        ..ServerSet::default()
    };
    let (t, stats) = derive_with(&repo, servers, scratch.path());
    // pyright confirms it.
    assert_eq!(
        edge_rows(&t),
        vec!["e0-e1 bi: signature_call/area, lsp_def_use/surface"]
    );
    assert_eq!((stats.servers_started, stats.failures), (2, 0));
    assert!(stats.unavailable.is_empty(), "{:?}", stats.unavailable);
}

#[test]
fn gopls_confirms_a_signature_change_across_packages() {
    if !common::available(
        "gopls_confirms_a_signature_change_across_packages",
        &[common::Server::Gopls],
    ) {
        return;
    }
    let mut repo = TestRepo::new();
    repo.write("go.mod", "module example.com/shop\n\ngo 1.19\n");
    repo.write("mathx/sum.go", "package mathx\n\nfunc Sum(values []int) int {\n\ttotal := 0\n\tfor _, v := range values {\n\t\ttotal += v\n\t}\n\treturn total\n}\n");
    repo.write(
        "main.go",
        "package main\n\nimport \"example.com/shop/mathx\"\n\nfunc main() {\n\tprintln(mathx.Sum([]int{1, 2}))\n}\n",
    );
    repo.commit("base");
    repo.write("mathx/sum.go", "package mathx\n\nfunc Sum(values []int, start int) int {\n\ttotal := start\n\tfor _, v := range values {\n\t\ttotal += v\n\t}\n\treturn total\n}\n");
    repo.write(
        "main.go",
        "package main\n\nimport \"example.com/shop/mathx\"\n\nfunc main() {\n\tprintln(mathx.Sum([]int{1, 2}, 10))\n}\n",
    );
    repo.commit("start");
    let scratch = tempfile::tempdir().unwrap();
    let servers = ServerSet {
        go: Some(gopls(scratch.path())),
        ..ServerSet::default()
    };
    let (t, stats) = derive_with(&repo, servers, scratch.path());
    // main.go's call (e0) and Sum's new signature (e1): tree-sitter's reason confirmed by gopls.
    assert_eq!(
        edge_rows(&t),
        vec!["e0-e1 bi: signature_call/Sum, lsp_def_use/Sum, lsp_reference/Sum"]
    );
    assert_eq!((stats.servers_started, stats.failures), (2, 0));
}

/// One `--lsp` case: a base commit and a change; the edges tree-sitter derives alone,
/// then the edges with the servers and the reasons they refuted
/// (`FROM-TO kind/detail -> where the server resolved the use`).
struct Case<'a> {
    name: &'a str,
    server: Server,
    base: &'a [(&'a str, &'a str)],
    change: &'a [(&'a str, &'a str)],
    syntax: &'a [&'a str],
    lsp: &'a [&'a str],
    refuted: &'a [&'a str],
}

/// The reasons `--lsp` refuted, from the dependent edits' `lsp_refuted` annotations.
pub fn refuted_rows(t: &Trajectory) -> Vec<String> {
    t.edits
        .iter()
        .flat_map(|e| {
            e.annotations.lsp_refuted.iter().map(move |r| {
                format!(
                    "{}-{} {}/{} -> {}",
                    r.from, e.id, r.kind, r.detail, r.resolved
                )
            })
        })
        .collect()
}

fn case_repo(case: &Case) -> TestRepo {
    let mut repo = TestRepo::new();
    for (path, text) in case.base {
        repo.write(path, text);
    }
    repo.commit("base");
    for (path, text) in case.change {
        repo.write(path, text);
    }
    repo.commit("change");
    repo
}

fn check(case: Case) {
    if !common::available(case.name, &[case.server]) {
        return;
    }
    let repo = case_repo(&case);
    assert_eq!(
        edge_rows(&repo.derive("HEAD").unwrap()),
        case.syntax,
        "{}: tree-sitter alone",
        case.name
    );
    let scratch = tempfile::tempdir().unwrap();
    let servers = match case.server {
        Server::Pyright => ServerSet {
            python: Some(pyright()),
            ..ServerSet::default()
        },
        Server::Gopls => ServerSet {
            go: Some(gopls(scratch.path())),
            ..ServerSet::default()
        },
        Server::Jdtls => ServerSet {
            java: Some(jdtls()),
            ..ServerSet::default()
        },
        other => panic!("no --lsp server for {other:?}"),
    };
    let (t, stats) = derive_with(&repo, servers, scratch.path());
    assert_eq!(edge_rows(&t), case.lsp, "{}: with --lsp", case.name);
    assert_eq!(refuted_rows(&t), case.refuted, "{}: refuted", case.name);
    assert_eq!(
        (stats.servers_started, stats.failures, stats.refuted),
        (2, 0, case.refuted.len()),
        "{}: {:?}",
        case.name,
        stats.unavailable
    );
}

const STORE_PY: &str = "class Store:\n    def flush(self):\n        return 0\n";
const STORE_PY_CHANGED: &str =
    "class Store:\n    def flush(self, force):\n        return 1 if force else 0\n";
const APP_PY: &str = "from store import Store\n\n\nclass Cache:\n    def flush(self):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush()\n";
const APP_PY_CHANGED: &str = "from store import Store\n\n\nclass Cache:\n    def flush(self, limit):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush(True)\n";

#[test]
fn pyright_moves_a_typed_receiver_call_to_the_class_it_calls() {
    // `s.flush()` with `s: Store`: tree-sitter links it to the closest `flush` that
    // changed (Cache's, same file); pyright says it is Store's (another file):
    // the link is refuted, and Store.flush's references link the call instead.
    check(Case {
        name: "pyright_moves_a_typed_receiver_call_to_the_class_it_calls",
        server: Server::Pyright,
        base: &[("store.py", STORE_PY), ("app.py", APP_PY)],
        change: &[("store.py", STORE_PY_CHANGED), ("app.py", APP_PY_CHANGED)],
        syntax: &["e0-e1 bi: signature_call/flush"],
        lsp: &["e1-e2 bi: lsp_def_use/flush, lsp_reference/flush"],
        refuted: &["e0-e1 signature_call/flush -> store.py:2"],
    });
}

/// A field `Env.vcs_rev` added in one file; in another, a new local of the same name
/// read as a bare name (next to an unrelated `args.vcs_rev`).
const COLLISION: &[(&str, &str)] = &[
    ("env.py", "class Env:\n    name: str = \"\"\n"),
    (
        "setup.py",
        "def build(args):\n    flags = [args.x]\n    return flags\n",
    ),
];
const COLLISION_CHANGED: &[(&str, &str)] = &[
    (
        "env.py",
        "class Env:\n    name: str = \"\"\n    vcs_rev: str = \"\"\n",
    ),
    (
        "setup.py",
        "def build(args):\n    vcs_rev = args.vcs_rev or \"-\"\n    flags = [vcs_rev]\n    return flags\n",
    ),
];

#[test]
fn pyright_refutes_a_local_named_like_a_field_of_another_file() {
    // Tree-sitter links the local `vcs_rev` to the new field by name (the kitty-935a36f
    // sample); pyright resolves the read to the local's own assignment. (Two modules
    // defining `load`, the use importing the other one, are told apart without a
    // server since `history::visibility`.)
    check(Case {
        name: "pyright_refutes_a_local_named_like_a_field_of_another_file",
        server: Server::Pyright,
        base: COLLISION,
        change: COLLISION_CHANGED,
        syntax: &["e0-e1 bi: def_use/vcs_rev"],
        lsp: &[],
        refuted: &["e0-e1 def_use/vcs_rev -> setup.py:2"],
    });
}

/// `s.flush(force=True)` with `s: Store`: tree-sitter gives the keyword to the closest
/// `flush` that gained `force` (Cache's, same file); pyright resolves the call to
/// Store's (unchanged, another file): both the signature and the keyword reasons go.
#[test]
fn pyright_refutes_an_argument_passed_to_another_class_s_parameter() {
    check(Case {
        name: "pyright_refutes_an_argument_passed_to_another_class_s_parameter",
        server: Server::Pyright,
        base: &[
            (
                "store.py",
                "class Store:\n    def flush(self, force=False):\n        return force\n",
            ),
            (
                "app.py",
                "from store import Store\n\n\nclass Cache:\n    def flush(self):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush()\n",
            ),
        ],
        change: &[(
            "app.py",
            "from store import Store\n\n\nclass Cache:\n    def flush(self, force=False):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush(force=True)\n",
        )],
        syntax: &["e0-e1 bi: signature_call/flush, argument_parameter/flush(force)"],
        lsp: &[],
        refuted: &[
            "e0-e1 signature_call/flush -> store.py:2",
            "e0-e1 argument_parameter/flush(force) -> store.py:2",
        ],
    });
}

/// A new module-level `from json import loads`, and a function that imports its own
/// `loads` from another module before calling it: the call is not the new import's.
#[test]
fn pyright_refutes_an_import_a_local_import_shadows() {
    check(Case {
        name: "pyright_refutes_an_import_a_local_import_shadows",
        server: Server::Pyright,
        base: &[
            ("fast.py", "def loads(s):\n    return s\n"),
            ("m.py", "import os\n\n\ndef parse(text):\n    return text\n"),
        ],
        change: &[(
            "m.py",
            "import os\nfrom json import loads\n\n\ndef parse(text):\n    from fast import loads\n    return loads(text)\n",
        )],
        syntax: &["e0-e1 bi: import_use/loads"],
        lsp: &[],
        refuted: &["e0-e1 import_use/loads -> fast.py:1"],
    });
}

/// `load` changes in `pkg/a.py`; `from pkg import load` names the package, which holds
/// a.py, so tree-sitter links the import to it — but `pkg/__init__.py` defines its own
/// `load` (unchanged), and that is the one pyright resolves.
#[test]
fn pyright_refutes_an_import_of_a_package_s_own_definition() {
    check(Case {
        name: "pyright_refutes_an_import_of_a_package_s_own_definition",
        server: Server::Pyright,
        base: &[
            ("pkg/a.py", "def load(p):\n    return p\n"),
            ("pkg/__init__.py", "def load(p):\n    return [p]\n"),
            ("main.py", "import os\n\n\ndef run(x):\n    return x\n"),
        ],
        change: &[
            ("pkg/a.py", "def load(p, mode):\n    return p\n"),
            (
                "main.py",
                "from pkg import load\n\n\ndef run(x):\n    return x\n",
            ),
        ],
        syntax: &["e0-e1 bi: def_import/load"],
        lsp: &[],
        refuted: &["e1-e0 def_import/load -> pkg/__init__.py:1"],
    });
}

/// A test starts calling `area` while `geometry.py` re-signs its `area`; the test's
/// `area` is imported from `other`, which pyright resolves (the syntactic `test_impl`
/// reads names, not where the test imports them from).
#[test]
fn pyright_refutes_a_test_using_a_same_named_function_of_another_module() {
    check(Case {
        name: "pyright_refutes_a_test_using_a_same_named_function_of_another_module",
        server: Server::Pyright,
        base: &[
            ("geometry.py", "def area(r):\n    return r\n"),
            ("other.py", "def area(r):\n    return 2 * r\n"),
            (
                "tests/test_geometry.py",
                "from other import area\n\n\ndef test_size():\n    assert True\n",
            ),
        ],
        change: &[
            (
                "geometry.py",
                "def area(r, scale=1):\n    return r * scale\n",
            ),
            (
                "tests/test_geometry.py",
                "from other import area\n\n\ndef test_size():\n    assert area(2) == 4\n",
            ),
        ],
        syntax: &["e0-e1 bi: test_impl/area"],
        lsp: &[],
        refuted: &["e0-e1 test_impl/area -> other.py:1"],
    });
}

#[test]
fn pyright_adds_nothing_where_it_names_several_definitions() {
    // `from a import *` then `load = len`: pyright names both the star import's
    // `a.load` and the rebinding for `load` in `main`, so neither `lsp_def_use` nor
    // `lsp_reference` links the call to a's changed `load` (the rebinding wins at
    // run time, and tree-sitter's rules see it).
    check(Case {
        name: "pyright_adds_nothing_where_it_names_several_definitions",
        server: Server::Pyright,
        base: &[
            ("a.py", "def load(path):\n    return open(path).read()\n"),
            (
                "c.py",
                "from a import *\n\nload = len\n\n\ndef main():\n    return load(\"x\")\n",
            ),
        ],
        change: &[
            (
                "a.py",
                "def load(path, mode):\n    return open(path, mode).read()\n",
            ),
            (
                "c.py",
                "from a import *\n\nload = len\n\n\ndef main():\n    return load(\"x\") + 1\n",
            ),
        ],
        syntax: &[],
        lsp: &[],
        refuted: &[],
    });
}

#[test]
fn gopls_moves_a_method_call_to_the_struct_of_its_receiver() {
    // Go: `s.Flush()` with `s *Store` (store.go); run.go's own Cache.Flush changed too
    // and is the closest `Flush` by name.
    check(Case {
        name: "gopls_moves_a_method_call_to_the_struct_of_its_receiver",
        server: Server::Gopls,
        base: &[
            ("go.mod", "module example.com/shop\n\ngo 1.19\n"),
            (
                "store.go",
                "package shop\n\ntype Store struct{ n int }\n\nfunc (s *Store) Flush() int {\n\treturn s.n\n}\n",
            ),
            (
                "run.go",
                "package shop\n\ntype Cache struct{ m int }\n\nfunc (c *Cache) Flush() int {\n\treturn c.m\n}\n\nfunc Run(s *Store) int {\n\treturn s.Flush()\n}\n",
            ),
        ],
        change: &[
            (
                "store.go",
                "package shop\n\ntype Store struct{ n int }\n\nfunc (s *Store) Flush(limit int) int {\n\treturn s.n + limit\n}\n",
            ),
            (
                "run.go",
                "package shop\n\ntype Cache struct{ m int }\n\nfunc (c *Cache) Flush(max int) int {\n\treturn c.m\n}\n\nfunc Run(s *Store) int {\n\treturn s.Flush(3)\n}\n",
            ),
        ],
        syntax: &["e0-e1 bi: signature_call/Flush"],
        lsp: &["e1-e2 bi: lsp_def_use/Flush, lsp_reference/Flush"],
        refuted: &["e0-e1 signature_call/Flush -> store.go:5"],
    });
}

#[test]
fn explain_shows_the_reason_the_server_refuted() {
    let name = "explain_shows_the_reason_the_server_refuted";
    if !common::available(name, &[Server::Pyright]) {
        return;
    }
    let case = Case {
        name,
        server: Server::Pyright,
        base: COLLISION,
        change: COLLISION_CHANGED,
        syntax: &[],
        lsp: &[],
        refuted: &[],
    };
    let repo = case_repo(&case);
    let scratch = tempfile::tempdir().unwrap();
    let servers = ServerSet {
        python: Some(pyright()),
        ..ServerSet::default()
    };
    let (t, _) = derive_with(&repo, servers, scratch.path());
    // Suppose an annotator had related the two edits: --explain says why they are not.
    let pairs = [AnnotatedPair {
        edit_hunk_pair: [0, 1],
        edit_order: "bi-directional".into(),
        reason: "def and use".into(),
    }];
    let lines: Vec<String> = disagreements("c", &t, &pairs)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        lines,
        vec![
            "c e0-e1: annotated bi-directional (def and use), derived no relation [], refuted by --lsp [def_use:vcs_rev -> setup.py:2]"
        ]
    );
}

#[test]
fn jdtls_moves_a_method_call_to_the_class_of_its_receiver() {
    // Java: `s.flush()` with `Store s` (Store.java); Run.java's own nested
    // Cache.flush changed too and is the closest `flush` by name.
    check(Case {
        name: "jdtls_moves_a_method_call_to_the_class_of_its_receiver",
        server: Server::Jdtls,
        base: &[
            (
                "src/shop/Store.java",
                "package shop;\n\npublic class Store {\n    public int flush() {\n        return 0;\n    }\n}\n",
            ),
            (
                "src/shop/Run.java",
                "package shop;\n\npublic class Run {\n    static class Cache {\n        int flush() {\n            return 0;\n        }\n    }\n\n    static int run(Store s) {\n        return s.flush();\n    }\n}\n",
            ),
        ],
        change: &[
            (
                "src/shop/Store.java",
                "package shop;\n\npublic class Store {\n    public int flush(int limit) {\n        return limit;\n    }\n}\n",
            ),
            (
                "src/shop/Run.java",
                "package shop;\n\npublic class Run {\n    static class Cache {\n        int flush(int max) {\n            return max;\n        }\n    }\n\n    static int run(Store s) {\n        return s.flush(3);\n    }\n}\n",
            ),
        ],
        syntax: &["e0-e1 bi: signature_call/flush"],
        lsp: &["e1-e2 bi: lsp_def_use/flush"],
        refuted: &["e0-e1 signature_call/flush -> src/shop/Store.java:4"],
    });
}

/// A Python "server" that misbehaves (`tests/fake_server.py`, FAKE_MODE), publishing
/// diagnostics for what it opens as real servers do.
pub fn fake_pyright(mode: &str) -> ServerCommand {
    ServerCommand {
        program: PathBuf::from("python3"),
        args: vec![
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fake_server.py")
                .display()
                .to_string(),
        ],
        env: vec![
            ("FAKE_MODE".into(), mode.into()),
            ("FAKE_DIAGNOSTICS".into(), "1".into()),
        ],
    }
}

#[test]
fn a_server_that_fails_or_answers_garbage_never_fails_the_derive() {
    let case = Case {
        name: "faults",
        server: Server::Pyright,
        base: &[("store.py", STORE_PY), ("app.py", APP_PY)],
        change: &[("store.py", STORE_PY_CHANGED), ("app.py", APP_PY_CHANGED)],
        syntax: &[],
        lsp: &[],
        refuted: &[],
    };
    let repo = case_repo(&case);
    let syntax = edge_rows(&repo.derive("HEAD").unwrap());
    let missing = ServerCommand {
        program: PathBuf::from("/nonexistent/pyright-langserver"),
        args: Vec::new(),
        env: Vec::new(),
    };
    // (server, servers started, every request failed, servers unavailable)
    let rows = [
        (
            "echoes its params as every answer",
            fake_pyright(""),
            2,
            false,
            0,
        ),
        (
            "writes garbage between frames",
            fake_pyright("garbage"),
            2,
            false,
            0,
        ),
        (
            "exits after `initialized`",
            fake_pyright("crash:2"),
            2,
            true,
            0,
        ),
        ("cannot start", missing, 0, false, 2),
    ];
    for (why, server, started, all_failed, unavailable) in rows {
        let scratch = tempfile::tempdir().unwrap();
        let servers = ServerSet {
            python: Some(server),
            ..ServerSet::default()
        };
        let (t, stats) = derive_with(&repo, servers, scratch.path());
        assert_eq!(edge_rows(&t), syntax, "a server that {why}");
        assert_eq!(
            refuted_rows(&t),
            Vec::<String>::new(),
            "a server that {why}"
        );
        let requests = stats.requests + stats.reference_requests;
        assert_eq!(
            (
                stats.servers_started,
                requests > 0 && stats.failures == requests,
                stats.unavailable.len()
            ),
            (started, all_failed, unavailable),
            "a server that {why}: {stats:?}"
        );
    }
}
