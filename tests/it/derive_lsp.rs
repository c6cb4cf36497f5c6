//! `--lsp`: real pyright and gopls confirm and extend the tree-sitter edges.
//! Needs the servers of `scripts/test` (pyright via `npm ci --prefix tests/servers`,
//! Debian's gopls with Go 1.19).

use crate::common;
use crate::derive_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use derive_support::{TestRepo, edge_rows};
use nextedit::history::lsp::{LspSetup, LspStats, ServerCommand, ServerSet};
use nextedit::history::{CommitSource, GitRepository, derive_commit_with_lsp};
use nextedit::trajectory::Trajectory;

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
    // Without a server: `surface` names no changed definition, so no edge.
    assert_eq!(
        edge_rows(&repo.derive("HEAD").unwrap()),
        Vec::<String>::new()
    );

    let scratch = tempfile::tempdir().unwrap();
    let servers = ServerSet {
        python: Some(pyright()),
        ..ServerSet::default()
    };
    let (t, stats) = derive_with(&repo, servers, scratch.path());
    assert_eq!(edge_rows(&t), vec!["e0-e1 bi: lsp_def_use/surface"]);
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
