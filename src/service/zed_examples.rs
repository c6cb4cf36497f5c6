//! The file and repository side of `nextedit import zed-examples`: example files found
//! under directories, each example's repository found at `REPOS/OWNER/NAME` (or
//! `OWNER/NAME.git`; with `--fetch`, a missing one fetched there by `git_fetch`, its
//! revision only), the revision checked and the files read at it. The conversion
//! itself is the pure [`crate::core::import::zed_session`].
//!
//! And `nextedit export zed-examples`: a stored session's steps as examples
//! ([`session_examples`]), each edit rendered against the text replay would show
//! before it (`replay::state`), so an exported example imports to the same steps.

use std::path::{Path, PathBuf};

use crate::core::import::historian::{TestsetCommit, TestsetRepository};
use crate::core::import::zed_example::{
    CursorPosition, ExpectedPatch, ZedExample, ZedExampleError, parse,
};
use crate::core::import::zed_patch::render_hunk;
use crate::core::import::zed_session::{ZedSessionError, example_trajectory};
use crate::core::trajectory::{EventBody, SessionKind, SignalKind, Trajectory};
use crate::engine::history::source::GitRepository;
use crate::engine::replay::state::{ReplayState, StateError, split_lines};
use crate::service::git_fetch::fetch_repository;
use crate::service::import_io::{ImportReadError, files_under};

/// Why one example could not be imported (the batch goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum ZedImportError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not an example.
    #[error(transparent)]
    Parse(#[from] ZedExampleError),
    /// `repository_url` names no `OWNER/NAME`.
    #[error("repository_url `{0}` does not end in OWNER/NAME")]
    Url(String),
    /// The repository is not under `--repos` (and `--fetch` was not given).
    #[error("repository {url} not found: looked in {} (and {}.git); give --fetch to clone it there", dir.display(), dir.display())]
    MissingRepository {
        /// `repository_url`.
        url: String,
        /// The directory looked in.
        dir: PathBuf,
    },
    /// Fetching the repository failed.
    #[error("fetching {url} into {}: {reason}", dir.display())]
    Fetch {
        /// `repository_url`.
        url: String,
        /// Where.
        dir: PathBuf,
        /// git's reason.
        reason: String,
    },
    /// The repository does not open.
    #[error("{}: {reason}", dir.display())]
    Repository {
        /// The repository.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// The revision is not in the repository.
    #[error("revision {revision} is not a commit of {}", dir.display())]
    Revision {
        /// The revision.
        revision: String,
        /// The repository.
        dir: PathBuf,
    },
    /// The example does not apply to its revision.
    #[error(transparent)]
    Session(#[from] ZedSessionError),
}

/// The example files: each path that is a file, and every `*.md` under each path that
/// is a directory (recursively, sorted).
pub fn example_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ImportReadError> {
    files_under(paths, &|name| name.ends_with(".md"))
}

/// An example's name: its file's name without `.md`.
pub fn example_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `OWNER/NAME` of a repository URL (its last two path segments, `.git` dropped).
pub fn owner_name(url: &str) -> Option<String> {
    let mut segments = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .map(|s| s.trim_end_matches(".git"));
    let name = segments.next().filter(|s| !s.is_empty() && *s != "..")?;
    let owner = segments.next().filter(|s| !s.is_empty() && *s != "..")?;
    (name != "." && owner != ".").then(|| format!("{owner}/{name}"))
}

/// Reads the example at `path` and makes its trajectory against its repository under
/// `repos` (fetched there first when missing and `fetch`).
pub fn import_example(
    path: &Path,
    repos: &Path,
    fetch: bool,
) -> Result<Trajectory, ZedImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ZedImportError::Read {
        path: path.to_owned(),
        source,
    })?;
    let example = parse(&text)?;
    let dir = repository_dir(&example, repos, fetch)?;
    let repository = GitRepository::open(&dir).map_err(|e| ZedImportError::Repository {
        dir: dir.clone(),
        reason: e.to_string(),
    })?;
    if !repository.has_commit(&example.revision) {
        return Err(ZedImportError::Revision {
            revision: example.revision.clone(),
            dir,
        });
    }
    let tree =
        repository
            .commit_tree(&example.revision)
            .map_err(|e| ZedImportError::Repository {
                dir: dir.clone(),
                reason: e.to_string(),
            })?;
    let mut trajectory = example_trajectory(&example, &example_name(path), &|p| tree.text(p))?;
    trajectory.session.workspace = Some(dir.display().to_string());
    Ok(trajectory)
}

