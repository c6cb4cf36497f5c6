//! The replay engine on Historian's worked example (reference §14), with a scripted
//! suggester, plus the oracle and noop baselines and the leak sentinel.

use crate::common::nextedit_with_db as nextedit;
use crate::common::{failed_run_json_lines, json_lines, scripted_suggester};
use nextedit::store::SessionStore;
use std::collections::HashMap;

use nextedit::core::metrics::flow::{FlowClass, aggregate};
use nextedit::core::trajectory::{
    Edit, EditIndex, FileEntry, SessionInfo, SessionKind, Trajectory,
};
use nextedit::engine::replay::matching::MatchRule;
use nextedit::engine::replay::{
    DirWorkspace, FedSuggester, KeepSteps, OrderMode, ReplayConfig, ReplayHooks, ReplayOutcome,
    StepRecord, replay,
};
use nextedit::engine::suggest::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult, SuggestedEdit,
};
use nextedit::engine::suggest::{NoopSuggester, SuggestError, Suggester};

const A_PY: &str = "import os\n\n\ndef compute(x):\n    return x + 1\n\n\ndef helper(y):\n    return compute(y) * 2\n\n\nclass Foo:\n    def bar(self):\n        return compute(3)\n";
const B_PY: &str = "from pkg.a import compute\n\n\ndef run():\n    total = compute(10)\n    print(total)\n    return total\n";

fn edit(id: usize, file: &str, start: usize, before: &str, after: &str) -> Edit {
    Edit::lines(format!("e{id}"), file, start, before, after)
}

/// The toy commit "Add scale parameter to compute": 5 edits, no order edges.
fn worked_example() -> Trajectory {
    let mut t = Trajectory::new(SessionInfo::new("06e9be95b7", SessionKind::Commit));
    for (path, text) in [("pkg/a.py", A_PY), ("pkg/b.py", B_PY)] {
        t.files.push(FileEntry {
            language: Some("python".into()),
            ..FileEntry::new(path, Some(text.into()))
        });
    }
    t.edits = vec![
        edit(0, "pkg/a.py", 1, "", "import math\n"),
        edit(
            1,
            "pkg/a.py",
            3,
            "def compute(x):\n    return x + 1\n",
            "def compute(x, scale=1):\n    return (x + 1) * scale\n",
        ),
        edit(
            2,
            "pkg/a.py",
            8,
            "    return compute(y) * 2\n",
            "    return compute(y, scale=2) * 2\n",
        ),
        edit(
            3,
            "pkg/a.py",
            13,
            "        return compute(3)\n",
            "        value = compute(3, scale=math.pi)\n        return value\n",
        ),
        edit(
            4,
            "pkg/b.py",
            4,
            "    total = compute(10)\n",
            "    total = compute(10, scale=3)\n",
        ),
    ];
    t
}

fn s(file: &str, start: usize, end: usize, text: &str, confidence: f64) -> SuggestedEdit {
    SuggestedEdit {
        file: file.into(),
        start_line: start,
        end_line: end,
        text: text.into(),
        confidence: Some(confidence),
    }
}

/// §14's suggester: a wrong edit first, then the remaining true edits of pkg/a.py;
/// at step 4, the wrong edit and an edit that puts back edit 3's old text.
struct Scripted {
    answers: HashMap<usize, Vec<SuggestedEdit>>,
    seen_files: Vec<String>,
    generated_at: Vec<(String, usize, usize)>,
}

impl Suggester for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }
    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult::default())
    }
    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        self.seen_files
            .extend(params.files.iter().map(|f| f.text.clone()));
        Ok(SuggestResult {
            edits: self.answers.get(&params.step).cloned().unwrap_or_default(),
            reads: vec![],
        })
    }
    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        self.generated_at
            .push((params.file.clone(), params.start_line, params.end_line));
        Ok(GenerateResult {
            text: "    total = compute(10, scale=3)\n".into(),
            reads: vec![],
        })
    }
    fn shutdown(&mut self) {}
}

/// Replays `t` keeping every step: (outcome, steps).
fn replay_kept(
    t: &Trajectory,
    suggester: &mut dyn Suggester,
    dir: &std::path::Path,
    config: &ReplayConfig,
) -> (ReplayOutcome, Vec<StepRecord>) {
    let mut kept = KeepSteps::default();
    let outcome = replay(
        t,
        suggester,
        &mut DirWorkspace::new(dir),
        config,
        ReplayHooks {
            resume: &[],
            observer: &mut kept,
        },
    )
    .unwrap();
    (outcome, kept.steps)
}

