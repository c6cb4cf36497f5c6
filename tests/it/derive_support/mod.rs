//! Real git repositories for derive tests, made with the git CLI under a
//! hermetic configuration (no user or system config, fixed author and dates), so
//! commit ids and diffs are the same on every machine.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use nextedit::core::trajectory::{OrderKind, Trajectory};
use nextedit::engine::history::{CommitSource, GitRepository, derive_commit};

/// A temporary repository with a work tree.
pub struct TestRepo {
    dir: tempfile::TempDir,
    ticks: u32,
}

impl TestRepo {
    /// `git init` in a fresh temporary directory.
    pub fn new() -> TestRepo {
        let repo = TestRepo {
            dir: tempfile::tempdir().unwrap(),
            ticks: 0,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// The work tree.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git with a hermetic environment; panics with its stderr on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let date = format!("2024-01-01T00:00:{:02}Z", self.ticks);
        let output = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Writes a file (creating directories).
    pub fn write(&self, path: &str, bytes: impl AsRef<[u8]>) {
        let full = self.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, bytes).unwrap();
    }

    /// Removes a file.
    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.path().join(path)).unwrap();
    }

    /// Stages everything and commits; returns the full commit id.
    pub fn commit(&mut self, message: &str) -> String {
        self.ticks += 1;
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    /// Derives a commit through the git2 source.
    pub fn derive(&self, rev: &str) -> Result<Trajectory, nextedit::engine::history::HistoryError> {
        let repo = GitRepository::open(self.path())?;
        let sha = repo.resolve(rev)?;
        derive_commit(&repo.load(&sha)?, Some("test"))
    }

    /// Path buffer of the work tree.
    pub fn path_buf(&self) -> PathBuf {
        self.path().to_path_buf()
    }
}

/// One edit as `(id, file, kind, before range, after range)`.
pub type EditRow = (String, String, String, (usize, usize), (usize, usize));

/// Edits as rows for compact asserts.
pub fn edit_rows(t: &Trajectory) -> Vec<EditRow> {
    t.edits
        .iter()
        .map(|e| {
            (
                e.id.clone(),
                e.file.clone(),
                format!("{:?}", e.kind).to_lowercase(),
                (e.before_lines.start, e.before_lines.end),
                (e.after_lines.start, e.after_lines.end),
            )
        })
        .collect()
}

/// Edges as `"from-to kind: reason/detail, …"` strings for compact asserts.
pub fn edge_rows(t: &Trajectory) -> Vec<String> {
    t.order
        .edges
        .iter()
        .map(|e| {
            let kind = match e.kind {
                OrderKind::Bi => "bi",
                OrderKind::Before => "before",
            };
            let reasons: Vec<String> = e
                .reasons
                .iter()
                .map(|r| format!("{}/{}", r.kind, r.detail))
                .collect();
            format!("{}-{} {kind}: {}", e.from, e.to, reasons.join(", "))
        })
        .collect()
}

/// Applies every edit of `t` to its files' base texts and checks the final texts.
pub fn assert_edits_rebuild_commit(t: &Trajectory) {
    for file in &t.files {
        if file.skipped.is_some() {
            continue;
        }
        let mut text = file.base_text.clone().unwrap_or_default();
        let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
        let mut edits: Vec<_> = t.edits.iter().filter(|e| e.file == file.path).collect();
        edits.sort_by_key(|e| std::cmp::Reverse(e.before_lines.start));
        for edit in edits {
            let replaced: String = lines[edit.before_lines.start..edit.before_lines.end].concat();
            assert_eq!(replaced, edit.before_text, "{} {}", file.path, edit.id);
            let after: Vec<String> = edit
                .after_text
                .split_inclusive('\n')
                .map(str::to_string)
                .collect();
            lines.splice(edit.before_lines.start..edit.before_lines.end, after);
        }
        text = lines.concat();
        assert_eq!(
            Some(text),
            file.final_text.clone().or(Some(String::new())),
            "{}",
            file.path
        );
    }
}

/// Applies the change events in order (byte offsets in the current text) and
/// checks that every file ends at its final text.
pub fn assert_events_rebuild_commit(t: &Trajectory) {
    use nextedit::core::trajectory::EventBody;
    let mut texts: std::collections::BTreeMap<String, String> = t
        .files
        .iter()
        .map(|f| (f.path.clone(), f.base_text.clone().unwrap_or_default()))
        .collect();
    for event in &t.events {
        let EventBody::Change(change) = &event.body else {
            panic!("only change events")
        };
        let text = texts.get_mut(&change.file).unwrap();
        nextedit::core::trajectory::apply_byte_edit(
            text,
            change.start_byte,
            change.end_byte,
            &change.before,
            &change.after,
        )
        .unwrap();
    }
    for file in &t.files {
        if file.skipped.is_none() {
            assert_eq!(
                texts[&file.path],
                file.final_text.clone().unwrap_or_default(),
                "{}",
                file.path
            );
        }
    }
}

/// A project with an untouched README whose last commit renames a function across two
/// files (three changed lines, each keeping most of its tokens: its unchanged form has
/// BLEU-4 > 50).
pub fn rename_repo() -> TestRepo {
    let mut repo = TestRepo::new();
    repo.write("README.md", "# demo\n");
    repo.write(
        "pkg/prices.py",
        "def total_price(items):\n    return sum(items)\n\n\ndef describe(items):\n    return total_price(items)\n",
    );
    repo.write(
        "app.py",
        "from pkg.prices import total_price\n\nprint(total_price([1, 2]))\n",
    );
    repo.commit("base");
    repo.write(
        "pkg/prices.py",
        "def subtotal(items):\n    return sum(items)\n\n\ndef describe(items):\n    return subtotal(items)\n",
    );
    repo.write(
        "app.py",
        "from pkg.prices import subtotal\n\nprint(subtotal([1, 2]))\n",
    );
    repo.commit("rename total_price to subtotal");
    repo
}
