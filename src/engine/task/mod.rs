//! Completion tasks cut from history (`nextedit tasks`): Codev-Bench's scenarios and
//! HumanEvo's added functions, each cut from one exact state of a repository or a
//! recorded session, never from its future.
//!
//! A task file is JSON Lines, one [`Task`] per line (`schemas/task.schema.json`); this
//! module holds the typed form (pure types): the state it is cut from (a commit, plus a
//! session's texts), prefix, suffix, ground truth, enclosing definition, dependency
//! level, covering tests, hints, and retrieved context with its future-leak flag.
//! Conventions: docs/tasks.md. Cutting, retrieval, coverage, execution and scoring live
//! in the submodules; running tasks against a suggester, storing and reporting them is
//! the service `service::tasks`; the CLI (`cli/tasks/`) only reads arguments and prints.

pub mod blocks;
pub mod coverage;
pub mod covermap;
pub mod cut;
pub mod dependency;
pub mod environment;
pub mod execute;
pub mod interpreter;
pub mod retrieval;
pub mod retriever_command;
pub mod score;
pub mod session;

use serde::{Deserialize, Serialize};

/// Version of the task file format written by this build.
pub const TASK_FORMAT_VERSION: u32 = 1;

/// One completion task: a hole in one file of one state, and what fills it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Always [`TASK_FORMAT_VERSION`] for tasks written by this build.
    pub version: u32,
    /// Stable id: `REPO@COMMIT12:PATH:LINE:SCENARIO` (or `session-N@SEQ:…` for sessions).
    pub id: String,
    /// Repository name (the directory name of its root), for grouping and splits.
    pub repository: String,
    /// Where the state comes from.
    pub source: TaskSource,
    /// Language of the file (`python`, `go`, …).
    pub language: String,
    /// How the task was cut.
    pub scenario: Scenario,
    /// The state the task is cut from: the files as they were then, hole excluded.
    pub state: TaskState,
    /// The file with the hole, relative to the repository root.
    pub file: String,
    /// Where the hole starts: 0-based line and byte column in the file.
    pub cursor: Cursor,
    /// The file's text before the hole.
    pub prefix: String,
    /// The file's text after the hole, as the task shows it.
    pub suffix: String,
    /// The file's real text after the hole when `suffix` hides some or all of it (the
    /// incomplete-suffix scenario): the file in the state is then `prefix +
    /// ground_truth + state_suffix`, and an answer is applied as `prefix + answer +
    /// state_suffix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_suffix: Option<String>,
    /// What filled the hole in the state (may be empty: an already complete block).
    pub ground_truth: String,
    /// The innermost definition around the hole, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enclosing: Option<Definition>,
    /// What the hole's code depends on, from the syntax (HumanEvo's levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<DependencyLevel>,
    /// Tests known to cover the hole (empty when none are known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestRef>,
    /// Hints the scenario itself gives (the RAG scenario's top-3 similar functions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<ContextChunk>,
    /// Retrieved context, from the state (`aware`) or the latest version (`head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<RetrievedContext>,
}

/// Where a task's state comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskSource {
    /// A commit's tree (the task is cut from the commit's own state).
    Commit {
        /// Full commit id.
        commit: String,
    },
    /// A recorded session, at a pause.
    Session {
        /// Session id in the database.
        session: i64,
        /// The event seq the state is taken at.
        seq: u64,
        /// The commit the session started from, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
    },
}

/// The scenario a task was cut for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// Codev-Bench: a whole block (function, if/for/while/try, statement) to write.
    FullBlock,
    /// Codev-Bench: everything after the cursor is gone (in the file, or in the function body).
    IncompleteSuffix,
    /// Codev-Bench: an inner block; ~20 % of these are already complete (empty ground truth).
    InnerBlock,
    /// Codev-Bench: a full block plus the top-3 most similar functions as hints.
    Rag,
    /// HumanEvo: a function the commit added; its body to write, signature and docstring given.
    AddedFunction,
    /// A recorded session: what the developer typed next at a pause, cut at the cursor.
    SessionPause,
}

/// The kind of block a full-block or inner-block task removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A function or method.
    Function,
    /// An `if` statement.
    If,
    /// A `for` loop.
    For,
    /// A `while` loop.
    While,
    /// A `try` statement.
    Try,
    /// One statement.
    Statement,
}

/// The state a task is cut from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// The commit whose tree holds every file not listed in `files`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Files whose text differs from that tree (a session's state), the task's own file
    /// excluded (it is `prefix + ground_truth + suffix`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<StateFile>,
    /// The block kind, for block scenarios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockKind>,
}

/// One file's text in a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateFile {
    /// Path relative to the repository root.
    pub path: String,
    /// Whole text.
    pub text: String,
}

/// A position in a file: 0-based line, byte column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// 0-based line.
    pub line: usize,
    /// Byte column in that line.
    pub column: usize,
}

/// A definition (function, method, class) by name and lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// Its name (`Class.method` for methods).
    pub name: String,
    /// `function`, `method`, `class`, …
    pub kind: String,
    /// First line (0-based).
    pub start_line: usize,
    /// End line (exclusive).
    pub end_line: usize,
}

/// HumanEvo's dependency levels, from what the code uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyLevel {
    /// Uses nothing defined in the repository.
    Standalone,
    /// Uses members of its own class.
    IntraClass,
    /// Uses definitions of its own file.
    IntraFile,
    /// Uses definitions of other files.
    CrossFile,
}

/// A test that covers a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRef {
    /// Test file, relative to the repository root.
    pub file: String,
    /// Test name as the runner selects it (`test_parse`, `TestParse`, `TestCase::test_x`).
    pub name: String,
}

/// A chunk of code given to a suggester as context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextChunk {
    /// Path relative to the repository root.
    pub file: String,
    /// First line (0-based).
    pub start_line: usize,
    /// End line (exclusive).
    pub end_line: usize,
    /// The chunk's text.
    pub text: String,
    /// Retrieval score (higher is better), when retrieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Whether this text existed in the task's state: `false` is a leak from the future.
    #[serde(default = "yes")]
    pub existed_at_state: bool,
}

fn yes() -> bool {
    true
}

/// Which version of the repository context is retrieved from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextFrom {
    /// The task's own state (evolution-aware, the default).
    State,
    /// The repository's latest version (evolution-ignored, HumanEvo's inflated setting).
    Head,
}

/// Context retrieved for a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievedContext {
    /// Which version it came from.
    pub from: ContextFrom,
    /// The retriever (`bm25`, or `cmd:…` for a command).
    pub retriever: String,
    /// Chunks, best first.
    pub chunks: Vec<ContextChunk>,
    /// Whether any chunk did not exist in the state (a future leak).
    pub leaked: bool,
}