fn config(order: OrderMode) -> ReplayConfig {
    ReplayConfig {
        order,
        rule: MatchRule::Historian,
        seed: 42,
        revealed: Default::default(),
        language: Some("python".into()),
        project: Some("demo".into()),
        exclude_origins: Vec::new(),
        judge_cases: false,
    }
}

#[test]
fn historian_worked_example() {
    let wrong = s("pkg/a.py", 0, 1, "import sys\n", 0.9);
    let e1 = s(
        "pkg/a.py",
        4,
        6,
        "def compute(x, scale=1):\n    return (x + 1) * scale\n",
        0.8,
    );
    let e2 = s(
        "pkg/a.py",
        9,
        10,
        "    return compute(y, scale=2) * 2\n",
        0.7,
    );
    let e3 = s(
        "pkg/a.py",
        14,
        15,
        "        value = compute(3, scale=math.pi)\n        return value\n",
        0.6,
    );
    let revert = s("pkg/a.py", 14, 16, "        return compute(3)\n", 0.5);
    let mut suggester = Scripted {
        answers: HashMap::from([
            (1, vec![wrong.clone(), e1, e2.clone(), e3.clone()]),
            (2, vec![wrong.clone(), e2, e3.clone()]),
            (3, vec![wrong.clone(), e3]),
            (4, vec![wrong, revert]),
        ]),
        seen_files: vec![],
        generated_at: vec![],
    };
    let dir = tempfile::tempdir().unwrap();
    // Historian always starts with edit 0.
    let mut t = worked_example();
    t.order.initial = vec!["e0".into()];
    let (outcome, steps) =
        replay_kept(&t, &mut suggester, dir.path(), &config(OrderMode::Adaptive));
    assert_eq!(outcome.initial, EditIndex(0));
    assert_eq!(suggester.generated_at, vec![("pkg/b.py".to_string(), 4, 5)]);
    assert_eq!(outcome.order, [0, 1, 2, 3, 4].map(EditIndex));
    let classes: Vec<Vec<FlowClass>> = steps
        .iter()
        .map(|s| s.predictions.iter().map(|p| p.class).collect())
        .collect();
    use FlowClass::*;
    assert_eq!(
        classes,
        vec![
            vec![Breaking, Keeping, Keeping, Keeping],
            vec![Breaking, Keeping, Keeping],
            vec![Breaking, Keeping],
            vec![Breaking, Reverting],
        ]
    );
    let prf: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.flow.prf().precision, s.flow.prf().recall))
        .collect();
    assert_eq!(
        prf,
        vec![(0.75, 0.75), (2.0 / 3.0, 2.0 / 3.0), (0.5, 0.5), (0.0, 0.0)]
    );
    let tp_at: Vec<[u64; 3]> = steps
        .iter()
        .map(|s| [s.flow.tp_at(1), s.flow.tp_at(3), s.flow.tp_at(5)])
        .collect();
    assert_eq!(tp_at, vec![[0, 2, 3], [0, 2, 2], [0, 1, 1], [0, 0, 0]]);
    // Steps 1-3 take their content score from the best kept match; step 4 generates.
    let content: Vec<(usize, bool, f64)> = steps
        .iter()
        .map(|s| {
            s.content
                .as_ref()
                .map(|c| (c.gold.0, c.generated, c.bleu))
                .unwrap()
        })
        .collect();
    assert_eq!(
        content,
        vec![
            (1, false, 100.0),
            (2, false, 100.0),
            (3, false, 100.0),
            (4, true, 100.0)
        ]
    );
    assert_eq!(steps[3].content.as_ref().unwrap().es, 1.0);
    // The workspace ends at the commit's state.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pkg/a.py")).unwrap(),
        "import os\nimport math\n\n\ndef compute(x, scale=1):\n    return (x + 1) * scale\n\n\ndef helper(y):\n    return compute(y, scale=2) * 2\n\n\nclass Foo:\n    def bar(self):\n        value = compute(3, scale=math.pi)\n        return value\n"
    );
    let summary = aggregate(
        &steps.iter().map(|s| s.flow.clone()).collect::<Vec<_>>(),
        &[1, 3, 5],
    );
    assert_eq!(
        (
            summary.shares.flow_keeping,
            summary.shares.flow_breaking,
            summary.shares.flow_reverting
        ),
        (6.0 / 11.0, 4.0 / 11.0, 1.0 / 11.0)
    );
}

