//! One `complete` call on a directory (`nextedit complete`): the hole is a cursor in
//! one of its files (the file's text before it is the prefix, after it the suffix).
//! The suggester never sees the directory itself: it works in a scratch copy (without
//! `.git` and hidden entries), sandboxed unless asked otherwise, behind the response
//! cache when one is given, initialized for that copy, asked once, and shut down.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::build::{BuildError, BuildOptions, build};
use super::cache::{CacheLog, CacheMode, CachedSuggester, ResponseStore};
use super::protocol::{
    CompleteContext, CompleteParams, CompleteResult, InitializeParams, PROTOCOL_VERSION, Revealed,
};
use super::{Call, SuggestError, Suggester, complete_call};
use crate::base::sys::jail::Jail;
use crate::base::sys::sandbox::{Sandbox, Unavailable};
use crate::core::trajectory::RelPath;

/// What to ask: a cursor in a file of a directory, and what the call carries besides.
#[derive(Debug, Clone)]
pub struct OnceRequest {
    /// The directory holding the task's state.
    pub dir: PathBuf,
    /// The file with the hole, relative to `dir`.
    pub file: String,
    /// 0-based line of the cursor.
    pub line: usize,
    /// Byte column of the cursor in that line.
    pub column: usize,
    /// Scenario name sent with the call.
    pub scenario: String,
    /// Language, if known.
    pub language: Option<String>,
    /// Context chunks sent with the call.
    pub context: Vec<CompleteContext>,
}

/// The answer, checked, and the suggester's own time.
#[derive(Debug, Clone)]
pub struct OnceAnswer {
    /// The suggester's name.
    pub suggester: String,
    /// Its answer.
    pub result: CompleteResult,
    /// Time of the `complete` call alone (with a cache: the suggester's own time,
    /// stored with a served answer).
    pub latency: Duration,
    /// Whether the answer was served from the response cache.
    pub cached: bool,
}

/// A response cache to ask before the suggester (`suggest::cache`), and how.
pub struct OnceCache {
    /// Where answers are kept.
    pub store: Box<dyn ResponseStore>,
    /// Read-write or read-only.
    pub mode: CacheMode,
}

/// Why the call could not be made or failed.
#[derive(Debug, thiserror::Error)]
pub enum OnceError {
    /// The directory or file cannot be read or copied.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The request names an impossible place.
    #[error("{0}")]
    BadRequest(String),
    /// The spec gives no suggester.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The sandbox cannot be made here: the suggester is not started.
    #[error("cannot sandbox the suggester: {0}; or pass --sandbox off to run it unsandboxed")]
    NoSandbox(Unavailable),
    /// The suggester failed `initialize` or `complete`.
    #[error("{}", .0.kind())]
    Call(#[from] SuggestError),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> OnceError {
    move |source| OnceError::Io { what, source }
}

/// A cursor that is not in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    /// The file has fewer lines.
    #[error("line {0} is past the end of the file")]
    PastTheFile(usize),
    /// The line is shorter.
    #[error("column {column} is past the end of line {line} ({length} bytes)")]
    PastTheLine {
        /// The column asked for.
        column: usize,
        /// The line.
        line: usize,
        /// The line's length in bytes.
        length: usize,
    },
    /// The column falls inside a UTF-8 character.
    #[error("column {column} of line {line} is inside a character")]
    InsideACharacter {
        /// The column asked for.
        column: usize,
        /// The line.
        line: usize,
    },
}

/// The text of `text` before and after line `line`'s byte column `column`.
pub fn split_at_cursor(
    text: &str,
    line: usize,
    column: usize,
) -> Result<(String, String), CursorError> {
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return Err(CursorError::PastTheFile(line)),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let at = start + column;
    if at > end {
        return Err(CursorError::PastTheLine {
            column,
            line,
            length: end - start,
        });
    }
    if !text.is_char_boundary(at) {
        return Err(CursorError::InsideACharacter { column, line });
    }
    Ok((text[..at].to_string(), text[at..].to_string()))
}