/// Where `example`'s repository is: `REPOS/OWNER/NAME`, else `REPOS/OWNER/NAME.git`,
/// else (with `fetch`) the latter fetched now.
fn repository_dir(
    example: &ZedExample,
    repos: &Path,
    fetch: bool,
) -> Result<PathBuf, ZedImportError> {
    let url = &example.repository_url;
    let name = owner_name(url).ok_or_else(|| ZedImportError::Url(url.clone()))?;
    let dir = repos.join(&name);
    let bare = repos.join(format!("{name}.git"));
    if let Some(found) = [&dir, &bare].into_iter().find(|d| d.is_dir()) {
        return Ok(found.clone());
    }
    if !fetch {
        return Err(ZedImportError::MissingRepository {
            url: url.clone(),
            dir,
        });
    }
    let outcome = fetch_repository(
        repos,
        &TestsetRepository {
            url: url.clone(),
            name,
            commits: vec![TestsetCommit {
                language: String::new(),
                sha: example.revision.clone(),
            }],
        },
    );
    let failed = outcome
        .error
        .or_else(|| outcome.failed.first().map(|(_, reason)| reason.clone()));
    match failed {
        Some(reason) => Err(ZedImportError::Fetch {
            url: url.clone(),
            dir: outcome.dir,
            reason,
        }),
        None => Ok(outcome.dir),
    }
}

/// What exporting one session gave: the files written, or why it was skipped.
#[derive(Debug)]
pub enum SessionExport {
    /// The example files written, in order.
    Written(Vec<PathBuf>),
    /// Why the session could not be exported.
    Skipped(String),
}

/// Writes the examples of stored sessions `ids` (every session when empty) into `out`
/// (made when absent; must be empty), one markdown file each, named after the example; `each(id, outcome)` hears
/// about every session.
pub fn export_sessions(
    db: &crate::store::Database,
    ids: &[i64],
    out: &Path,
    mut each: impl FnMut(i64, &SessionExport),
) -> Result<(), ZedExportError> {
    use crate::store::SessionRead;
    crate::service::dataset::write::check_empty(out)?;
    std::fs::create_dir_all(out).map_err(|source| ZedExportError::Write {
        path: out.to_owned(),
        source,
    })?;
    let ids = match ids {
        [] => {
            let mut all: Vec<i64> = db.sessions()?.iter().map(|s| s.id).collect();
            all.sort_unstable();
            all
        }
        ids => ids.to_vec(),
    };
    for id in ids {
        let spec = crate::core::trajectory::SliceSpec::default();
        let outcome = match crate::service::sessions::load_session_trajectory(db, id, &spec, None) {
            Err(e) => SessionExport::Skipped(crate::service::run::error_chain(&e)),
            Ok(trajectory) => match session_examples(&trajectory, id) {
                Err(e) => SessionExport::Skipped(e.to_string()),
                Ok(examples) if examples.is_empty() => {
                    SessionExport::Skipped("no step to export (fewer than two edits)".into())
                }
                Ok(examples) => SessionExport::Written(write_examples(out, &examples)?),
            },
        };
        each(id, &outcome);
    }
    Ok(())
}

/// Writes each example as `out/NAME.md`.
fn write_examples(
    out: &Path,
    examples: &[(String, ZedExample)],
) -> Result<Vec<PathBuf>, ZedExportError> {
    let mut written = Vec::new();
    for (name, example) in examples {
        let path = out.join(format!("{}.md", name.replace(['/', '\\'], "_")));
        std::fs::write(&path, crate::core::import::zed_example::render(example)).map_err(
            |source| ZedExportError::Write {
                path: path.clone(),
                source,
            },
        )?;
        written.push(path);
    }
    Ok(written)
}