#[test]
fn oracle_reaches_the_maximum_and_noop_scores_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut oracle = FedSuggester::oracle();
    let (outcome, steps) = replay_kept(
        &worked_example(),
        &mut oracle,
        dir.path(),
        &config(OrderMode::Fixed),
    );
    assert_eq!(outcome.order, [0, 1, 2, 3, 4].map(EditIndex));
    for step in &steps {
        let prf = step.flow.prf();
        assert_eq!(
            (prf.precision, prf.recall),
            (1.0, 1.0),
            "step {}",
            step.step
        );
        assert_eq!(step.content.as_ref().unwrap().bleu, 100.0);
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, steps) = replay_kept(
        &worked_example(),
        &mut NoopSuggester,
        dir.path(),
        &config(OrderMode::Fixed),
    );
    for step in &steps {
        let prf = step.flow.prf();
        assert_eq!(
            (prf.precision, prf.recall, step.predictions.len()),
            (0.0, 0.0, 0)
        );
        // Doing nothing scores ES 0.
        assert_eq!(step.content.as_ref().unwrap().es, 0.0, "step {}", step.step);
    }
}

#[test]
fn the_future_never_reaches_the_suggester() {
    let mut t = worked_example();
    let sentinel = "SENTINEL_FROM_THE_FUTURE";
    t.edits[4].after_text = format!("    total = compute(10, scale=3)  # {sentinel}\n");
    let mut suggester = Scripted {
        answers: HashMap::new(),
        seen_files: vec![],
        generated_at: vec![],
    };
    struct Spy<'a>(&'a mut Scripted, Vec<String>, std::path::PathBuf);
    impl Suggester for Spy<'_> {
        fn name(&self) -> String {
            "spy".into()
        }
        fn initialize(&mut self, p: &InitializeParams) -> Result<InitializeResult, SuggestError> {
            self.1.push(serde_json::to_string(p).unwrap());
            self.0.initialize(p)
        }
        fn suggest(&mut self, p: &SuggestParams) -> Result<SuggestResult, SuggestError> {
            self.1.push(serde_json::to_string(p).unwrap());
            // Everything readable in the worktree at this moment.
            for entry in ["pkg/a.py", "pkg/b.py"] {
                self.1
                    .push(std::fs::read_to_string(self.2.join(entry)).unwrap_or_default());
            }
            self.0.suggest(p)
        }
        fn generate(&mut self, p: &GenerateParams) -> Result<GenerateResult, SuggestError> {
            self.1.push(serde_json::to_string(p).unwrap());
            for entry in ["pkg/a.py", "pkg/b.py"] {
                self.1
                    .push(std::fs::read_to_string(self.2.join(entry)).unwrap_or_default());
            }
            self.0.generate(p)
        }
        fn shutdown(&mut self) {}
    }
    let dir = tempfile::tempdir().unwrap();
    let mut spy = Spy(&mut suggester, vec![], dir.path().to_path_buf());
    let (outcome, _) = replay_kept(&t, &mut spy, dir.path(), &config(OrderMode::Fixed));
    assert_eq!(outcome.order, [0, 1, 2, 3, 4].map(EditIndex));
    assert!(spy.1.len() > 10);
    for seen in &spy.1 {
        assert!(
            !seen.contains(sentinel),
            "the suggester saw the future: {seen}"
        );
    }
    // After the last step the sentinel is on disk: the check above was not vacuous.
    assert!(
        std::fs::read_to_string(dir.path().join("pkg/b.py"))
            .unwrap()
            .contains(sentinel)
    );
}

