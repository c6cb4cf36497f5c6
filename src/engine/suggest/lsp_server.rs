//! A running `lsp:` server as the suggester's calls see it: what it was told (its
//! documents, the diagnostics it published, the document filters it registered), one
//! request within a call's deadline, and a transport failure turned into the call's
//! error (a time-out, a limit, or a crash with the stderr's last lines). Started and
//! stopped by [`super::lsp`]; one call's requests are [`super::lsp_step`]'s.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::SuggestError;
use crate::base::sys::jail::Tree;
use crate::engine::lsp_client::{ClientError, LspClient};

/// Lines of the server's (and proxy's) stderr kept for error reports.
const STDERR_TAIL_LINES: usize = 20;

/// A document as the server knows it.
pub(super) struct Document {
    pub(super) uri: String,
    pub(super) version: i64,
    pub(super) text: String,
}

/// A running server (behind the proxy) and what it was told.
pub(super) struct Server {
    pub(super) client: LspClient,
    pub(super) root: PathBuf,
    pub(super) capabilities: Value,
    pub(super) documents: HashMap<String, Document>,
    /// Latest diagnostics per URI.
    pub(super) diagnostics: HashMap<String, Vec<Value>>,
    /// URIs whose diagnostics are for the text last synced.
    pub(super) fresh: HashSet<String>,
    /// The document filters the server registered for `textDocument/…` methods
    /// (`client/registerCapability`); empty: it serves the trajectory's language.
    pub(super) selectors: Vec<Value>,
    pub(super) stderr: std::fs::File,
    /// The proxy's and server's whole process tree (dropped last: kills what is left).
    pub(super) tree: Tree,
}

/// What a request came to: an answer, or an error answer (the server works; that
/// source of proposals is skipped).
pub(super) enum Answer {
    Result(Value),
    Error(SuggestError),
}

/// The last lines the server and proxy wrote to stderr.
fn stderr_tail(server: &mut Server) -> String {
    let mut text = String::new();
    let _ = server.stderr.seek(SeekFrom::Start(0));
    let _ = server.stderr.read_to_string(&mut text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n")
}

/// A transport failure as the call's error: a time-out, or a crash (with the exit
/// status and stderr).
pub(super) fn failure(server: &mut Server, call: &str, error: ClientError) -> SuggestError {
    // A tree killed for a limit fails as that limit, whatever the transport saw.
    if !matches!(error, ClientError::Response { .. })
        && let Some(limit) = server.tree.limit()
    {
        return SuggestError::Limit {
            method: call.to_string(),
            limit,
        };
    }
    match error {
        ClientError::Timeout { method, timeout } => SuggestError::Timeout {
            method: format!("{call} ({method})"),
            after: timeout,
        },
        ClientError::Response {
            method,
            code,
            message,
        } => SuggestError::Response {
            method: format!("{call} ({method})"),
            code,
            message,
        },
        ClientError::Spawn { .. } | ClientError::Write(_) | ClientError::Closed(_) => {
            let status = server.client.wait(Duration::from_millis(500));
            SuggestError::Crashed {
                method: call.to_string(),
                status: status.to_string(),
                stderr: stderr_tail(server),
            }
        }
    }
}

/// One request within the call's `deadline`; the time waited is counted.
pub(super) fn request(
    server: &mut Server,
    call: &str,
    method: &str,
    params: Value,
    deadline: Instant,
) -> Result<Answer, SuggestError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(SuggestError::Timeout {
            method: format!("{call} ({method})"),
            after: Duration::ZERO,
        });
    }
    match server.client.request(method, params, left) {
        Ok(result) => Ok(Answer::Result(result)),
        Err(error @ ClientError::Response { .. }) => {
            Ok(Answer::Error(failure(server, call, error)))
        }
        Err(error) => Err(failure(server, call, error)),
    }
}
