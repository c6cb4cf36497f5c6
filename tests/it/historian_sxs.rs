//! replay/historian_side_by_side.py against a stand-in "Historian"
//! (tests/fake_historian: its `simulation.main.rq3_origin` speaks the protocol the script
//! uses, nothing more), so the script cannot rot unseen: it replays the same commits
//! through the real binary, sandboxed, and compares. Faults are injected where the issue
//! found them: a nextedit whose SUT cannot read its side file, one whose SUT is not told
//! the commit, a Historian commit that fails, a difference no bug explains.

use std::path::{Path, PathBuf};
use std::process::Output;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs the side-by-side script with `nextedit` as the binary and `fake` as
/// FAKE_HISTORIAN; (exit code, stdout, stderr).
fn side_by_side(nextedit: &Path, fake: &str, work: &Path) -> (Option<i32>, String, String) {
    let out: Output = std::process::Command::new("python3")
        .arg(Path::new(ROOT).join("replay/historian_side_by_side.py"))
        .arg("--historian")
        .arg(Path::new(ROOT).join("tests/fake_historian"))
        .arg("--nextedit")
        .arg(nextedit)
        .arg("--workdir")
        .arg(work)
        .env("FAKE_HISTORIAN", fake)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `nextedit` that breaks the script's replay as the issue found it broken: `target`
/// names the SUT's side file where the sandbox has none (every call fails), `reveal`
/// drops `--reveal commit` (the SUT, keyed on the commit, predicts nothing).
fn broken_nextedit(dir: &Path, how: &str) -> PathBuf {
    let path = dir.join(format!("nextedit-{how}"));
    std::fs::write(
        &path,
        format!(
            "#!/usr/bin/env python3\nimport os, re, sys\nbin, args = {bin:?}, sys.argv[1:]\n\
             if {how:?} == 'target':\n    args = [re.sub(r'SXS_TARGET=\\S+', 'SXS_TARGET=/nonexistent/target.json', a) for a in args]\n\
             elif 'commit' in args:\n    i = args.index('commit')\n    del args[i - 1:i + 1]\n\
             os.execv(bin, [bin] + args)\n",
            bin = env!("CARGO_BIN_EXE_nextedit"),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn the_side_by_side_compares_explains_every_difference_and_fails_when_it_measured_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_nextedit"));
    let work = tmp.path().join("ok");
    let (code, out, err) = side_by_side(bin, "", &work);
    assert_eq!(code, Some(0), "{out}\n{err}");
    // Every commit compared, every difference explained (bug 19: the wrong guess on
    // line 0 sits on an applied edit), the ratios printed.
    let summary: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("steps differing:"))
        .take_while(|l| !l.starts_with("wall time"))
        .collect();
    insta::assert_snapshot!("sxs_fake_summary", summary.join("\n"));
    assert!(!out.contains("UNEXPLAINED"), "{out}");
    assert!(out.contains("  ratio end to end: "), "{out}");

    // nextedit's SUT cannot read its side file: every step fails there, the script
    // says so and prints no speed-up.
    let (code, out, err) = side_by_side(
        &broken_nextedit(tmp.path(), "target"),
        "",
        &tmp.path().join("t"),
    );
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(!out.contains("ratio"), "{out}");
    assert!(
        out.contains(
            "FAILED: nextedit run FAILED: all 19 suggest calls failed (error_response 19)"
        ),
        "{out}"
    );
    assert!(
        out.contains("FAILED: nextedit demo: 4 calls failed in 4 steps (the first, step 1 suggest: error_response: suggester failed `suggest` with code -32000: FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/target.json')"),
        "{out}"
    );
    // Its SUT does not learn the commit: it predicts nothing, which no bug explains.
    let (code, out, err) = side_by_side(
        &broken_nextedit(tmp.path(), "reveal"),
        "",
        &tmp.path().join("r"),
    );
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains("why: UNEXPLAINED: nextedit predicted nothing"),
        "{out}"
    );
    assert!(!out.contains("ratio"), "{out}");

    // A Historian commit that fails, and a difference no bug explains.
    let (code, out, err) = side_by_side(bin, "crash", &tmp.path().join("crash"));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains(
            "FAILED: Historian failed on rename: RuntimeError: fake Historian: this commit fails"
        ),
        "{out}"
    );
    assert!(!out.contains("ratio"), "{out}");
    let (code, out, err) = side_by_side(bin, "jump", &tmp.path().join("jump"));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(out.contains("J/K: UNEXPLAINED"), "{out}");
    assert!(out.contains("differing steps are UNEXPLAINED"), "{out}");
    assert!(!out.contains("ratio"), "{out}");
}