#[test]
fn replay_command_with_builtin_and_process_suggesters() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let path = dir.path().join("commit.json");
    std::fs::write(&path, serde_json::to_string(&worked_example()).unwrap()).unwrap();
    let path = path.to_str().unwrap();
    let oracle = json_lines(&nextedit(
        &[
            "replay",
            "--jsonl",
            "--suggester",
            "builtin:oracle",
            "--trajectory",
            path,
        ],
        &db,
    ));
    assert_eq!(oracle[0]["run"], 1);
    let applied: Vec<&str> = oracle[1]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["applied"].as_str().unwrap())
        .collect();
    assert_eq!(applied, ["e1", "e2", "e3", "e4"]);
    assert_eq!(
        oracle[2]["summary"]["micro"],
        serde_json::json!({"precision": 1.0, "recall": 1.0, "f1": 1.0})
    );
    assert_eq!(oracle[2]["summary"]["mrr"], 1.0);
    let noop = json_lines(&nextedit(
        &[
            "replay",
            "--jsonl",
            "--suggester",
            "builtin:noop",
            "--trajectory",
            path,
        ],
        &db,
    ));
    assert_eq!(
        noop[2]["summary"]["micro"],
        serde_json::json!({"precision": 0.0, "recall": 0.0, "f1": 0.0})
    );
    // A process suggester that crashes once: that step records the failure, the run goes on.
    let state = dir.path().join("state");
    let spec = scripted_suggester(Some("crash-once"), &state);
    // Its other answers name a file the trajectory does not have: no suggest call
    // worked, so the run FAILED.
    let crashing = failed_run_json_lines(
        &nextedit(
            &[
                "replay",
                "--jsonl",
                "--sandbox-rw",
                state.to_str().unwrap(),
                "--suggester",
                &spec,
                "--trajectory",
                path,
            ],
            &db,
        ),
        "all 4 suggest calls failed (bad_result 3, crash 1)",
    );
    let steps = crashing[1]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    assert!(
        steps[0]["suggest_error"]
            .as_str()
            .unwrap()
            .starts_with("crash: suggester exited during `suggest` (exit status: 7)"),
        "{}",
        steps[0]
    );
    // Later steps got answers again (its edit on a.py exists neither in this trajectory
    // nor in the worktree: a clear failure).
    assert_eq!(
        steps[1]["suggest_error"],
        "bad_result: suggester's `suggest` result is invalid: a.py is neither a file of this trajectory nor a file inside the worktree"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let errors: Vec<(i64, String, String)> = conn
        .prepare("SELECT step, call, kind FROM run_errors WHERE run_id = 3 ORDER BY step")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(errors[0], (1, "suggest".to_string(), "crash".to_string()));
    assert_eq!(errors.iter().filter(|e| e.2 == "bad_result").count(), 3);

    let report = nextedit(&["report", "1", "2"], &db);
    let report = String::from_utf8(report.stdout).unwrap();
    let lines: Vec<&str> = report.lines().collect();
    // The flow table, how each run was scored, the content table, then the field's
    // other yardsticks.
    assert_eq!(lines.len(), 15, "{report}");
    // The oracle matches every gold edit at its place; doing nothing matches none.
    assert_eq!(
        lines[13],
        "   1       100.0        1.000         1.000  1.000 (4 steps)"
    );
    assert_eq!(
        lines[14],
        "   2         0.0        0.000         0.000  0.000 (4 steps)"
    );
    assert_eq!(
        lines[5],
        "   1  bleu>50    fixed     -                     -                 in-process   1 · a6315bf25503     ok"
    );
    // Beside each content score, what doing nothing scores on the same steps: an empty
    // answer (ES 0.5: it removes the lines the gold edit replaces) and the unchanged text.
    assert!(
        lines[9].starts_with("   1      100.0    1.000               0.0/0.0         0.500/0.000"),
        "{report}"
    );
    assert!(lines[9].ends_with("none"), "{report}");
    // Doing nothing keeps most tokens (Historian's BLEU 32.5), but an unchanged answer is
    // no change: BLEU 0 and ES 0 under the default rule (issue 11).
    assert!(
        lines[10].starts_with("   2        0.0    0.000               0.0/0.0         0.500/0.000"),
        "{report}"
    );
    assert_eq!(
        lines[1],
        "   1     1/1       4  1.000/1.000/1.000    1.000   1.000   1.000  1.000      1.00/0.00/0.00/0.00  builtin:oracle"
    );
    assert_eq!(
        lines[2],
        "   2     1/1       4  0.000/0.000/0.000    0.000   0.000   0.000  0.000      0.00/0.00/0.00/0.00  builtin:noop"
    );

    let bad = nextedit(
        &[
            "replay",
            "--suggester",
            "builtin:nope",
            "--trajectory",
            path,
        ],
        &db,
    );
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "nextedit: error: unknown suggester \"builtin:nope\": use builtin:noop, builtin:propagate, builtin:retrieve, builtin:oracle, openai:<URL>?model=<NAME>, lsp:<language server command>, recorded:<server> or cmd:<command line>\n"
    );
}

