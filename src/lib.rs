//! nextedit: measure live editor sessions and next-edit suggesters.
//!
//! Layout (see ARCHITECTURE.md for the code map and invariants):
//!
//! - [`lsp`]: Content-Length framing, message envelopes, LSP methods, a small LSP client.
//! - [`jsonrpc`]: JSON-RPC message shapes, request ids and answers, under both clients.
//! - [`live`]: what became of the offers a language server made (`nextedit live`).
//! - [`record`]: frames → trajectory events (document tracking, reads, signals, privacy).
//! - [`store`]: the SQLite database (schema, migrations, the single writer, queries).
//! - [`proxy`]: the recording proxy that sits between an editor and a language server.
//! - [`trajectory`]: the pure domain model and its JSON form.
//! - [`contextbench_io`]: ContextBench inputs and repository checkouts on disk.
//! - [`metrics`]: BLEU, SARI, Excision Score, DiffBLEU, ContextBench, flow aggregation (pure).
//! - [`import`]: other tools' formats (Copilot NES recordings, ContextBench tasks) → trajectories.
//! - [`import_io`]: import inputs on disk (Copilot recordings, JSONL or JSON-array rows).
//! - [`git_fetch`]: a testset's commits fetched into local repositories with `git`.
//! - [`dataset`]: trajectories and replay results as datasets (JSON Lines, Parquet, card).
//! - [`history`]: git commits → edits, dependency edges and partial orders.
//! - [`sessions`]: stored sessions (or trajectory files) loaded as trajectories.
//! - [`setup_check`]: the recording-setup checks behind `nextedit doctor`.
//! - [`progress`]: progress of long commands on stderr (bar, lines or nothing).
//! - [`text_inputs`]: the texts `score` compares, read from files or standard input.
//! - [`syntax`]: tree-sitter languages, structural paths, identifiers.
//! - [`task`]: completion tasks cut from history, run and scored by executing tests.
//! - [`sys`]: how untrusted processes run: sandbox, seccomp, environment, limits, process trees.
//! - [`ranges`]: the ranges every numeric flag (and stored setting) must lie in.
//! - [`secrets`]: secrets masked and long texts cut in whatever is printed or stored.
//! - [`resume`]: a resumed run's commands come from the command line, never the database.

#![warn(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod contextbench_io;
pub mod dataset;
pub mod git_fetch;
pub mod history;
pub mod import;
pub mod import_io;
pub mod jsonrpc;
pub mod live;
pub mod lsp;
pub mod metrics;
pub mod progress;
pub mod proxy;
pub mod ranges;
pub mod record;
pub mod replay;
pub mod resume;
pub mod run;
pub mod secrets;
pub mod sessions;
pub mod setup_check;
pub mod store;
pub mod suggest;
pub mod syntax;
pub mod sys;
pub mod task;
pub mod text_inputs;
pub mod trajectory;
