//! EditFlow's annotated commits: read them, rebuild their files as a two-commit
//! git repository, and check that derived edits line up with EditFlow's hunks.
//!
//! An EditFlow commit file holds each changed file as a snapshot: a list of
//! unchanged line runs and edit objects (`before`/`after` lines, `idx`, ranges).
//! Concatenating unchanged runs with `before` gives the parent file, with `after`
//! the child. EditFlow's extraction dropped the newline of every file's last line;
//! [`rebuild_files`] puts it back on both sides (nearly all source files end with a
//! newline, and restoring it on both sides never creates or hides a hunk).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::HistoryError;
use super::order::AnnotatedPair;

/// One annotated commit, in EditFlow's per-commit format or the condensed list format.
#[derive(Debug, Clone, Deserialize)]
pub struct AnnotatedCommit {
    /// Source file name (condensed format) or empty.
    #[serde(default)]
    pub file: String,
    /// Language of the commit.
    #[serde(default)]
    pub language: String,
    /// `https://github.com/{owner}/{repo}/commit/{sha}`.
    pub commit_url: String,
    /// Commit message.
    #[serde(default)]
    pub commit_message: String,
    /// Path → snapshot, when the file carries the commit's contents.
    #[serde(default)]
    pub commit_snapshots: Option<BTreeMap<String, Vec<Value>>>,
    /// Labelled pairs.
    #[serde(default)]
    pub partial_orders: Vec<AnnotatedPair>,
}

impl AnnotatedCommit {
    /// The commit id at the end of `commit_url`.
    pub fn sha(&self) -> &str {
        self.commit_url.rsplit('/').next().unwrap_or("")
    }

    /// A short name: the file name without `.json`, else `project-sha`.
    pub fn name(&self) -> String {
        if !self.file.is_empty() {
            return self.file.trim_end_matches(".json").to_string();
        }
        let parts: Vec<&str> = self.commit_url.trim_end_matches('/').rsplit('/').collect();
        match parts.as_slice() {
            [sha, _, repo, ..] => format!("{repo}-{sha}"),
            _ => self.commit_url.clone(),
        }
    }
}

/// Reads annotated commits from a JSON file (one commit or a list) or a directory
/// of such files (sorted by name).
pub fn read_annotations(path: &Path) -> Result<Vec<AnnotatedCommit>, HistoryError> {
    let io = |source| HistoryError::Io {
        path: path.display().to_string(),
        source,
    };
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        entries.sort();
        let mut out = Vec::new();
        for entry in entries {
            let mut commits = read_annotations(&entry)?;
            for commit in &mut commits {
                if commit.file.is_empty() {
                    commit.file = entry
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                }
            }
            out.extend(commits);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    let json = |source| HistoryError::Json {
        path: path.display().to_string(),
        source,
    };
    let value: Value = serde_json::from_str(&text).map_err(json)?;
    if value.is_array() {
        serde_json::from_value(value).map_err(json)
    } else {
        Ok(vec![serde_json::from_value(value).map_err(json)?])
    }
}

/// One EditFlow edit's position, to check hunk numbering against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotHunk {
    /// EditFlow's global index.
    pub idx: usize,
    /// File path.
    pub file: String,
    /// Parent range `start..end`.
    pub parent: (usize, usize),
    /// Child range `start..end`.
    pub child: (usize, usize),
}

/// The parent and child versions of a commit's files (`None` = absent on that side).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuiltCommit {
    /// Path → parent bytes.
    pub parent: BTreeMap<String, Vec<u8>>,
    /// Path → child bytes.
    pub child: BTreeMap<String, Vec<u8>>,
    /// EditFlow's hunks, in its numbering.
    pub hunks: Vec<SnapshotHunk>,
}

fn lines_of(value: &Value, key: &str) -> Result<Vec<String>, HistoryError> {
    match value.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                HistoryError::Annotation(format!("edit field {key} holds a non-string line"))
            }),
        _ => Err(HistoryError::Annotation(format!(
            "edit without a {key} list"
        ))),
    }
}

fn range_of(value: &Value, key: &str) -> (usize, usize) {
    let get = |field: &str| value[key][field].as_u64().unwrap_or(0) as usize;
    (get("start"), get("end"))
}