#[test]
fn a_killed_run_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    // Its own temporary directory: the killed run's scratch directory stays there
    // until the resumed run removes it.
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let db = dir.path().join("runs.db");
    let path = dir.path().join("commit.json");
    std::fs::write(&path, serde_json::to_string(&worked_example()).unwrap()).unwrap();
    let state = dir.path().join("state");
    // Hangs at step 3 the first time only.
    let spec = scripted_suggester(Some("hang-once-at-3"), &state);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(["replay", "--jsonl", "--suggester", &spec, "--sandbox-rw"])
        .arg(&state)
        .arg("--trajectory")
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .env("TMPDIR", &tmpdir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let steps_stored = || -> i64 {
        rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("SELECT count(*) FROM run_steps", [], |r| r.get(0)))
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while steps_stored() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "steps 1 and 2 were never stored"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    kill_suggesters(&state);
    assert_eq!(steps_stored(), 2);
    // The suggester and its sandbox flags are given again (never taken from the database).
    // Every answer names a file the trajectory does not have: the run FAILED.
    let resumed = failed_run_json_lines(
        &std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(["replay", "--jsonl", "--resume", "1", "--suggester", &spec])
            .arg("--sandbox-rw")
            .arg(&state)
            .arg("--db")
            .arg(&db)
            .env("TMPDIR", &tmpdir)
            .output()
            .unwrap(),
        "all 4 suggest calls failed (bad_result 4)",
    );
    assert_eq!(std::fs::read_dir(&tmpdir).unwrap().count(), 0);
    let steps: Vec<i64> = resumed[1]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_i64().unwrap())
        .collect();
    assert_eq!(steps, [3, 4]);
    assert_eq!(steps_stored(), 4);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let applied: Vec<String> = conn
        .prepare("SELECT applied FROM run_steps ORDER BY step")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(applied, ["e1", "e2", "e3", "e4"]);
    let status: String = conn
        .query_row("SELECT status FROM run_trajectories", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "done");
}

/// A SIGKILLed nextedit cannot stop its suggester: ends the process groups of the
/// scripted suggesters whose command line names `state`.
fn kill_suggesters(state: &std::path::Path) {
    let ps = std::process::Command::new("ps")
        .args(["-eo", "pid=,args="])
        .output()
        .unwrap();
    let state_name = state.display().to_string();
    for line in String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains(&state_name))
    {
        if let Some(pid) = line
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill(2) on the process group of the suggester this test started.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

/// A rename commit: the definition first, then two call sites in two files.
fn rename_trajectory() -> Trajectory {
    let mut t = worked_example();
    t.files[0].base_text = Some("def total_price(items):\n    return sum(items)\n\n\ndef describe(items):\n    return total_price(items)\n".into());
    t.files[1].base_text =
        Some("from pkg.a import total_price\n\nprint(total_price([1]))\n".into());
    t.edits = vec![
        edit(
            0,
            "pkg/a.py",
            0,
            "def total_price(items):\n",
            "def subtotal(items):\n",
        ),
        edit(
            1,
            "pkg/a.py",
            5,
            "    return total_price(items)\n",
            "    return subtotal(items)\n",
        ),
        edit(
            2,
            "pkg/b.py",
            0,
            "from pkg.a import total_price\n",
            "from pkg.a import subtotal\n",
        ),
        edit(
            3,
            "pkg/b.py",
            2,
            "print(total_price([1]))\n",
            "print(subtotal([1]))\n",
        ),
    ];
    t
}

#[test]
fn propagate_follows_a_rename() {
    let dir = tempfile::tempdir().unwrap();
    let mut propagate = nextedit::engine::suggest::PropagateSuggester::default();
    let (outcome, steps) = replay_kept(
        &rename_trajectory(),
        &mut propagate,
        dir.path(),
        &config(OrderMode::Fixed),
    );
    assert_eq!(outcome.order, [0, 1, 2, 3].map(EditIndex));
    // Step 1: all three remaining sites predicted, nearest (same file) first; all keep the flow.
    let step1: Vec<(String, usize, Option<usize>, FlowClass)> = steps[0]
        .predictions
        .iter()
        .map(|p| {
            (
                p.edit.file.clone(),
                p.edit.start_line,
                p.matched.map(|m| m.0),
                p.class,
            )
        })
        .collect();
    assert_eq!(
        step1,
        vec![
            ("pkg/a.py".into(), 5, Some(1), FlowClass::Keeping),
            ("pkg/b.py".into(), 0, Some(2), FlowClass::Keeping),
            ("pkg/b.py".into(), 2, Some(3), FlowClass::Keeping),
        ]
    );
    let prf: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.flow.prf().precision, s.flow.prf().recall))
        .collect();
    // Later steps learn nothing new from the call-site edits (same rename), so they
    // predict the remaining sites again.
    assert_eq!(prf, vec![(1.0, 1.0), (1.0, 1.0), (1.0, 1.0)]);
}

