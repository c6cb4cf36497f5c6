//! The I/O edge of cutting: commits read through `history::source::GitRepository`
//! (`tree_texts` and `load`: each commit's tree, its changes against its parent and the
//! lines they touched) and
//! sessions loaded through `sessions::load_session_trajectory`, handed to the pure
//! cutters ([`crate::engine::task::cut`], [`crate::engine::task::session`]).
//!
//! Batch rule: a commit that cannot be cut (a merge, unreadable, nothing cuttable in
//! what it touched) is skipped with its reason; the caller fails when nothing at all
//! was cut.

use std::collections::BTreeMap;
use std::path::Path;

use crate::core::syntax::Language;
use crate::core::syntax::structure::analyze;
use crate::core::trajectory::{SliceSpec, Trajectory};
use crate::engine::history::source::diff_hunks;
use crate::engine::history::{CommitSource, GitRepository, HistoryError};
use crate::engine::suggest::retrieve::index::ChunkIndex;
use crate::engine::task::coverage::TestIndex;
use crate::engine::task::cut::{
    ChangedFile, CommitInput, ContextOptions, CutOptions, SplitMix, annotate, cut_commit,
    retrieve_context,
};
use crate::engine::task::retrieval::{RetrieveError, Retriever};
use crate::engine::task::session::{Pause, pauses};
use crate::engine::task::{
    ContextFrom, Scenario, StateFile, TASK_FORMAT_VERSION, Task, TaskSource, TaskState,
};
use crate::service::sessions::{SessionLoadError, load_session_trajectory};
use crate::store::Database;

