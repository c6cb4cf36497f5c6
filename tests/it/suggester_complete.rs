//! The protocol's `complete` call, answered by every kind of suggester through the
//! real `nextedit complete`: a process (`tests/suggesters/complete_echo.py`, which
//! also checks that its worktree file is exactly prefix + suffix) and its failures
//! (one written before `complete`, a crash, a hang, garbage, a bad shape), the
//! built-ins, pyright and gopls through `lsp:` (sandboxed and not), and llama-cpp-python's
//! real server through `openai:` with a cached re-run that sends no request. Each
//! fixture's outcomes are one snapshot; paths are shown as `$DIR` and `$REPO`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{Server, available, go_path_var};
use crate::suggester_openai::{KEY, LlamaServer, llama_python, tiny_model};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// One call: `nextedit complete` with these arguments and extra environment.
struct Call<'a> {
    label: &'a str,
    spec: String,
    file: &'a str,
    at: &'a str,
    extra: Vec<String>,
    env: Vec<(&'a str, String)>,
}

fn call<'a>(label: &'a str, spec: &str, file: &'a str, at: &'a str) -> Call<'a> {
    Call {
        label,
        spec: spec.to_string(),
        file,
        at,
        extra: Vec::new(),
        env: Vec::new(),
    }
}

impl<'a> Call<'a> {
    fn with(mut self, args: &[&str]) -> Call<'a> {
        self.extra.extend(args.iter().map(|a| a.to_string()));
        self
    }

    fn env(mut self, env: Vec<(&'a str, String)>) -> Call<'a> {
        self.env = env;
        self
    }

    fn run(&self, dir: &Path) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(["complete", "--suggester", &self.spec, "--dir"])
            .arg(dir)
            .args(["--file", self.file, "--at", self.at])
            .args(&self.extra)
            // The suggester sees only the variables passed on by name.
            .args(self.env.iter().flat_map(|(k, _)| ["--env", k]))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap()
    }
}

/// What a call printed: its JSON without the latency (checked to be a number), or its
/// exit code and error; paths replaced.
fn outcome(out: &Output, dir: &Path) -> String {
    let text = if out.status.success() {
        let mut value: Value = serde_json::from_slice(&out.stdout).unwrap();
        let latency = value.as_object_mut().unwrap().remove("latency_ms").unwrap();
        assert!(latency.as_f64().is_some_and(|ms| ms >= 0.0), "{latency}");
        serde_json::to_string_pretty(&value).unwrap()
    } else {
        format!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        )
    };
    let dir = dir.canonicalize().unwrap();
    text.replace(&dir.to_string_lossy().into_owned(), "$DIR")
        .replace(REPO, "$REPO")
}

/// Runs every call on `dir` and snapshots their outcomes as `name`.
fn check(name: &str, dir: &Path, calls: &[Call]) {
    let text: Vec<String> = calls
        .iter()
        .map(|c| format!("## {}\n{}", c.label, outcome(&c.run(dir), dir)))
        .collect();
    insta::assert_snapshot!(name, text.join("\n\n"));
}

