//! A changed file → its edits: maximal runs of changed lines (Historian semantics).
//!
//! Blocks come from libgit2's xdiff ([`super::source::diff_hunks`]: Myers with the
//! indent heuristic, no context),
//! which is git's own algorithm, so block boundaries equal `git diff -U0` hunks and
//! therefore EditFlow's hunk numbering. Lines keep their terminators (`\n`, `\r\n`,
//! or none for a last line without newline), so CRLF files and missing final
//! newlines survive exactly; [`check_round_trip`] proves it for every file.

use std::path::Path;

use crate::core::syntax::Language;
use crate::core::trajectory::{EditKind, LineRange};

use super::HistoryError;
use super::source::{ChangeStatus, EntryKind, FileChange, GitError, diff_hunks};

/// Lines of unchanged context kept on each side of an edit (Historian keeps 3).
pub const CONTEXT_LINES: usize = 3;

/// One block of changed lines, 0-based half-open ranges in parent and child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineBlock {
    /// Lines removed from the parent.
    pub old: LineRange,
    /// Lines added in the child.
    pub new: LineRange,
}

/// One edit of one file, before structure and dependencies are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineEdit {
    /// Insert, delete or replace.
    pub kind: EditKind,
    /// Lines replaced in the parent.
    pub before: LineRange,
    /// Lines inserted in the child.
    pub after: LineRange,
    /// Text of the replaced lines, terminators included.
    pub before_text: String,
    /// Text of the inserted lines, terminators included.
    pub after_text: String,
    /// Up to [`CONTEXT_LINES`] unchanged lines above (bounded by the previous edit).
    pub context_before: Vec<String>,
    /// Up to [`CONTEXT_LINES`] unchanged lines below (bounded by the next edit).
    pub context_after: Vec<String>,
}

/// Why a changed file contributes no edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A NUL byte in the first 8000 bytes (git's binary test).
    Binary,
    /// Not valid UTF-8; trajectories hold text, and guessing an encoding would mangle it.
    NotUtf8 {
        /// `parent` or `commit`.
        side: &'static str,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// A dependency directory or lock file (`vendor/`, `node_modules/`, `go.sum`…).
    Vendored(&'static str),
    /// A generated file (`Code generated … DO NOT EDIT`, `@generated`, `*.pb.go`…).
    Generated(&'static str),
    /// A symbolic link.
    Symlink,
    /// A submodule commit pointer.
    Submodule,
    /// The file's name is not valid UTF-8 (the path shows its bytes as `%XX`).
    PathNotUtf8,
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::Binary => write!(f, "binary file"),
            SkipReason::NotUtf8 { side, offset } => {
                write!(f, "not valid UTF-8 in the {side} version (byte {offset})")
            }
            SkipReason::Vendored(what) => write!(f, "vendored file ({what})"),
            SkipReason::Generated(what) => write!(f, "generated file ({what})"),
            SkipReason::Symlink => write!(f, "symbolic link"),
            SkipReason::Submodule => write!(f, "submodule"),
            SkipReason::PathNotUtf8 => write!(f, "file name not valid UTF-8 (shown as %XX)"),
        }
    }
}

/// A changed file after extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdits {
    /// Path in the commit (or in the parent for a deleted file).
    pub path: String,
    /// Path in the parent when it differs (renames).
    pub old_path: Option<String>,
    /// How the file changed.
    pub status: ChangeStatus,
    /// Language recognised from the path, if any.
    pub language: Option<Language>,
    /// Parent text (`None` when added or skipped).
    pub old_text: Option<String>,
    /// Commit text (`None` when deleted or skipped).
    pub new_text: Option<String>,
    /// Edits top to bottom; empty when skipped or unchanged (a pure rename).
    pub edits: Vec<LineEdit>,
    /// Why the file has no edits although it changed.
    pub skipped: Option<SkipReason>,
}

/// Splits bytes into lines, each keeping its `\n` (the last may have none).
pub fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::new();
    let mut start = 0;
    for newline in memchr::memchr_iter(b'\n', bytes) {
        lines.push(&bytes[start..=newline]);
        start = newline + 1;
    }
    if start < bytes.len() {
        lines.push(&bytes[start..]);
    }
    lines
}