/// Largest file of a state read as text (bigger ones are data, not code to complete).
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// Why cutting failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum TaskCutError {
    /// Reading the repository failed.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The retriever failed.
    #[error(transparent)]
    Retrieve(#[from] RetrieveError),
    /// The session could not be loaded.
    #[error(transparent)]
    Session(#[from] SessionLoadError),
}

/// What a batch cut gave.
#[derive(Debug, Default)]
pub struct CutOutcome {
    /// The tasks, commit by commit.
    pub tasks: Vec<Task>,
    /// Commits that could not be cut (unreadable), with why: a failure.
    pub skipped: Vec<(String, String)>,
    /// Commits that simply had nothing to cut (a merge, no code of a supported
    /// language touched, no block in the lines touched), with why: not a failure.
    pub nothing: Vec<(String, String)>,
}

/// The repository's name: its root directory's.
pub fn repository_name(repo: &GitRepository) -> String {
    repo.root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repository".to_string())
}

/// The latest version's chunks, for `--context-from head`: the tree of `rev`.
pub fn head_index(repo: &GitRepository, rev: &str) -> Result<ChunkIndex, HistoryError> {
    let sha = repo.resolve(rev)?;
    Ok(ChunkIndex::build(repo.tree_texts(&sha, MAX_FILE_BYTES)?))
}

/// The files `sha` changed and the lines it touched in each (0-based, end exclusive;
/// a pure deletion touches the lines around the gap).
fn changed_files(
    repo: &GitRepository,
    sha: &str,
) -> Result<(Vec<ChangedFile>, usize), HistoryError> {
    let record = repo.load(sha)?;
    let mut out = Vec::new();
    for change in &record.changes {
        let (Some(path), Some(new)) = (&change.new_path, &change.new) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(new) else {
            continue;
        };
        let parent = change
            .old
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(str::to_string);
        let touched = match &change.old {
            None => std::iter::once(0..text.lines().count().max(1)).collect(),
            Some(old) => diff_hunks(old, new)
                .map_err(|source| HistoryError::Git {
                    commit: sha.to_string(),
                    what: "diffing a file",
                    source,
                })?
                .into_iter()
                .map(|h| {
                    let start = h.new_start as usize;
                    if h.new_lines == 0 {
                        start.saturating_sub(1)..start + 1
                    } else {
                        start - 1..start - 1 + h.new_lines as usize
                    }
                })
                .collect(),
        };
        out.push(ChangedFile {
            path: path.clone(),
            parent,
            touched,
        });
    }
    Ok((out, record.parents.len()))
}

/// Cuts `commits` of `repo` (oldest first); `on_commit` hears each commit's outcome
/// (`N tasks` or why it was skipped). `head` is the latest version's index for
/// `--context-from head`.
pub fn cut_commits(
    repo: &GitRepository,
    commits: &[String],
    options: &CutOptions,
    retriever: &mut dyn Retriever,
    mut head: Option<&mut ChunkIndex>,
    mut on_commit: impl FnMut(&str, &str),
) -> Result<CutOutcome, TaskCutError> {
    let repository = repository_name(repo);
    let mut outcome = CutOutcome::default();
    for sha in commits {
        let short = &sha[..sha.len().min(12)];
        let read = changed_files(repo, sha).and_then(|(changed, parents)| {
            // A commit that touched no code of a cuttable language needs no tree.
            let any = options.all_functions
                || changed
                    .iter()
                    .any(|c| crate::engine::task::cut::cuttable(&c.path).is_some());
            let files = if any && parents <= 1 {
                repo.tree_texts(sha, MAX_FILE_BYTES)?
            } else {
                Vec::new()
            };
            Ok((changed, parents, files))
        });
        let (changed, parents, files) = match read {
            Ok(read) => read,
            Err(error) => {
                let reason = format!("cannot read: {error}");
                on_commit(short, &reason);
                outcome.skipped.push((sha.clone(), reason));
                continue;
            }
        };
        if parents > 1 {
            let reason = "nothing to cut: a merge commit, no single change".to_string();
            on_commit(short, &reason);
            outcome.nothing.push((sha.clone(), reason));
            continue;
        }
        let files: BTreeMap<String, String> = files.into_iter().collect();
        let input = CommitInput {
            repository: &repository,
            commit: sha,
            files: &files,
            changed: &changed,
        };
        let tasks = cut_commit(&input, options, retriever, head.as_deref_mut())?;
        if tasks.is_empty() {
            let code = changed
                .iter()
                .any(|c| crate::engine::task::cut::cuttable(&c.path).is_some());
            let reason = if code {
                "nothing to cut: no block in the lines it touched"
            } else {
                "nothing to cut: it touched no code of a supported language (only tests, docs or other files)"
            }
            .to_string();
            on_commit(short, &reason);
            outcome.nothing.push((sha.clone(), reason));
        } else {
            on_commit(short, &format!("{} tasks", tasks.len()));
            outcome.tasks.extend(tasks);
        }
    }
    Ok(outcome)
}

/// Where a session's state comes from besides its own texts.
pub struct SessionBase<'a> {
    /// The repository the session worked in, when known.
    pub repo: Option<&'a GitRepository>,
    /// How long without typing is a pause (ms).
    pub pause_ms: f64,
}

/// Session-pause tasks of stored session `id` of `db`.
pub fn cut_session(
    db: &Database,
    id: i64,
    base: &SessionBase<'_>,
    options: &CutOptions,
    retriever: &mut dyn Retriever,
    mut head: Option<&mut ChunkIndex>,
) -> Result<Vec<Task>, TaskCutError> {
    let trajectory = load_session_trajectory(db, id, &SliceSpec::default(), None)?;
    let start = SessionStart::of(&trajectory, base)?;
    let mut chosen = pauses(&trajectory, base.pause_ms);
    let mut rng = SplitMix::new(options.seed, &format!("session-{id}"));
    rng.shuffle(&mut chosen);
    if let Some(max) = options.max_per_commit {
        chosen.truncate(max);
    }
    chosen.sort_by_key(|p| p.seq);
    let mut tasks = Vec::new();
    for pause in chosen {
        let Some(language) = Language::from_path(Path::new(&pause.file)) else {
            continue;
        };
        let (mut task, files) = start.pause_task(id, &pause, language);
        // The file as it was once the pause's text was typed, and where that text is.
        let filled = format!("{}{}{}", task.prefix, task.ground_truth, task.suffix);
        let hole = task.prefix.len()..task.prefix.len() + task.ground_truth.len();
        let tests = TestIndex::build(&files);
        let structure = analyze(language, &filled);
        annotate(
            &mut task, language, &structure, &filled, &hole, &files, &tests,
        );
        if let Some(context) = options.context {
            attach(&mut task, context, &files, retriever, head.as_deref_mut())?;
        }
        tasks.push(task);
    }
    Ok(tasks)
}

