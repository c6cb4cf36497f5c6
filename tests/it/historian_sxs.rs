//! replay/historian_side_by_side.py against a stand-in "Historian"
//! (tests/fake_historian: its `simulation.main.rq3_origin` speaks the protocol the script
//! uses, nothing more), so the script cannot rot unseen: it replays the same commits
//! through the real binary, sandboxed, and compares. Faults are injected where the issue
//! found them: a nextedit whose SUT cannot read its side file (the script's
//! `--sandbox-ro` dropped), a Historian commit that fails, a difference no bug explains.

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

/// A `nextedit` that drops every `--sandbox-ro PATH` of a replay: the SUT's side file
/// is then outside its sandbox, as before the script mounted it.
fn without_sandbox_ro(dir: &Path) -> PathBuf {
    let path = dir.join("nextedit-without-ro");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nbin='{}'\nfor a in \"$@\"; do shift; if [ \"$skip\" = 1 ]; then skip=0; continue; fi\n\
             if [ \"$a\" = --sandbox-ro ]; then skip=1; continue; fi; set -- \"$@\" \"$a\"; done\nexec \"$bin\" \"$@\"\n",
            env!("CARGO_BIN_EXE_nextedit")
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
        .filter(|l| l.starts_with("steps differing:") || l.starts_with("   "))
        .filter(|l| !l.starts_with("            "))
        .collect();
    insta::assert_snapshot!("sxs_fake_summary", summary.join("\n"));
    assert!(!out.contains("UNEXPLAINED"), "{out}");
    assert!(out.contains("  ratio end to end: "), "{out}");

    // nextedit's SUT cannot read its side file: every step fails there, the script
    // says so and prints no speed-up.
    let fake_bin = without_sandbox_ro(tmp.path());
    let (code, out, err) = side_by_side(&fake_bin, "", &tmp.path().join("no-ro"));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(!out.contains("ratio"), "{out}");
    assert!(out.contains("FAILED: nextedit run FAILED: all "), "{out}");
    assert!(out.contains("FileNotFoundError"), "{out}");

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
    let (code, out, err) = side_by_side(bin, "shift", &tmp.path().join("shift"));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(out.contains("differing steps are UNEXPLAINED"), "{out}");
    assert!(!out.contains("ratio"), "{out}");
}