/// The change blocks between two texts, exactly as `git diff -U0` shows them.
pub fn change_blocks(old: &[u8], new: &[u8]) -> Result<Vec<LineBlock>, GitError> {
    // Hunk headers are 1-based; an empty side names the line *before* the gap.
    let side = |start: u32, len: u32| {
        let (start, len) = (start as usize, len as usize);
        let first = if len == 0 { start } else { start - 1 };
        LineRange::new(first, first + len)
    };
    Ok(diff_hunks(old, new)?
        .into_iter()
        .map(|hunk| LineBlock {
            old: side(hunk.old_start, hunk.old_lines),
            new: side(hunk.new_start, hunk.new_lines),
        })
        .collect())
}

fn lossless(lines: &[&[u8]]) -> String {
    // Callers only pass lines of validated UTF-8 text, split at `\n` boundaries.
    lines
        .iter()
        .map(|l| std::str::from_utf8(l).expect("validated UTF-8"))
        .collect()
}

fn owned_lines(lines: &[&[u8]]) -> Vec<String> {
    lines.iter().map(|l| lossless(&[l])).collect()
}

/// Turns the blocks of one file into edits with text and context.
pub fn edits_from_blocks(old: &str, new: &str, blocks: &[LineBlock]) -> Vec<LineEdit> {
    let old_lines = split_lines(old.as_bytes());
    let new_lines = split_lines(new.as_bytes());
    let mut edits = Vec::with_capacity(blocks.len());
    for (index, block) in blocks.iter().enumerate() {
        let previous_end = if index == 0 {
            0
        } else {
            blocks[index - 1].old.end
        };
        let next_start = blocks
            .get(index + 1)
            .map(|b| b.old.start)
            .unwrap_or(old_lines.len());
        let above_start = block
            .old
            .start
            .saturating_sub(CONTEXT_LINES)
            .max(previous_end);
        let below_end = (block.old.end + CONTEXT_LINES).min(next_start);
        let kind = match (block.old.is_empty(), block.new.is_empty()) {
            (true, _) => EditKind::Insert,
            (false, true) => EditKind::Delete,
            (false, false) => EditKind::Replace,
        };
        edits.push(LineEdit {
            kind,
            before: block.old,
            after: block.new,
            before_text: lossless(&old_lines[block.old.start..block.old.end]),
            after_text: lossless(&new_lines[block.new.start..block.new.end]),
            context_before: owned_lines(&old_lines[above_start..block.old.start]),
            context_after: owned_lines(&old_lines[block.old.end..below_end]),
        });
    }
    edits
}

/// Applies a file's edits to its parent text, giving what the child should be.
pub fn apply_edits(old: &str, edits: &[LineEdit]) -> String {
    let old_lines = split_lines(old.as_bytes());
    let mut out = String::with_capacity(old.len());
    let mut next = 0;
    for edit in edits {
        out.push_str(&lossless(&old_lines[next..edit.before.start]));
        out.push_str(&edit.after_text);
        next = edit.before.end;
    }
    out.push_str(&lossless(&old_lines[next.min(old_lines.len())..]));
    out
}

/// How a file's edits fail to rebuild its commit text.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoundTripError {
    /// An edit's parent lines are not in the file.
    #[error("edit at parent lines {start}..{end} lies outside the file")]
    Outside {
        /// First parent line.
        start: usize,
        /// One past the last.
        end: usize,
    },
    /// An edit's before-text is not what the parent holds there.
    #[error("edit at parent lines {start}..{end} does not match the parent text")]
    Mismatch {
        /// First parent line.
        start: usize,
        /// One past the last.
        end: usize,
    },
    /// The edits applied give another text.
    #[error(
        "applying the edits gives {rebuilt} bytes, the commit has {commit} (first difference at byte {first})"
    )]
    Differs {
        /// Length of the rebuilt text.
        rebuilt: usize,
        /// Length of the commit's text.
        commit: usize,
        /// First byte that differs.
        first: usize,
    },
    /// An edit does not apply as a change event (derive's events).
    #[error("replaying edit e{index}: {source}")]
    Replay {
        /// The edit's index.
        index: usize,
        /// Why.
        source: crate::core::trajectory::ApplyError,
    },
    /// The change events applied in natural order give another text.
    #[error("replaying the change events in natural order does not give the commit's text")]
    Events,
}

