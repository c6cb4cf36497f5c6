//! `sessions list` and `sessions show`: the stored sessions as tables and text.

use nextedit::store::SessionRead;
use std::io::Write;

use nextedit::store::Database;

/// Prints every session, newest first: a table, or JSON.
pub fn list(db: &Database, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let sessions = db.sessions()?;
    if json {
        serde_json::to_writer_pretty(&mut *out, &sessions)?;
        writeln!(out)?;
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(out, "no sessions recorded yet")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>5}  {:<8}  {:<24}  {:<9}  {:>6}  {:>7}  {:>5}  {:>5}  {:<20}  {:<12}  WORKSPACE",
        "ID", "KIND", "STARTED", "STATUS", "MSGS", "CHANGES", "EDITS", "READS", "SERVER", "COMMIT"
    )?;
    for s in sessions {
        let server = s
            .server
            .clone()
            .or_else(|| s.server_command.first().cloned())
            .unwrap_or_default();
        writeln!(
            out,
            "{:>5}  {:<8}  {:<24}  {:<9}  {:>6}  {:>7}  {:>5}  {:>5}  {:<20}  {:<12}  {}",
            s.id,
            s.kind,
            s.started_at,
            s.status,
            s.messages,
            s.changes,
            count_or_unknown(s.edits),
            s.reads,
            truncate(&server, 20),
            s.linked_commit
                .as_deref()
                .map_or("-", |c| &c[..c.len().min(12)]),
            s.workspace.unwrap_or_default()
        )?;
    }
    Ok(())
}

/// Prints one session's header, counts and documents: text, or JSON.
pub fn show(db: &Database, id: i64, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let session = db.session(id)?;
    let documents = db.documents(id)?;
    if json {
        let value = serde_json::json!({"session": session, "documents": documents});
        serde_json::to_writer_pretty(&mut *out, &value)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "session {}  ({}, {})",
        session.id, session.kind, session.status
    )?;
    let dash = |v: Option<&str>| v.unwrap_or("-").to_owned();
    let recorded = format!(
        "{} messages, {} changes ({} edits), {} reads, {} signals, {} dropped",
        session.messages,
        session.changes,
        count_or_unknown(session.edits),
        session.reads,
        session.signals,
        session.dropped
    );
    let fields = [
        ("started", session.started_at.clone()),
        ("ended", dash(session.ended_at.as_deref())),
        ("workspace", dash(session.workspace.as_deref())),
        ("git HEAD", dash(session.git_head.as_deref())),
        (
            "commit",
            (session.linked_commit.as_deref())
                .unwrap_or("- (see `sessions link`)")
                .to_owned(),
        ),
        ("server", session.server_command.join(" ")),
        ("server info", dash(session.server.as_deref())),
        ("client", dash(session.client.as_deref())),
        ("encoding", dash(session.position_encoding.as_deref())),
        (
            "exit code",
            session.exit_code.map_or("-".to_string(), |c| c.to_string()),
        ),
        ("recorded", recorded),
    ];
    for (label, value) in fields {
        writeln!(out, "  {label:<11} {value}")?;
    }
    writeln!(out, "  documents   {}", documents.len())?;
    for doc in documents {
        let note = if doc.excluded {
            "  (excluded: text not stored)"
        } else {
            ""
        };
        writeln!(
            out,
            "    {:<50} {:>5} changes  {}{}",
            doc.path,
            doc.changes,
            doc.language_id.as_deref().unwrap_or(""),
            note
        )?;
    }
    Ok(())
}

/// A count, or `?` when it could not be computed.
fn count_or_unknown(count: Option<i64>) -> String {
    count.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// At most `n` characters, the last one `…` when cut.
fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