/// Rebuilds parent and child files from EditFlow snapshots.
pub fn rebuild_files(
    snapshots: &BTreeMap<String, Vec<Value>>,
) -> Result<RebuiltCommit, HistoryError> {
    let mut rebuilt = RebuiltCommit::default();
    for (path, snapshot) in snapshots {
        let mut parent = String::new();
        let mut child = String::new();
        for element in snapshot {
            match element {
                Value::Array(lines) => {
                    for line in lines {
                        let line = line.as_str().ok_or_else(|| {
                            HistoryError::Annotation(format!("{path}: non-string unchanged line"))
                        })?;
                        parent.push_str(line);
                        child.push_str(line);
                    }
                }
                Value::Object(_) => {
                    lines_of(element, "before")?
                        .iter()
                        .for_each(|l| parent.push_str(l));
                    lines_of(element, "after")?
                        .iter()
                        .for_each(|l| child.push_str(l));
                    rebuilt.hunks.push(SnapshotHunk {
                        idx: element["idx"].as_u64().unwrap_or(u64::MAX) as usize,
                        file: path.clone(),
                        parent: range_of(element, "parent_version_range"),
                        child: range_of(element, "child_version_range"),
                    });
                }
                _ => {
                    return Err(HistoryError::Annotation(format!(
                        "{path}: snapshot element is neither lines nor an edit"
                    )));
                }
            }
        }
        for (text, side) in [(parent, &mut rebuilt.parent), (child, &mut rebuilt.child)] {
            if text.is_empty() {
                continue;
            }
            let mut text = text;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            side.insert(path.clone(), text.into_bytes());
        }
    }
    rebuilt.hunks.sort_by_key(|h| h.idx);
    Ok(rebuilt)
}

/// Creates a bare repository at `dir` holding the parent and child of `rebuilt`;
/// returns the child commit's id.
pub fn rebuild_repository(
    dir: &Path,
    rebuilt: &RebuiltCommit,
    message: &str,
) -> Result<String, HistoryError> {
    super::source::write_bare_repository(dir, &rebuilt.parent, &rebuilt.child, message)
}

/// Rebuilds `commit` into a fresh repository under `dir` and derives it.
pub fn derive_rebuilt(
    commit: &AnnotatedCommit,
    dir: &Path,
) -> Result<(crate::core::trajectory::Trajectory, RebuiltCommit), HistoryError> {
    derive_rebuilt_with(commit, dir, RebuiltLsp::PerCommit(None))
}

/// The `--lsp` pass of a rebuilt commit: none, servers started for it, or servers
/// kept across commits (their trees brought to each rebuilt commit file by file).
pub enum RebuiltLsp<'a> {
    /// Servers started for this commit (`None`: no pass).
    PerCommit(Option<&'a super::lsp::ServerSet>),
    /// Servers kept alive across the commits.
    Kept(&'a mut super::lsp_workspace::KeptWorkspace),
}

/// [`derive_rebuilt`], with the `--lsp` pass `lsp` says (the trees are written under
/// `dir` or into the kept workspace: the rebuilt commit holds only the changed files).
pub fn derive_rebuilt_with(
    commit: &AnnotatedCommit,
    dir: &Path,
    lsp: RebuiltLsp<'_>,
) -> Result<(crate::core::trajectory::Trajectory, RebuiltCommit), HistoryError> {
    use super::source::CommitSource;
    let snapshots = commit.commit_snapshots.as_ref().ok_or_else(|| {
        HistoryError::Annotation(format!(
            "{} carries no commit_snapshots to rebuild",
            commit.name()
        ))
    })?;
    let rebuilt = rebuild_files(snapshots)?;
    let repo_dir = dir.join("repo.git");
    let sha = rebuild_repository(&repo_dir, &rebuilt, &commit.commit_message)?;
    let repo = super::GitRepository::open(&repo_dir)?;
    let record = repo.load(&sha)?;
    let project = commit.name();
    let trajectory = match lsp {
        RebuiltLsp::PerCommit(None) => super::derive_commit(&record, Some(project.as_str()))?,
        RebuiltLsp::Kept(kept) => {
            super::derive::derive_kept(&repo, &record, Some(project.as_str()), kept)?.0
        }
        RebuiltLsp::PerCommit(Some(servers)) => {
            let parent_root = dir.join("parent");
            repo.checkout(&record.parents[0], &parent_root)?;
            let child_root = dir.join("commit");
            repo.checkout(&sha, &child_root)?;
            let setup = super::lsp::LspSetup {
                parent_root: Some(parent_root),
                child_root,
                servers: servers.clone(),
                timeout: super::derive::LSP_TIMEOUT,
                max_requests: super::derive::LSP_MAX_REQUESTS,
            };
            super::derive_commit_with_lsp(&record, Some(project.as_str()), &setup)?.0
        }
    };
    Ok((trajectory, rebuilt))
}

/// True when the derived edits are exactly EditFlow's hunks: same count, and each
/// index has the same file and parent/child ranges.
pub fn hunks_aligned(
    trajectory: &crate::core::trajectory::Trajectory,
    hunks: &[SnapshotHunk],
) -> bool {
    trajectory.edits.len() == hunks.len()
        && trajectory
            .edits
            .iter()
            .zip(hunks)
            .enumerate()
            .all(|(index, (edit, hunk))| {
                hunk.idx == index
                    && edit.file == hunk.file
                    && (edit.before_lines.start, edit.before_lines.end) == hunk.parent
                    && (edit.after_lines.start, edit.after_lines.end) == hunk.child
            })
}