#[test]
fn historian_sut_through_the_shim() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let path = dir.path().join("commit.json");
    let mut t = worked_example();
    t.order.initial = vec!["e0".into()];
    std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let log = dir.path().join("sut-inputs.jsonl");
    std::fs::write(&log, "").unwrap();
    let spec = format!(
        "cmd:SUT_LOG='{}' python3 '{}' '{}'",
        log.display(),
        root.join("replay/historian_sut.py").display(),
        root.join("tests/suggesters/historian_sut/main.py")
            .display()
    );
    let out = json_lines(&nextedit(
        &[
            "replay",
            "--jsonl",
            "--order",
            "adaptive",
            "--sandbox-rw",
            log.to_str().unwrap(),
            "--suggester",
            &spec,
            "--trajectory",
            path.to_str().unwrap(),
        ],
        &db,
    ));
    let steps = out[1]["steps"].as_array().unwrap();
    let classes: Vec<Vec<&str>> = steps
        .iter()
        .map(|s| {
            s["predictions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["class"].as_str().unwrap())
                .collect()
        })
        .collect();
    // The same flows as the Rust-scripted worked example (without its deliberate revert).
    assert_eq!(
        classes,
        vec![
            vec![
                "flow_breaking",
                "flow_keeping",
                "flow_keeping",
                "flow_keeping"
            ],
            vec!["flow_breaking", "flow_keeping", "flow_keeping"],
            vec!["flow_breaking", "flow_keeping"],
            vec!["flow_breaking"],
        ]
    );
    let last = &steps[3]["content"];
    assert_eq!(
        (
            last["edit"].as_str(),
            last["generated"].as_bool(),
            last["bleu"].as_f64()
        ),
        (Some("e4"), Some(true), Some(100.0))
    );
    // What the SUT saw: Historian's statuses, no gold text, no leaked message or files.
    let inputs: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let statuses: Vec<&str> = inputs
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "init",
            "suggestion(location+content)",
            "suggestion(location+content)",
            "suggestion(location+content)",
            "suggestion(location+content)",
            "suggestion(content)"
        ]
    );
    let content = inputs.last().unwrap();
    assert_eq!(content["target_edit"]["after"], serde_json::json!([]));
    assert_eq!(
        content["target_edit"]["before"],
        serde_json::json!(["    total = compute(10)\n"])
    );
    assert!(
        inputs
            .iter()
            .all(|i| i["edit_description"] == "" && i["changed_files"] == serde_json::json!([]))
    );
}

#[test]
fn parallel_jobs_give_the_same_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut args: Vec<String> = vec![
        "replay".into(),
        "--jsonl".into(),
        "--suggester".into(),
        "builtin:propagate".into(),
    ];
    for i in 0..6 {
        let path = dir.path().join(format!("t{i}.json"));
        let t = if i % 2 == 0 {
            worked_example()
        } else {
            rename_trajectory()
        };
        std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
        args.extend(["--trajectory".into(), path.display().to_string()]);
    }
    let run = |jobs: &str| {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["--jobs", jobs]);
        let lines = json_lines(&nextedit(&a, &db));
        (lines.len(), lines.last().unwrap()["summary"].clone())
    };
    let (n1, serial) = run("1");
    let (n3, parallel) = run("3");
    assert_eq!((n1, n3), (8, 8));
    assert_eq!(serial, parallel);
    assert_eq!(serial["steps"], 21);
}

