//! Commit-derived sessions: a git commit → edits, dependency edges and a partial order.
//!
//! Pipeline, one commit at a time (`nextedit derive`):
//!
//! 1. [`source`]: a [`CommitSource`] loads the commit and its changed files' bytes
//!    (git2 lives only in [`source`]); merge commits are refused.
//! 2. [`extract`]: each file → maximal runs of changed lines (git's own diff, so the
//!    numbering equals EditFlow's hunks); binary, vendored, generated and non-UTF-8
//!    files are skipped with a reason; every file's edits must rebuild the commit's
//!    bytes exactly.
//! 3. [`symbols`]: tree-sitter identifiers each edit defines, imports and uses.
//! 4. [`dependency`]: def→use, signature→call, import→use, clone, test↔impl and
//!    move edges between edits.
//! 5. [`order`]: the partial order (`before`/`bi`), initial candidates and a
//!    deterministic natural order; EditFlow and Historian orders can be imported.
//! 6. [`derive`](mod@derive): all of it as one [`crate::core::trajectory::Trajectory`].
//!
//! [`recorded`] runs the same dependency analysis over a recorded session's sequential
//! edits. [`evaluate`] scores a derived order against human annotations and [`editflow`]
//! rebuilds EditFlow's sample commits as git repositories. [`link`] finds the commit
//! that contains a recorded session's edits.
//!
//! Never writes to a repository; never touches SQLite (the CLI stores trajectories).

pub mod agreement;
pub mod crossval;
pub mod dependency;
pub mod derive;
pub mod editflow;
pub mod evaluate;
pub mod extract;
pub mod link;
pub mod lsp;
pub mod lsp_evidence;
pub mod lsp_servers;
pub mod lsp_workspace;
pub mod odb;
pub mod order;
pub mod order_file;
pub mod recorded;
pub mod selection;
pub mod similarity;
pub mod source;
pub mod symbols;
pub mod visibility;

pub use derive::{derive_commit, derive_commit_with_lsp};
pub use recorded::{recorded_order, recorded_order_by_full_parses, recorded_order_with_counts};
pub use source::{
    CommitRecord, CommitSource, GitError, GitRepository, Merges, MergesError, Selection,
    TreeChange, TreeChangeKind, select, workspace_name,
};

use thiserror::Error;

/// Why a commit (or an annotation) could not be processed.
#[derive(Debug, Error)]
pub enum HistoryError {
    /// The repository could not be opened.
    #[error("cannot open git repository {path}")]
    Open {
        /// Path given.
        path: String,
        /// libgit2's reason.
        #[source]
        source: source::GitError,
    },
    /// A loose object libgit2 would loop forever on (see [`odb`]).
    #[error("{object}")]
    Corrupt {
        /// The repository.
        path: String,
        /// The object and what is wrong with it (in the message, not a `source`,
        /// so an error chain does not print it twice).
        object: odb::CorruptObject,
    },
    /// A revision or range did not resolve.
    #[error("cannot resolve revision {rev:?}")]
    Revision {
        /// What was asked for.
        rev: String,
        /// libgit2's reason.
        #[source]
        source: source::GitError,
    },
    /// A libgit2 operation on a commit failed.
    #[error("commit {commit}: {what} failed")]
    Git {
        /// Commit id.
        commit: String,
        /// The operation.
        what: &'static str,
        /// libgit2's reason.
        #[source]
        source: source::GitError,
    },
    /// Merge commits have no single parent to diff against.
    #[error(
        "commit {commit} is a merge ({parents} parents); derive needs a commit with one parent (pick a parent and diff it, or derive the merged commits themselves)"
    )]
    Merge {
        /// Commit id.
        commit: String,
        /// Number of parents.
        parents: usize,
    },
    /// The derived edits do not rebuild the commit's bytes (a bug, never hidden).
    #[error("commit {commit}, file {file}: edits do not reproduce the commit: {detail}")]
    RoundTrip {
        /// Commit id.
        commit: String,
        /// File path.
        file: String,
        /// What differed.
        detail: extract::RoundTripError,
    },
    /// An annotation or order file is malformed.
    #[error("annotation: {0}")]
    Annotation(String),
    /// Reading or writing a file failed.
    #[error("{path}")]
    Io {
        /// File path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file did not parse.
    #[error("{path} is not valid JSON for this format")]
    Json {
        /// File path.
        path: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}