/// Checks that applying `edits` to `old` gives `new` byte for byte, and that each
/// edit's before-text is what the parent holds at its range.
pub fn check_round_trip(old: &str, new: &str, edits: &[LineEdit]) -> Result<(), RoundTripError> {
    let old_lines = split_lines(old.as_bytes());
    for edit in edits {
        let at = old_lines
            .get(edit.before.start..edit.before.end)
            .map(lossless)
            .ok_or(RoundTripError::Outside {
                start: edit.before.start,
                end: edit.before.end,
            })?;
        if at != edit.before_text {
            return Err(RoundTripError::Mismatch {
                start: edit.before.start,
                end: edit.before.end,
            });
        }
    }
    let rebuilt = apply_edits(old, edits);
    if rebuilt.as_bytes() != new.as_bytes() {
        let first = rebuilt
            .bytes()
            .zip(new.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(rebuilt.len().min(new.len()));
        return Err(RoundTripError::Differs {
            rebuilt: rebuilt.len(),
            commit: new.len(),
            first,
        });
    }
    Ok(())
}

/// True when git would call the content binary (a NUL in the first 8000 bytes).
pub fn looks_binary(bytes: &[u8]) -> bool {
    const GIT_BINARY_PROBE: usize = 8000;
    memchr::memchr(0, &bytes[..bytes.len().min(GIT_BINARY_PROBE)]).is_some()
}

/// A dependency or lock file that a developer does not edit by hand.
pub fn vendored_reason(path: &str) -> Option<&'static str> {
    const DIRECTORIES: [&str; 5] = [
        "vendor",
        "node_modules",
        "third_party",
        "bower_components",
        "site-packages",
    ];
    const LOCK_FILES: [&str; 8] = [
        "go.sum",
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "Cargo.lock",
        "poetry.lock",
        "Pipfile.lock",
        "composer.lock",
    ];
    let components: Vec<&str> = path.split('/').collect();
    let (file, directories) = components.split_last()?;
    if let Some(directory) = directories.iter().find(|d| DIRECTORIES.contains(d)) {
        return DIRECTORIES.iter().copied().find(|d| d == directory);
    }
    LOCK_FILES.iter().copied().find(|name| name == file)
}

/// A generated file, by name or by the marker generators put in the first lines.
pub fn generated_reason(path: &str, text: &[u8]) -> Option<&'static str> {
    const SUFFIXES: [&str; 5] = [".min.js", ".min.css", ".pb.go", "_pb2.py", ".pb.h"];
    if let Some(suffix) = SUFFIXES.iter().copied().find(|s| path.ends_with(s)) {
        return Some(suffix);
    }
    let head = &text[..text.len().min(1024)];
    let head = String::from_utf8_lossy(head);
    let first_lines: Vec<&str> = head.lines().take(5).collect();
    if first_lines
        .iter()
        .any(|l| l.contains("Code generated") && l.contains("DO NOT EDIT"))
    {
        return Some("Code generated … DO NOT EDIT");
    }
    if first_lines.iter().any(|l| l.contains("@generated")) {
        return Some("@generated");
    }
    None
}