#[test]
fn historian_results_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_path_buf();
    let db = dir.path().join("runs.db");
    let path = dir.path().join("commit.json");
    let mut t = worked_example();
    t.order.initial = vec!["e0".into()];
    t.session.commit = Some(nextedit::core::trajectory::CommitInfo {
        sha: "06e9be95b7aa".into(),
        parent: None,
        message: Some("Add scale parameter to compute".into()),
        project: Some("demo".into()),
    });
    std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = format!(
        "cmd:python3 '{}' '{}'",
        root.join("replay/historian_sut.py").display(),
        root.join("tests/suggesters/historian_sut/main.py")
            .display()
    );
    // --historian-json writes the plain JSON Historian's analysis reads;
    // --historian-json-xz the same, compressed.
    let write = |flag: &str, dir: &str| {
        let out_dir = dir_path.join(dir);
        json_lines(&nextedit(
            &[
                "replay",
                "--jsonl",
                "--order",
                "adaptive",
                "--suggester",
                &spec,
                "--trajectory",
                path.to_str().unwrap(),
                flag,
                out_dir.to_str().unwrap(),
            ],
            &db,
        ));
        let names: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1);
        let file = out_dir.join(&names[0]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        (names[0].clone(), file)
    };
    let (name, file) = write("--historian-json", "historian");
    assert!(
        name.starts_with("demo-06e9be95b7-cmd-python3-")
            && name.ends_with("-simulation-results.json"),
        "{name}"
    );
    let results: serde_json::Value =
        serde_json::from_reader(std::fs::File::open(&file).unwrap()).unwrap();
    let (xz_name, xz_file) = write("--historian-json-xz", "historian-xz");
    assert_eq!(xz_name, format!("{name}.xz"));
    let compressed: serde_json::Value = serde_json::from_reader(liblzma::read::XzDecoder::new(
        std::fs::File::open(&xz_file).unwrap(),
    ))
    .unwrap();
    // The same replay but for the run's worktree and latencies.
    let comparable = |r: &serde_json::Value| {
        let mut r = r.clone();
        r.as_object_mut().unwrap().remove("repo_dir");
        for record in r["SUT_prediction_records"].as_array_mut().unwrap() {
            record["evaluations"]
                .as_object_mut()
                .map(|e| e.remove("latency"));
        }
        r
    };
    assert_eq!(comparable(&results), comparable(&compressed));
    assert_eq!(results["commit_sha"], "06e9be95b7");
    assert_eq!(results["commit_message"], "Add scale parameter to compute");
    assert_eq!(
        results["simulation_order"],
        serde_json::json!([0, 1, 2, 3, 4])
    );
    let records = results["SUT_prediction_records"].as_array().unwrap();
    let statuses: Vec<&str> = records
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "init",
            "suggestion(location+content)",
            "suggestion(location+content)",
            "suggestion(location+content)",
            "done"
        ]
    );
    let e = &records[1]["evaluations"];
    assert_eq!(
        (
            e["flow_keeping"].clone(),
            e["flow_breaking"].clone(),
            e["precision@all"].as_f64(),
            e["tp@3"].as_u64()
        ),
        (
            serde_json::json!([1, 2, 3]),
            serde_json::json!([0]),
            Some(0.75),
            Some(2)
        )
    );
    // gdth_snapshots of each record is the state of that step (Historian aliased the final one).
    let simulated = |r: &serde_json::Value| -> Vec<bool> {
        r["gdth_snapshots"]["pkg/a.py"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w.is_object())
            .map(|w| w["simulated"].as_bool().unwrap())
            .collect()
    };
    assert_eq!(simulated(&records[0]), [true, false, false, false]);
    assert_eq!(simulated(&records[1]), [true, true, false, false]);
    assert_eq!(simulated(&records[4]), [true, true, true, true]);
    // Snapshot invariant: unchanged lists + befores = parent, unchanged lists + afters = child.
    let rebuild = |snapshot: &serde_json::Value, side: &str| -> String {
        snapshot
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|w| match w {
                serde_json::Value::Array(lines) => lines
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect::<Vec<_>>(),
                w => w[side]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string())
                    .collect(),
            })
            .collect()
    };
    let commit = &results["commit_snapshots"];
    assert_eq!(rebuild(&commit["pkg/a.py"], "before"), A_PY);
    assert_eq!(
        rebuild(&commit["pkg/b.py"], "after"),
        "from pkg.a import compute\n\n\ndef run():\n    total = compute(10, scale=3)\n    print(total)\n    return total\n"
    );
    // The prediction snapshot of step 1 rebuilds the file as it was before that step.
    let pred = &records[1]["pred_snapshots"]["pkg/a.py"];
    assert_eq!(
        rebuild(pred, "before"),
        A_PY.replacen("import os\n", "import os\nimport math\n", 1)
    );
}

#[test]
fn a_stored_commit_session_replays_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("runs.db");
    let mut db = nextedit::store::Database::open(&db_path).unwrap();
    let id = db.import_trajectory(&worked_example()).unwrap();
    drop(db);
    let out = json_lines(&nextedit(
        &[
            "replay",
            "--jsonl",
            "--suggester",
            "builtin:oracle",
            "--session",
            &id.to_string(),
        ],
        &db_path,
    ));
    assert_eq!(out[1]["key"], format!("session:{id}"));
    assert_eq!(out[2]["summary"]["micro"]["f1"], 1.0);
}