/// What a session's tasks share: the tree of the commit it started from (empty when
/// the repository does not have it), that commit, and the repository's name.
struct SessionStart {
    tree: BTreeMap<String, String>,
    commit: Option<String>,
    repository: Option<String>,
}

impl SessionStart {
    fn of(trajectory: &Trajectory, base: &SessionBase<'_>) -> Result<SessionStart, TaskCutError> {
        let commit = trajectory
            .session
            .commit
            .as_ref()
            .map(|c| c.sha.clone())
            .or_else(|| trajectory.session.git_head.clone());
        let tree: BTreeMap<String, String> = match (base.repo, &commit) {
            (Some(repo), Some(sha)) if repo.has_commit(sha) => {
                repo.tree_texts(sha, MAX_FILE_BYTES)?.into_iter().collect()
            }
            _ => BTreeMap::new(),
        };
        let commit = commit.filter(|_| !tree.is_empty());
        let repository = base.repo.map(repository_name).or_else(|| {
            trajectory.session.workspace.as_deref().and_then(|w| {
                Path::new(w)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
        });
        Ok(SessionStart {
            tree,
            commit,
            repository,
        })
    }

    /// The task of one pause of session `id`, before its annotations and context: the
    /// text typed after the pause is the hole. Returns it with the state's files (every
    /// file's text at the pause over the start tree, the paused file filled).
    fn pause_task(
        &self,
        id: i64,
        pause: &Pause,
        language: Language,
    ) -> (Task, BTreeMap<String, String>) {
        let text_at_pause = &pause.texts[&pause.file];
        let filled = format!(
            "{}{}{}",
            &text_at_pause[..pause.cursor],
            pause.typed,
            &text_at_pause[pause.cursor..]
        );
        let hole = pause.cursor..pause.cursor + pause.typed.len();
        let mut files = self.tree.clone();
        let mut state_files = Vec::new();
        for (path, text) in &pause.texts {
            if path != &pause.file && self.tree.get(path) != Some(text) {
                state_files.push(StateFile {
                    path: path.clone(),
                    text: text.clone(),
                });
            }
            files.insert(path.clone(), text.clone());
        }
        files.insert(pause.file.clone(), filled.clone());
        let cursor = crate::engine::task::blocks::cursor_at(&filled, hole.start);
        let task = Task {
            version: TASK_FORMAT_VERSION,
            id: format!(
                "session-{id}@{}:{}:{}:session_pause",
                pause.seq,
                pause.file,
                cursor.line + 1
            ),
            repository: self
                .repository
                .clone()
                .unwrap_or_else(|| format!("session-{id}")),
            source: TaskSource::Session {
                session: id,
                seq: pause.seq,
                commit: self.commit.clone(),
            },
            language: language.name().to_string(),
            scenario: Scenario::SessionPause,
            state: TaskState {
                commit: self.commit.clone(),
                files: state_files,
                block: None,
            },
            file: pause.file.clone(),
            cursor,
            prefix: filled[..hole.start].to_string(),
            suffix: filled[hole.end..].to_string(),
            state_suffix: None,
            ground_truth: pause.typed.clone(),
            enclosing: None,
            dependency: None,
            tests: Vec::new(),
            hints: Vec::new(),
            context: None,
        };
        (task, files)
    }
}

/// Retrieves a session task's context from its state or the latest version.
fn attach(
    task: &mut Task,
    context: ContextOptions,
    files: &BTreeMap<String, String>,
    retriever: &mut dyn Retriever,
    head: Option<&mut ChunkIndex>,
) -> Result<(), TaskCutError> {
    let mut state_index;
    let index = match (context.from, head) {
        (ContextFrom::Head, Some(head)) => head,
        (ContextFrom::Head, None) => return Ok(()),
        (ContextFrom::State, _) => {
            state_index = ChunkIndex::build(files.iter().map(|(p, t)| (p.clone(), t.clone())));
            &mut state_index
        }
    };
    task.context = Some(retrieve_context(retriever, index, task, context, files)?);
    Ok(())
}
