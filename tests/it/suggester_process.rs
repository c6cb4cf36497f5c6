//! The process suggester adapter against a real suggester process that misbehaves
//! on purpose: crashes, hangs, garbage, huge lines, error responses.

use std::path::Path;
use std::time::{Duration, Instant};

use nextedit::engine::suggest::protocol::{
    InitializeParams, Revealed, SuggestParams, SuggestedEdit,
};
use nextedit::engine::suggest::{ProcessSuggester, SuggestError, Suggester};

fn suggester(mode: &str, state: &Path, timeout: Duration) -> ProcessSuggester {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/scripted.py");
    ProcessSuggester::from_shell(
        &format!(
            "SUGGESTER_MODE={mode} SUGGESTER_STATE='{}' python3 '{}'",
            state.display(),
            script.display()
        ),
        timeout,
    )
}

fn init() -> InitializeParams {
    InitializeParams {
        protocol_version: 1,
        worktree: "/tmp/w".into(),
        language: Some("python".into()),
        project: None,
        trajectory: "t".into(),
        revealed: Revealed::default(),
    }
}

fn step(n: usize) -> SuggestParams {
    SuggestParams {
        step: n,
        worktree: "/tmp/w".into(),
        language: None,
        prior_edits: vec![],
        files: vec![],
    }
}

fn counter(state: &Path, key: &str) -> u64 {
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    state[key].as_u64().unwrap_or(0)
}

#[test]
fn good_answers_and_stray_notifications() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = suggester("good", &tmp.path().join("state"), Duration::from_secs(10));
    assert_eq!(
        s.initialize(&init()).unwrap().name.as_deref(),
        Some("scripted")
    );
    let result = s.suggest(&step(3)).unwrap();
    assert_eq!(
        result.edits,
        vec![SuggestedEdit {
            file: "a.py".into(),
            start_line: 0,
            end_line: 1,
            text: "x = 3\n".into(),
            confidence: Some(0.5)
        }]
    );
    assert_eq!(result.reads.len(), 1);
    s.shutdown();
}

#[test]
fn a_crash_fails_the_step_and_the_suggester_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut s = suggester("crash-once", &state, Duration::from_secs(10));
    s.initialize(&init()).unwrap();
    let err = s.suggest(&step(1)).unwrap_err();
    assert_eq!(err.kind(), "crash");
    let SuggestError::Crashed { status, stderr, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (status.as_str(), stderr.as_str()),
        ("exit status: 7", "boom: out of ideas")
    );
    // The next call restarts it, re-initializes it and works.
    assert_eq!(s.suggest(&step(2)).unwrap().edits[0].text, "x = 2\n");
    assert_eq!((s.restarts(), counter(&state, "initialize")), (1, 2));
    s.shutdown();
}

#[test]
fn a_hang_times_out() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = suggester(
        "hang",
        &tmp.path().join("state"),
        Duration::from_millis(300),
    );
    s.initialize(&init()).unwrap();
    let started = Instant::now();
    let err = s.suggest(&step(1)).unwrap_err();
    assert_eq!(err.kind(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
    s.shutdown();
}

#[test]
fn garbage_huge_lines_and_error_responses() {
    let tmp = tempfile::tempdir().unwrap();
    for (mode, kind) in [
        ("garbage", "bad_json"),
        ("huge", "huge_output"),
        ("error", "error_response"),
    ] {
        let mut s = suggester(
            mode,
            &tmp.path().join(format!("state-{mode}")),
            Duration::from_secs(20),
        );
        s.initialize(&init()).unwrap();
        let err = s.suggest(&step(1)).unwrap_err();
        assert_eq!(err.kind(), kind, "{mode}: {err}");
        s.shutdown();
    }
}

#[test]
fn a_missing_program_is_a_clear_error() {
    let mut s = ProcessSuggester::new(
        vec!["/nonexistent/suggester".into()],
        Duration::from_secs(1),
    );
    let err = s.initialize(&init()).unwrap_err();
    assert_eq!(err.kind(), "spawn");
    assert!(
        err.to_string()
            .starts_with("cannot start suggester `/nonexistent/suggester`"),
        "{err}"
    );
}

#[test]
fn a_flooding_suggester_times_out_on_time() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = suggester("flood", &tmp.path().join("state"), Duration::from_secs(1));
    s.initialize(&init()).unwrap();
    let started = Instant::now();
    let err = s.suggest(&step(1)).unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), "timeout", "{err}");
    // Honoured within a second of the deadline, however fast the lines come.
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(2),
        "{took:?}"
    );
    s.shutdown();
}

#[test]
fn a_suggester_that_stops_reading_times_out_on_time() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = suggester("no-read", &tmp.path().join("state"), Duration::from_secs(1));
    s.initialize(&init()).unwrap();
    s.suggest(&step(1)).unwrap();
    // Far more than a pipe holds: the write itself would block forever.
    let mut big = step(2);
    big.files
        .push(nextedit::engine::suggest::protocol::FileContent {
            path: "big.py".into(),
            text: "x = 1\n".repeat(1 << 20),
        });
    let started = Instant::now();
    let err = s.suggest(&big).unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), "timeout", "{err}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(2),
        "{took:?}"
    );
    s.shutdown();
}

#[test]
fn after_three_process_failures_in_a_row_the_trajectory_stops_asking() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let limit = Duration::from_secs(2);
    let mut s = suggester("hang-init", &state, limit).with_init_timeout(limit);
    let started = Instant::now();
    assert_eq!(s.initialize(&init()).unwrap_err().kind(), "timeout");
    // Each call restarts the process and times out in its initialize.
    assert_eq!(s.suggest(&step(1)).unwrap_err().kind(), "timeout");
    assert_eq!(s.suggest(&step(2)).unwrap_err().kind(), "timeout");
    let err = s.suggest(&step(3)).unwrap_err();
    assert_eq!(err.kind(), "gave_up");
    assert_eq!(
        err.to_string(),
        "not asked: the suggester failed 3 times in a row in this trajectory (last: timeout: suggester did not answer `initialize` within 2s)"
    );
    // Three time-outs as given, nothing more (the fourth call cost nothing).
    let took = started.elapsed();
    assert!(
        took >= 3 * limit && took < 3 * limit + Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(counter(&state, "initialize"), 3);
    // A new trajectory tries again.
    assert_eq!(s.initialize(&init()).unwrap_err().kind(), "timeout");
    assert_eq!(counter(&state, "initialize"), 4);
    s.shutdown();
}
