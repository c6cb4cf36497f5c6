//! The domain: trajectories and their JSON form, source syntax, the metrics, the LSP
//! wire and what a recording is made of, other tools' formats. Pure (tidy checks it
//! does no I/O, except the LSP client); it uses `base` only.

pub mod import;
pub mod lsp;
pub mod metrics;
pub mod record;
pub mod syntax;
pub mod trajectory;