/// Copies `from` into `to` (a new directory): files and directories, no hidden
/// entries (`.git`), no symlinks.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Asks `spec` to fill the hole of `request` (see the module doc), through `cache`
/// when given (keyed by the spec, repetition 1); of `options.jail` only the limits
/// and the environment count (`sandboxed` says whether to make a sandbox around the
/// scratch copy, which holds the process's `HOME` and counts against `--disk`).
pub fn complete_once(
    spec: &str,
    options: &BuildOptions,
    sandboxed: bool,
    cache: Option<OnceCache>,
    request: &OnceRequest,
) -> Result<OnceAnswer, OnceError> {
    let dir = request
        .dir
        .canonicalize()
        .map_err(io(format!("cannot open {}", request.dir.display())))?;
    let file = RelPath::parse(&request.file)
        .map_err(|e| OnceError::BadRequest(format!("--file {:?}: {e}", request.file)))?;
    let path = dir.join(file.as_str());
    let text =
        std::fs::read_to_string(&path).map_err(io(format!("cannot read {}", path.display())))?;
    let (prefix, suffix) = split_at_cursor(&text, request.line, request.column)
        .map_err(|e| OnceError::BadRequest(format!("{}: {e}", path.display())))?;
    let scratch = tempfile::Builder::new()
        .prefix("nextedit-complete-")
        .tempdir()
        .map_err(io("cannot create a scratch directory".into()))?;
    let scratch_root = scratch
        .path()
        .canonicalize()
        .map_err(io("cannot resolve the scratch directory".into()))?;
    let worktree = scratch_root.join("worktree");
    copy_tree(&dir, &worktree).map_err(io(format!("cannot copy {}", dir.display())))?;
    let mut options = options.clone();
    let sandbox = if sandboxed {
        sandbox_for(spec, &options, &scratch_root, &dir, &request.dir)?
    } else {
        None
    };
    options.jail = Jail::in_scratch(
        sandbox,
        &scratch_root,
        options.jail.limits,
        options.jail.env.clone(),
    );
    let log = CacheLog::default();
    let mut suggester: Box<dyn Suggester> = match cache {
        Some(cache) if cache.mode != CacheMode::Off => Box::new(CachedSuggester::new(
            build(spec, &options)?,
            cache.store,
            spec,
            1,
            cache.mode,
            log.clone(),
        )),
        _ => build(spec, &options)?,
    };
    let worktree_text = worktree.to_string_lossy().into_owned();
    let init = InitializeParams {
        protocol_version: PROTOCOL_VERSION,
        worktree: worktree_text.clone(),
        language: request.language.clone(),
        project: None,
        trajectory: "task-1".into(),
        revealed: Revealed::default(),
    };
    let params = CompleteParams {
        task: "task-1".into(),
        worktree: worktree_text,
        language: request.language.clone(),
        file: file.as_str().to_string(),
        line: request.line,
        column: request.column,
        prefix,
        suffix,
        scenario: request.scenario.clone(),
        context: request.context.clone(),
    };
    let answer = suggester
        .initialize(&init)
        .and_then(|_| complete_call(suggester.as_mut(), &params));
    suggester.shutdown();
    let (result, mut latency) = answer?;
    let mut cached = false;
    if let Some(outcome) = log.take().into_iter().find(|o| o.call == Call::Complete) {
        cached = outcome.cached;
        latency = Duration::from_secs_f64(outcome.latency_ms / 1e3);
    }
    Ok(OnceAnswer {
        suggester: suggester.name(),
        result,
        latency,
        cached,
    })
}

/// The sandbox a `cmd:` or `lsp:` suggester runs in, its scratch directory its only
/// writable place, the task's directory `dir` (canonical, and as `given`, and the
/// working directory when inside it) hidden; `None` for the others: built-ins and
/// `openai:` run inside nextedit and need no sandbox (and no bwrap).
fn sandbox_for(
    spec: &str,
    options: &BuildOptions,
    scratch_root: &Path,
    dir: &Path,
    given: &Path,
) -> Result<Option<Sandbox>, OnceError> {
    let Some(command) = spec
        .strip_prefix("cmd:")
        .or_else(|| spec.strip_prefix("lsp:"))
    else {
        return Ok(None);
    };
    let mut forbidden = vec![dir.to_path_buf(), given.to_path_buf()];
    if let Ok(cwd) = std::env::current_dir()
        && cwd.starts_with(dir)
    {
        forbidden.push(cwd);
    }
    let mut made = Sandbox::for_command(command, scratch_root, &forbidden, options.allow_network)
        .map_err(OnceError::NoSandbox)?;
    if options.reads_db.is_some()
        && let Ok(exe) = std::env::current_exe()
    {
        made.read_only.push(exe);
    }
    Ok(Some(made))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_splits_the_file_or_is_refused() {
        let text = "ab\ncdé\n";
        let split = |l, c| split_at_cursor(text, l, c).map_err(|e| e.to_string());
        assert_eq!(split(1, 1), Ok(("ab\nc".into(), "dé\n".into())));
        assert_eq!(split(2, 0), Ok((text.into(), String::new())));
        assert_eq!(
            split(1, 9),
            Err("column 9 is past the end of line 1 (4 bytes)".into())
        );
        assert_eq!(
            split(1, 3),
            Err("column 3 of line 1 is inside a character".into())
        );
        assert_eq!(
            split(5, 0),
            Err("line 5 is past the end of the file".into())
        );
    }
}