/// Why an export could not go on.
#[derive(Debug, thiserror::Error)]
pub enum ZedExportError {
    /// The output directory is not empty or not readable.
    #[error(transparent)]
    Out(#[from] crate::service::dataset::write::WriteError),
    /// The database could not be read.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A session's steps as examples, each with its name: a session with gold next edits
/// (an imported example, a Copilot recording) is one example, the other edits its
/// history and the first next edit (with its alternatives) the expected patch, named
/// after its instance id; any other session gives one example per edit after its
/// first, in natural order, the edits before it its history (`session-N-step-K`).
pub fn session_examples(
    trajectory: &Trajectory,
    session: i64,
) -> Result<Vec<(String, ZedExample)>, StateError> {
    let mut state = ReplayState::new(trajectory)?;
    let ids = trajectory.edit_indices();
    let mut order: Vec<usize> = (trajectory.order.natural.iter())
        .filter_map(|id| ids.get(id.as_str()).map(|i| i.0))
        .collect();
    let rest: Vec<usize> = (0..trajectory.edits.len())
        .filter(|i| !order.contains(i))
        .collect();
    order.extend(rest);
    let gold = &trajectory.gold;
    let targets: Vec<usize> = match gold.next_edits.first() {
        Some(id) => ids.get(id.as_str()).map(|i| vec![i.0]).unwrap_or_default(),
        None => order.iter().skip(1).copied().collect(),
    };
    // Each edit as a diff in the text just before it (natural order; the targets last
    // when they are the gold's).
    let (history_order, targets_last): (Vec<usize>, bool) = match gold.next_edits.is_empty() {
        true => (order.clone(), false),
        false => (
            order
                .iter()
                .copied()
                .filter(|i| !targets.contains(i))
                .collect(),
            true,
        ),
    };
    let mut history = String::new();
    let mut examples = Vec::new();
    for &idx in &history_order {
        if !targets_last && targets.contains(&idx) && !history.is_empty() {
            let name = format!("session-{session}-step-{}", examples.len() + 1);
            examples.push((name, example_at(trajectory, &state, idx, &history)));
        }
        history.push_str(&edit_diff(&state, idx));
        state.apply(idx);
    }
    if targets_last && let Some(&target) = targets.first() {
        let name = gold
            .instance_id
            .clone()
            .unwrap_or(format!("session-{session}"));
        examples.push((name, example_at(trajectory, &state, target, &history)));
    }
    Ok(examples)
}

/// Edit `idx` as one file's diff against the current text.
fn edit_diff(state: &ReplayState, idx: usize) -> String {
    let edit = &state.edits()[idx];
    let (start, end) = state.current_range(idx);
    let lines = state.lines(&edit.file).unwrap_or_default();
    let hunk = render_hunk(lines, start, end, &edit.after);
    format!("--- a/{0}\n+++ b/{0}\n{hunk}", edit.file)
}

/// The example asking for edit `target` (and its alternatives) in the current state.
fn example_at(
    trajectory: &Trajectory,
    state: &ReplayState,
    target: usize,
    history: &str,
) -> ZedExample {
    let edit = &state.edits()[target];
    let lines = state.lines(&edit.file).unwrap_or_default();
    let mut expected = vec![edit_diff(state, target)];
    for alternative in trajectory
        .gold
        .alternatives
        .iter()
        .filter(|a| a.of == edit.id)
    {
        let end = alternative.start_line + split_lines(&alternative.before_text).len();
        if end <= lines.len() {
            let hunk = render_hunk(
                lines,
                alternative.start_line,
                end,
                &split_lines(&alternative.after_text),
            );
            expected.push(format!("--- a/{0}\n+++ b/{0}\n{hunk}", edit.file));
        }
    }
    let session = &trajectory.session;
    // A derived session starts from its commit's parent; the others from their HEAD.
    let revision = (session.commit.as_ref())
        .and_then(|c| c.parent.clone())
        .filter(|_| session.kind == SessionKind::Commit)
        .or_else(|| session.git_head.clone());
    ZedExample {
        name: String::new(),
        repository_url: repository_url(trajectory),
        revision: revision.unwrap_or_default(),
        edit_history: history.to_string(),
        cursor: cursor_at(trajectory, lines, &edit.file, state.current_range(target).0),
        expected: expected
            .into_iter()
            .map(|diff| ExpectedPatch {
                diff,
                selections: Vec::new(),
                cursor: None,
            })
            .collect(),
    }
}

/// The session's repository URL, else its workspace's directory as a `file://` URL
/// when it is absolute and exists (a derived or recorded session's checkout), else empty.
fn repository_url(trajectory: &Trajectory) -> String {
    let session = &trajectory.session;
    let workspace = || {
        // A relative one (`derive --repo .`) says nothing once the command has ended.
        let dir = Path::new(session.workspace.as_ref()?);
        let dir = std::fs::canonicalize(dir.is_absolute().then_some(dir)?).ok()?;
        dir.is_dir().then(|| format!("file://{}", dir.display()))
    };
    (session.repository_url.clone())
        .or_else(workspace)
        .unwrap_or_default()
}

/// The cursor block: the session's last cursor signal in `file` (an imported example's
/// cursor), else the start of the expected edit; five lines around it as the excerpt.
fn cursor_at(
    trajectory: &Trajectory,
    lines: &[String],
    file: &str,
    start: usize,
) -> CursorPosition {
    let signalled = trajectory.events.iter().rev().find_map(|e| match &e.body {
        EventBody::Signal(s) if s.kind == SignalKind::Cursor && s.file.as_deref() == Some(file) => {
            Some((
                s.payload["line"].as_u64()? as usize,
                s.payload["character"].as_u64()? as usize,
            ))
        }
        _ => None,
    });
    let (line, column) = signalled
        .filter(|(l, _)| *l < lines.len())
        .unwrap_or_else(|| {
            // The marker's `#` takes column 0: a cursor there cannot be written.
            let line = start.min(lines.len().saturating_sub(1));
            let indent = lines
                .get(line)
                .map_or(0, |l| l.len() - l.trim_start().len());
            (line, indent.max(1))
        });
    let from = line.saturating_sub(5);
    let to = (line + 6).min(lines.len());
    let mut excerpt = lines[from..to].concat();
    if !excerpt.is_empty() && !excerpt.ends_with('\n') {
        excerpt.push('\n');
    }
    CursorPosition {
        path: file.to_string(),
        excerpt,
        line: line - from,
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_urls_name_their_owner_and_repository() {
        let cases = [
            ("https://github.com/pallets/flask", Some("pallets/flask")),
            (
                "https://github.com/pallets/flask.git/",
                Some("pallets/flask"),
            ),
            ("git@github.com:pallets/flask.git", Some("pallets/flask")),
            ("file:///tmp/x/o/r", Some("o/r")),
            ("flask", None),
            ("https://h/../x", None),
        ];
        for (url, expected) in cases {
            assert_eq!(owner_name(url).as_deref(), expected, "{url}");
        }
    }
}