fn utf8(bytes: &[u8], side: &'static str) -> Result<String, SkipReason> {
    String::from_utf8(bytes.to_vec()).map_err(|e| SkipReason::NotUtf8 {
        side,
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Extracts the edits of one changed file of commit `sha`.
///
/// Skips (with a reason) what is not hand-written text; fails only when the
/// diff engine fails or the edits do not rebuild the commit's bytes exactly.
pub fn extract_file(sha: &str, change: &FileChange) -> Result<FileEdits, HistoryError> {
    let path = change.path().to_string();
    let mut file = FileEdits {
        path: path.clone(),
        old_path: match change.status {
            ChangeStatus::Renamed => change.old_path.clone(),
            _ => None,
        },
        status: change.status,
        language: Language::from_path(Path::new(&path)),
        old_text: None,
        new_text: None,
        edits: Vec::new(),
        skipped: None,
    };
    let old_bytes = change.old.as_deref();
    let new_bytes = change.new.as_deref();
    let skip = match change.entry {
        EntryKind::Symlink => Some(SkipReason::Symlink),
        EntryKind::Submodule => Some(SkipReason::Submodule),
        EntryKind::File => None,
    }
    .or(change.path_not_utf8.then_some(SkipReason::PathNotUtf8))
    .or_else(|| vendored_reason(&path).map(SkipReason::Vendored))
    .or_else(|| {
        (old_bytes.is_some_and(looks_binary) || new_bytes.is_some_and(looks_binary))
            .then_some(SkipReason::Binary)
    })
    .or_else(|| {
        generated_reason(&path, new_bytes.or(old_bytes).unwrap_or(&[])).map(SkipReason::Generated)
    });
    if let Some(reason) = skip {
        file.skipped = Some(reason);
        return Ok(file);
    }
    let old_text = match old_bytes.map(|b| utf8(b, "parent")).transpose() {
        Ok(text) => text,
        Err(reason) => {
            file.skipped = Some(reason);
            return Ok(file);
        }
    };
    let new_text = match new_bytes.map(|b| utf8(b, "commit")).transpose() {
        Ok(text) => text,
        Err(reason) => {
            file.skipped = Some(reason);
            return Ok(file);
        }
    };
    let old = old_text.as_deref().unwrap_or("");
    let new = new_text.as_deref().unwrap_or("");
    let blocks =
        change_blocks(old.as_bytes(), new.as_bytes()).map_err(|source| HistoryError::Git {
            commit: sha.to_string(),
            what: "diffing a file",
            source,
        })?;
    file.edits = edits_from_blocks(old, new, &blocks);
    check_round_trip(old, new, &file.edits).map_err(|detail| HistoryError::RoundTrip {
        commit: sha.to_string(),
        file: path.clone(),
        detail,
    })?;
    file.old_text = old_text;
    file.new_text = new_text;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_git_numbering() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nB\nc\nd\ne\n";
        let blocks = change_blocks(old.as_bytes(), new.as_bytes()).unwrap();
        assert_eq!(
            blocks,
            vec![
                LineBlock {
                    old: LineRange::new(1, 2),
                    new: LineRange::new(1, 2)
                },
                LineBlock {
                    old: LineRange::new(4, 4),
                    new: LineRange::new(4, 5)
                },
            ]
        );
        let edits = edits_from_blocks(old, new, &blocks);
        assert_eq!(edits[0].kind, EditKind::Replace);
        assert_eq!(edits[0].context_before, vec!["a\n".to_string()]);
        assert_eq!(
            edits[0].context_after,
            vec!["c\n".to_string(), "d\n".to_string()]
        );
        assert_eq!(edits[1].kind, EditKind::Insert);
        assert_eq!(
            edits[1].context_before,
            vec!["c\n".to_string(), "d\n".to_string()]
        );
        check_round_trip(old, new, &edits).unwrap();
    }

    #[test]
    fn final_newline_and_crlf_round_trip() {
        for (old, new) in [
            ("x\r\ny\r\n", "x\r\nz\r\n"),
            ("x\ny", "x\ny\n"),
            ("x\ny\n", "x\ny"),
            ("", "a"),
            ("a", ""),
        ] {
            let blocks = change_blocks(old.as_bytes(), new.as_bytes()).unwrap();
            let edits = edits_from_blocks(old, new, &blocks);
            check_round_trip(old, new, &edits).unwrap();
            assert_eq!(apply_edits(old, &edits), new);
        }
    }

    #[test]
    fn a_wrong_edit_is_caught_and_named() {
        let old = "a\nb\n";
        let new = "a\nc\n";
        let blocks = change_blocks(old.as_bytes(), new.as_bytes()).unwrap();
        let mut edits = edits_from_blocks(old, new, &blocks);
        edits[0].after_text = "C\n".into();
        let detail = check_round_trip(old, new, &edits).unwrap_err();
        assert_eq!(
            detail.to_string(),
            "applying the edits gives 4 bytes, the commit has 4 (first difference at byte 2)"
        );
        edits[0].before_text = "x\n".into();
        assert_eq!(
            check_round_trip(old, new, &edits).unwrap_err().to_string(),
            "edit at parent lines 1..2 does not match the parent text"
        );
        let error = HistoryError::RoundTrip {
            commit: "abc".into(),
            file: "f.py".into(),
            detail,
        };
        assert_eq!(
            error.to_string(),
            "commit abc, file f.py: edits do not reproduce the commit: applying the edits gives 4 bytes, the commit has 4 (first difference at byte 2)"
        );
    }

    #[test]
    fn recognises_vendored_and_generated() {
        assert_eq!(vendored_reason("vendor/github.com/x/y.go"), Some("vendor"));
        assert_eq!(
            vendored_reason("web/package-lock.json"),
            Some("package-lock.json")
        );
        assert_eq!(vendored_reason("src/vendors.py"), None);
        assert_eq!(generated_reason("api/x.pb.go", b""), Some(".pb.go"));
        assert_eq!(
            generated_reason(
                "a.go",
                b"// Code generated by stringer. DO NOT EDIT.\npackage a\n"
            ),
            Some("Code generated … DO NOT EDIT")
        );
        assert_eq!(generated_reason("a.go", b"package a\n"), None);
    }
}
