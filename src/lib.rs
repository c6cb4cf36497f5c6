//! nextedit: measure live editor sessions and next-edit suggesters.
//!
//! Five layers, each using only the ones below it (ARCHITECTURE.md has the code map and
//! the table tidy checks):
//!
//! - [`service`]: replay runs, sessions, the recording proxy, datasets, task runs.
//! - [`store`]: the SQLite database (schema, migrations, the single writer, queries).
//! - [`engine`]: history, replay, suggesters, offers' outcomes, completion tasks.
//! - [`core`]: trajectories, syntax, metrics, the LSP wire, records, imports (pure).
//! - [`base`]: process control and the sandbox, secrets, ranges, progress, JSON-RPC.
//!
//! The `nextedit` binary (`src/main.rs` → `src/cli/`) sits on top of `service`.

#![warn(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]
// `unsafe` only in `base::sys::process`, which allows it.
#![deny(unsafe_code)]

pub mod base;
pub mod core;
pub mod engine;
pub mod service;
pub mod store;