/// Writes `files` into a new directory.
fn fixture(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// A cart whose `total_weight` body is the hole (line 9, after its header), a
/// neighbour in `util.py` it can copy, and a `.git` the suggester must not see.
fn shop() -> tempfile::TempDir {
    fixture(&[
        (
            "shop.py",
            "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n\n\nclass Cart:\n    def total_weight(self, items):\n\n    def empty(self):\n        return 0\n",
        ),
        (
            "util.py",
            "def total_weight(items):\n    return sum(i.weight * i.count for i in items)\n\n\ndef greet(name):\n    print(name)\n",
        ),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (
            "hints.json",
            r#"[{"file": "lib/weights.py", "start_line": 3, "end_line": 5, "text": "    def total_weight(self, items):\n        return sum(i.weight * i.count * self.unit for i in items)\n"}]"#,
        ),
    ])
}

fn python_script(script: &str) -> String {
    format!("cmd:python3 {REPO}/tests/suggesters/{script}")
}

#[test]
fn a_process_answers_complete_from_its_context_and_its_failures_are_typed() {
    let dir = shop();
    let hints = dir.path().join("hints.json");
    let hints = hints.to_str().unwrap();
    let echo = python_script("complete_echo.py");
    let mode = |m: &str| vec![("COMPLETE_MODE", m.to_string())];
    check(
        "process",
        dir.path(),
        &[
            call("echo, sandboxed", &echo, "shop.py", "10:0").with(&["--context", hints]),
            call("echo, unsandboxed", &echo, "shop.py", "10:0").with(&[
                "--context",
                hints,
                "--sandbox",
                "off",
            ]),
            call("echo without context", &echo, "shop.py", "10:0"),
            call(
                "a suggester written before complete",
                &python_script("scripted.py"),
                "shop.py",
                "10:0",
            ),
            call("crash", &echo, "shop.py", "10:0").env(mode("crash")),
            call("hang", &echo, "shop.py", "10:0")
                .with(&["--timeout", "1"])
                .env(mode("hang")),
            call("garbage", &echo, "shop.py", "10:0").env(mode("garbage")),
            call("bad shape", &echo, "shop.py", "10:0").env(mode("bad-shape")),
            call("a cursor past the line", &echo, "shop.py", "10:3"),
            call("a file outside the directory", &echo, "../shop.py", "0:0"),
        ],
    );
}

#[test]
fn the_builtins_answer_complete_on_a_fixture() {
    let dir = shop();
    let hints = dir.path().join("hints.json");
    check(
        "builtins",
        dir.path(),
        &[
            call("noop", "builtin:noop", "shop.py", "10:0"),
            call("retrieve", "builtin:retrieve", "shop.py", "10:0"),
            call(
                "retrieve with a better hint",
                "builtin:retrieve",
                "shop.py",
                "10:0",
            )
            .with(&["--context", hints.to_str().unwrap()]),
            call("propagate", "builtin:propagate", "shop.py", "10:0"),
        ],
    );
}

#[test]
fn pyright_and_gopls_complete_at_the_cursor_sandboxed_and_not() {
    if !available(
        "pyright_and_gopls_complete_at_the_cursor_sandboxed_and_not",
        &[Server::Pyright, Server::Gopls],
    ) {
        return;
    }
    let python = fixture(&[(
        "app.py",
        "import os\n\n\ndef here():\n    return os.getcw\n\n\nprint(here())\n",
    )]);
    let pyright = format!("lsp:{} --stdio", Server::Pyright.path().display());
    check(
        "pyright",
        python.path(),
        &[
            call("sandboxed", &pyright, "app.py", "4:19").with(&["--language", "python"]),
            call("unsandboxed", &pyright, "app.py", "4:19").with(&[
                "--language",
                "python",
                "--sandbox",
                "off",
            ]),
            // Nothing to complete after a blank line's indentation: an empty answer.
            call("an empty line", &pyright, "app.py", "5:0").with(&["--sandbox", "off"]),
        ],
    );
    let go = fixture(&[
        ("go.mod", "module example.com/shapes\n\ngo 1.19\n"),
        (
            "main.go",
            "package main\n\nimport \"fmt\"\n\ntype Point struct {\n\tX, Y  int\n\tLabel string\n}\n\nfunc main() {\n\tp := Point{X: 1, Y: 2}\n\tfmt.Println(p.La)\n}\n",
        ),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let tmp = cache.path().to_string_lossy();
    let env = || {
        vec![
            ("PATH", go_path_var()),
            ("GOPATH", format!("{tmp}/gopath")),
            ("GOCACHE", format!("{tmp}/gocache")),
            ("GOPROXY", "off".into()),
            ("GOFLAGS", "-mod=mod".into()),
            ("CGO_ENABLED", "0".into()),
        ]
    };
    check(
        "gopls",
        go.path(),
        &[
            call("sandboxed", "lsp:gopls", "main.go", "11:17").env(env()),
            call("unsandboxed", "lsp:gopls", "main.go", "11:17")
                .with(&["--sandbox", "off"])
                .env(env()),
        ],
    );
}

#[test]
fn the_llama_server_answers_complete_and_a_cached_rerun_sends_nothing() {
    let Some(python) =
        llama_python("the_llama_server_answers_complete_and_a_cached_rerun_sends_nothing")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = tiny_model(&python, tmp.path());
    let server = LlamaServer::start(&python, &model, tmp.path());
    let dir = shop();
    let db = tmp.path().join("cache.db");
    let spec = format!(
        "openai:http://127.0.0.1:{}/v1?model=tiny&max_tokens=16",
        server.port
    );
    let hints = dir.path().join("hints.json");
    let ask = |extra: &[&str]| {
        let out = call("llama", &spec, "shop.py", "10:0")
            .with(&["--cache-db", db.to_str().unwrap()])
            .with(&["--context", hints.to_str().unwrap()])
            .with(extra)
            .env(vec![("OPENAI_API_KEY", KEY.to_string())])
            .run(dir.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let first = ask(&[]);
    let requests = server.requests();
    // `initialize` checks the model is served, then one chat request.
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0]["path"], "/v1/models");
    let chat = &requests[1];
    assert_eq!(chat["path"], "/v1/chat/completions");
    assert_eq!(chat["authorization"], format!("Bearer {KEY}"));
    let mut body = chat["body"].clone();
    let user = body["messages"][1]["content"].as_str().unwrap().to_string();
    body["messages"] = json!("…");
    assert_eq!(
        body,
        json!({"model": "tiny", "max_tokens": 16, "temperature": 0.0, "seed": 0,
               "stream": false, "messages": "…"})
    );
    insta::assert_snapshot!("llama_user_message", user);
    // The model's answer is garbage by construction; its shape is the protocol's.
    assert!(first["text"].is_string());
    assert_eq!(first["cached"], false);
    assert_eq!(
        first["reads"],
        json!([{"file": "shop.py", "start_line": 0, "end_line": 13}])
    );
    // Served from the cache: the same answer, not one more request; read-only too.
    for extra in [&[][..], &["--cache", "read-only"][..]] {
        let again = ask(extra);
        assert_eq!(again["cached"], true);
        assert_eq!(again["text"], first["text"]);
        assert_eq!(again["latency_ms"], first["latency_ms"]);
        assert_eq!(server.requests().len(), 2);
    }
}
