//! `nextedit sessions`: list, inspect, export and delete recorded sessions.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use nextedit::store::Database;
use nextedit::trajectory::{SliceBound, SliceSpec};

/// Inspect, export and delete recorded sessions
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first
    List {
        #[command(flatten)]
        db: DbArg,
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Show one session: header, documents, counts
    Show {
        #[command(flatten)]
        db: DbArg,
        /// Session id (see `sessions list`)
        id: i64,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Export a session as a trajectory (schemas/trajectory.schema.json)
    ///
    /// `json` writes one trajectory document; `jsonl` writes one JSON object per
    /// line: {"type":"session",...}, then {"type":"file",...} per file, then
    /// {"type":"event",...} per event, then edits, the order and the gold (when any).
    ///
    /// --from/--to/--file cut the session to a window and some files: base texts
    /// become the texts at the window start and the edits are coalesced again.
    Export {
        #[command(flatten)]
        db: DbArg,
        /// Session id
        id: i64,
        /// Output format
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write to this file instead of stdout
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Keep events from here on: an event seq number, or a time since the session
        /// started (1500ms, 90s, 5m, 1h); inclusive
        #[arg(long, value_name = "SEQ|TIME")]
        from: Option<SliceBound>,
        /// Keep events up to here (same syntax as --from); inclusive
        #[arg(long, value_name = "SEQ|TIME")]
        to: Option<SliceBound>,
        /// Keep only this file (workspace-relative path or URI); repeatable
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<String>,
        /// A pause longer than this ends an edit when coalescing changes [default: 2000]
        #[arg(long, value_name = "MS")]
        pause_ms: Option<f64>,
    },
    /// Link a session to the commit that contains its edits
    ///
    /// Walks the commits reachable from the repository's HEAD that descend from the
    /// session's starting HEAD (or the newest --limit ones when that is unknown),
    /// oldest first, and links the first whose tree has the session's final text in
    /// every file it edited (files excluded by privacy rules are ignored). Exits 1
    /// and names the closest commit when none has.
    Link {
        #[command(flatten)]
        db: DbArg,
        /// Session id
        id: i64,
        /// Repository [default: the session's workspace]
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
        /// Most commits to examine
        #[arg(long, default_value_t = nextedit::history::link::DEFAULT_LIMIT)]
        limit: usize,
    },
    /// Delete a session and everything recorded in it, for good
    ///
    /// The session's rows go, and so do the replay runs that copied it (named in the
    /// output). The database file is then rebuilt so the deleted text is not left in
    /// free pages or the write-ahead log. While another process (a running proxy) has
    /// the database open, the log cannot be emptied: the command says so; run it again
    /// once that process has ended.
    Delete {
        #[command(flatten)]
        db: DbArg,
        /// Session id
        id: i64,
    },
    /// Remove the text of files matching a glob from every session, for good
    ///
    /// A pattern without a slash matches a file name at any depth (`*.env`); one with
    /// a slash matches the whole workspace-relative path (`config/**`).
    /// For each file whose path matches: its snapshots, changes,
    /// reads and signals, the raw messages that name it and the answers to them, and
    /// its entries in commit-derived and imported sessions. Replay runs that copied such
    /// a file are deleted. The database file is rebuilt afterwards, like `delete`.
    ///
    /// Example: nextedit sessions purge --file 'config/secrets/**' --file '*.env'
    Purge {
        #[command(flatten)]
        db: DbArg,
        /// Glob over workspace-relative paths (repeatable)
        #[arg(long = "file", value_name = "GLOB", required = true)]
        files: Vec<String>,
    },
    /// Print the reconstructed final text of a document of a session
    ///
    /// FILE is the document's workspace-relative path, its URI, or a unique
    /// suffix of its path. With --seq, the text as it was after that event.
    ReplayText {
        #[command(flatten)]
        db: DbArg,
        /// Session id
        id: i64,
        /// Document path, URI or path suffix
        file: String,
        /// Stop after this sequence number (default: the end of the session)
        #[arg(long)]
        seq: Option<u64>,
    },
}

/// The `--db` option shared by every subcommand.
#[derive(Debug, Args)]
pub struct DbArg {
    /// Database file [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

impl DbArg {
    fn open(&self) -> anyhow::Result<Database> {
        let path = self
            .db
            .clone()
            .unwrap_or_else(nextedit::store::default_path);
        Ok(Database::open_existing(&path)?)
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Jsonl,
}

/// The runs an erasure deleted and whether the log could be emptied.
fn print_erasure(out: &mut impl Write, erased: &nextedit::store::Erasure) -> anyhow::Result<()> {
    for run in &erased.runs {
        writeln!(out, "deleted replay run {run} (it held a copy)")?;
    }
    if !erased.wal_cleared {
        writeln!(
            out,
            "warning: another process has the database open, so its write-ahead log could \
             not be emptied and may still hold the erased text; run the command again once \
             that process has ended"
        )?;
    }
    Ok(())
}

/// A count, or `?` when it could not be computed.
fn count_or_unknown(count: Option<i64>) -> String {
    count.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

pub fn run(command: SessionsCommand) -> anyhow::Result<i32> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        SessionsCommand::List { db, json } => {
            let sessions = db.open()?.sessions()?;
            if json {
                serde_json::to_writer_pretty(&mut out, &sessions)?;
                writeln!(out)?;
                return Ok(0);
            }
            if sessions.is_empty() {
                writeln!(out, "no sessions recorded yet")?;
                return Ok(0);
            }
            writeln!(
                out,
                "{:>5}  {:<8}  {:<24}  {:<9}  {:>6}  {:>7}  {:>5}  {:>5}  {:<20}  {:<12}  WORKSPACE",
                "ID",
                "KIND",
                "STARTED",
                "STATUS",
                "MSGS",
                "CHANGES",
                "EDITS",
                "READS",
                "SERVER",
                "COMMIT"
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
        }
        SessionsCommand::Show { db, id, json } => {
            let db = db.open()?;
            let session = db.session(id)?;
            let documents = db.documents(id)?;
            if json {
                let value = serde_json::json!({"session": session, "documents": documents});
                serde_json::to_writer_pretty(&mut out, &value)?;
                writeln!(out)?;
                return Ok(0);
            }
            writeln!(
                out,
                "session {}  ({}, {})",
                session.id, session.kind, session.status
            )?;
            writeln!(out, "  started     {}", session.started_at)?;
            writeln!(
                out,
                "  ended       {}",
                session.ended_at.as_deref().unwrap_or("-")
            )?;
            writeln!(
                out,
                "  workspace   {}",
                session.workspace.as_deref().unwrap_or("-")
            )?;
            writeln!(
                out,
                "  git HEAD    {}",
                session.git_head.as_deref().unwrap_or("-")
            )?;
            writeln!(
                out,
                "  commit      {}",
                session
                    .linked_commit
                    .as_deref()
                    .unwrap_or("- (see `sessions link`)")
            )?;
            writeln!(out, "  server      {}", session.server_command.join(" "))?;
            writeln!(
                out,
                "  server info {}",
                session.server.as_deref().unwrap_or("-")
            )?;
            writeln!(
                out,
                "  client      {}",
                session.client.as_deref().unwrap_or("-")
            )?;
            writeln!(
                out,
                "  encoding    {}",
                session.position_encoding.as_deref().unwrap_or("-")
            )?;
            writeln!(
                out,
                "  exit code   {}",
                session.exit_code.map_or("-".to_string(), |c| c.to_string())
            )?;
            writeln!(
                out,
                "  recorded    {} messages, {} changes ({} edits), {} reads, {} signals, {} dropped",
                session.messages,
                session.changes,
                count_or_unknown(session.edits),
                session.reads,
                session.signals,
                session.dropped
            )?;
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
        }
        SessionsCommand::Export {
            db,
            id,
            format,
            out: file,
            from,
            to,
            files,
            pause_ms,
        } => {
            let spec = SliceSpec { from, to, files };
            let trajectory =
                nextedit::sessions::load_session_trajectory(&db.open()?, id, &spec, pause_ms)?;
            let mut sink: Box<dyn Write> = match &file {
                Some(path) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                )),
                None => Box::new(&mut out),
            };
            match format {
                ExportFormat::Json => {
                    serde_json::to_writer_pretty(&mut sink, &trajectory)?;
                    writeln!(sink)?;
                }
                ExportFormat::Jsonl => {
                    let header = serde_json::json!({
                        "type": "session",
                        "format": trajectory.format,
                        "version": trajectory.version,
                        "session": trajectory.session,
                    });
                    writeln!(sink, "{header}")?;
                    for file in &trajectory.files {
                        writeln!(
                            sink,
                            "{}",
                            serde_json::json!({"type": "file", "file": file})
                        )?;
                    }
                    for event in &trajectory.events {
                        writeln!(
                            sink,
                            "{}",
                            serde_json::json!({"type": "event", "event": event})
                        )?;
                    }
                    for edit in &trajectory.edits {
                        writeln!(
                            sink,
                            "{}",
                            serde_json::json!({"type": "edit", "edit": edit})
                        )?;
                    }
                    writeln!(
                        sink,
                        "{}",
                        serde_json::json!({"type": "order", "order": trajectory.order})
                    )?;
                    if !trajectory.gold.is_empty() {
                        writeln!(
                            sink,
                            "{}",
                            serde_json::json!({"type": "gold", "gold": trajectory.gold})
                        )?;
                    }
                }
            }
            sink.flush()?;
        }
        SessionsCommand::Link {
            db,
            id,
            repo,
            limit,
        } => return link(db, id, repo, limit, &mut out),
        SessionsCommand::Delete { db, id } => {
            let erased = db.open()?.delete_session(id)?;
            writeln!(out, "deleted session {id}")?;
            print_erasure(&mut out, &erased)?;
        }
        SessionsCommand::Purge { db, files } => {
            let mut globs = globset::GlobSetBuilder::new();
            for pattern in &files {
                // As in .gitignore: a pattern without a slash matches at any depth.
                let anywhere = if pattern.contains('/') {
                    pattern.clone()
                } else {
                    format!("**/{pattern}")
                };
                globs.add(
                    globset::GlobBuilder::new(&anywhere)
                        .literal_separator(true)
                        .build()
                        .with_context(|| format!("--file {pattern:?} is not a valid glob"))?,
                );
            }
            let globs = globs.build().context("building the --file globs")?;
            let erased = db.open()?.purge_files(&|path| globs.is_match(path))?;
            if erased.documents.is_empty() {
                writeln!(out, "no stored file matches {}", files.join(", "))?;
            }
            for (session, path) in &erased.documents {
                writeln!(out, "removed {path} from session {session}")?;
            }
            print_erasure(&mut out, &erased)?;
        }
        SessionsCommand::ReplayText { db, id, file, seq } => {
            let db = db.open()?;
            let doc = db.find_document(id, &file)?;
            if doc.excluded {
                anyhow::bail!(
                    "{} is excluded by the privacy rules: its text was never recorded",
                    doc.path
                );
            }
            match db.document_text(id, &doc.uri, seq)? {
                Some(text) => out.write_all(text.as_bytes())?,
                None => anyhow::bail!("session {id} never stored the text of {}", doc.path),
            }
        }
    }
    Ok(0)
}

/// `sessions link`: finds, stores and prints the commit; 1 when there is none.
fn link(
    db: DbArg,
    id: i64,
    repo: Option<PathBuf>,
    limit: usize,
    out: &mut impl Write,
) -> anyhow::Result<i32> {
    use nextedit::history::link::{EditedFile, LinkOutcome, find_link, repository_root};
    let mut database = db.open()?;
    let session = database.session(id)?;
    let workspace = session.workspace.as_deref().map(PathBuf::from);
    let Some(repo) = repo.or_else(|| workspace.clone()) else {
        anyhow::bail!("session {id} has no known workspace: pass --repo DIR");
    };
    let root = repository_root(&repo).with_context(|| {
        format!(
            "session {id}: {} is not in a git repository",
            repo.display()
        )
    })?;
    let mut files = Vec::new();
    for doc in database.documents(id)? {
        if doc.excluded || doc.changes == 0 {
            continue;
        }
        let Some(text) = database.document_text(id, &doc.uri, None)? else {
            continue;
        };
        let path = Path::new(&doc.path);
        let absolute = match (&workspace, path.is_absolute()) {
            (Some(workspace), false) => workspace.join(path),
            _ => path.to_path_buf(),
        };
        let absolute = absolute.canonicalize().unwrap_or(absolute);
        let relative = absolute.strip_prefix(&root).with_context(|| {
            format!(
                "session {id}: {} lies outside the repository {}",
                doc.path,
                root.display()
            )
        })?;
        files.push(EditedFile {
            path: relative.to_string_lossy().into_owned(),
            text,
        });
    }
    if files.is_empty() {
        anyhow::bail!("session {id} edited no file whose text was recorded: nothing to link");
    }
    let since = session.git_head.as_deref();
    match find_link(&root, since, &files, limit)
        .with_context(|| format!("session {id}: cannot search {}", root.display()))?
    {
        LinkOutcome::Linked(commit) => {
            database.set_linked_commit(id, &commit.sha)?;
            writeln!(
                out,
                "session {id} linked to {} {}",
                commit.sha, commit.summary
            )?;
            Ok(0)
        }
        LinkOutcome::NotFound { examined, closest } => {
            let which = since.map_or("most recent commits".to_string(), |s| {
                format!("commits after {}", &s[..s.len().min(12)])
            });
            let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
            writeln!(
                out,
                "no commit links session {id}: none of the {examined} {which} has the session's final text in every edited file ({})",
                names.join(", ")
            )?;
            match closest {
                Some(c) => writeln!(
                    out,
                    "closest: {} {} ({} of {} files match; differs: {})",
                    c.sha,
                    c.summary,
                    c.matching.len(),
                    files.len(),
                    c.differing.join(", ")
                )?,
                None => writeln!(out, "closest: none (no commit to examine)")?,
            }
            Ok(1)
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