#[test]
fn one_suggester_process_serves_every_trajectory_of_a_worker() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let state = dir.path().join("state");
    let spec = scripted_suggester(None, &state);
    let mut args = vec![
        "replay".to_string(),
        "--jsonl".into(),
        "--sandbox-rw".into(),
        state.display().to_string(),
        "--suggester".into(),
        spec,
    ];
    for i in 0..3 {
        let path = dir.path().join(format!("t{i}.json"));
        std::fs::write(&path, serde_json::to_string(&worked_example()).unwrap()).unwrap();
        args.extend(["--trajectory".into(), path.display().to_string()]);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    // Its answers name a file the trajectories do not have: the run FAILED.
    failed_run_json_lines(
        &nextedit(&a, &db),
        "all 12 suggest calls failed (bad_result 12)",
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(
        (state["start"].as_u64(), state["initialize"].as_u64()),
        (Some(1), Some(3))
    );
}

/// A replay of the worked example through a suggester that hangs at `suggest`, its
/// scratch directory in `tmpdir`; returns once the trajectory is running.
fn hanging_replay(
    dir: &std::path::Path,
    tmpdir: &std::path::Path,
    db: &std::path::Path,
) -> (std::process::Child, std::path::PathBuf) {
    let path = dir.join("commit.json");
    std::fs::write(&path, serde_json::to_string(&worked_example()).unwrap()).unwrap();
    let state = dir.join("state");
    let spec = scripted_suggester(Some("hang"), &state);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(["replay", "--suggester", &spec, "--sandbox-rw"])
        .arg(&state)
        .arg("--trajectory")
        .arg(&path)
        .arg("--db")
        .arg(db)
        .env("TMPDIR", tmpdir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while statuses(db).1 != "running" {
        assert!(
            std::time::Instant::now() < deadline,
            "the trajectory never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (child, state)
}

/// (the run's status, its trajectory's status and error) of a one-trajectory run 1
/// (empty while there is none).
fn statuses(db: &std::path::Path) -> (String, String, Option<String>) {
    rusqlite::Connection::open(db)
        .and_then(|c| {
            c.query_row(
                "SELECT r.status, t.status, t.error FROM runs r JOIN run_trajectories t ON t.run_id = r.id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
        .unwrap_or_default()
}

/// Whether a process whose command line names `state` (a scripted suggester's) runs.
fn suggester_running(state: &std::path::Path) -> bool {
    let state = state.display().to_string();
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .any(|l| l.contains(&state))
}

#[test]
fn ctrl_c_removes_the_scratch_worktrees() {
    let dir = tempfile::tempdir().unwrap();
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let db = dir.path().join("runs.db");
    let (mut child, state) = hanging_replay(dir.path(), &tmpdir, &db);
    let scratch = || std::fs::read_dir(&tmpdir).unwrap().count();
    assert_eq!(scratch(), 1);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) on a child this test spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGINT));
    assert_eq!(scratch(), 0, "scratch worktrees left behind");
    // Never left running: interrupted, and the trajectory says by what.
    assert_eq!(
        statuses(&db),
        (
            "interrupted".into(),
            "interrupted".into(),
            Some("interrupted by SIGINT".into())
        )
    );
    // The hanging suggester went too (its process group was SIGKILLed; the kernel may
    // take a moment to tear a killed sandbox down on a loaded machine, so look for up to
    // five seconds).
    let gone_by = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while suggester_running(&state) && std::time::Instant::now() < gone_by {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!suggester_running(&state), "suggester left running");
}

#[test]
fn the_next_run_cleans_up_after_a_killed_one() {
    let dir = tempfile::tempdir().unwrap();
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let db = dir.path().join("runs.db");
    let (mut child, state) = hanging_replay(dir.path(), &tmpdir, &db);
    // SIGKILL (as the out-of-memory killer sends it): nothing in the process runs.
    child.kill().unwrap();
    child.wait().unwrap();
    kill_suggesters(&state);
    let left: Vec<std::path::PathBuf> = std::fs::read_dir(&tmpdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(left.len(), 1);
    assert_eq!(statuses(&db), ("running".into(), "running".into(), None));
    // Any later replay (here another database's) removes the directory and marks the
    // dead run interrupted, saying so.
    let path = dir.path().join("commit.json");
    let other = crate::common::noop_replay(&path, &dir.path().join("other.db"), &tmpdir)
        .output()
        .unwrap();
    assert!(other.status.success());
    assert_eq!(
        String::from_utf8_lossy(&other.stderr),
        format!(
            "nextedit: removed {}, the scratch directory of a replay whose process ended without removing it; run 1 of {} was left running: now marked interrupted\n",
            left[0].display(),
            db.display()
        )
    );
    assert_eq!(std::fs::read_dir(&tmpdir).unwrap().count(), 0);
    assert_eq!(
        statuses(&db),
        (
            "interrupted".into(),
            "interrupted".into(),
            Some("the process running it ended before it finished (killed, out of memory, or crashed)".into())
        )
    );
}
