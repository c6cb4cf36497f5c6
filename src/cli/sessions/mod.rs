//! `nextedit sessions`: list, inspect, export and delete recorded sessions.
//!
//! The subcommands and `export` are here; [`inspect`] prints `list` and `show`,
//! [`link`] links a session to its commit, [`erase`] deletes and purges.

mod erase;
mod inspect;
mod link;

use nextedit::store::SessionRead;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use nextedit::core::trajectory::{SliceBound, SliceSpec, write_jsonl};
use nextedit::service::sessions::load_session_trajectory;
use nextedit::store::Database;

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
    ///
    /// --offers writes the offers the language server made instead, one per answer
    /// (preference-training material): the file's text before the place (at most 2000
    /// characters), the items, the outcome (docs/live.md) and, for a dismissed
    /// answer, what the developer wrote there instead within 30 s (e.g. `nextedit
    /// sessions export 12 --offers --format jsonl -o offers.jsonl`).
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
        #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = nextedit::base::ranges::pause_ms)]
        pause_ms: Option<f64>,
        /// Write the session's offers with their outcomes instead of the trajectory
        #[arg(long)]
        offers: bool,
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
        #[arg(long, default_value_t = nextedit::engine::history::link::DEFAULT_LIMIT, allow_negative_numbers = true, value_parser = nextedit::base::ranges::count)]
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
    /// reads and signals, the server's offers about it or editing it, the raw messages
    /// that name it and the answers to them, and
    /// its entries in commit-derived and imported sessions. Replay runs that copied such
    /// a file are deleted. The database file is rebuilt afterwards, like `delete`.
    ///
    /// Example: nextedit sessions purge --file 'config/secrets/**' --file '*.env'
    Purge {
        #[command(flatten)]
        db: DbArg,
        /// Glob over workspace-relative paths (repeatable; an empty one is refused)
        #[arg(long = "file", value_name = "GLOB", required = true, value_parser = nextedit::base::ranges::not_blank)]
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

/// Characters of context before each offer in `sessions export --offers`.
const OFFER_CONTEXT_CHARS: usize = 2000;

/// `sessions export --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Jsonl,
}

/// Runs `nextedit sessions …`.
pub fn run(command: SessionsCommand) -> anyhow::Result<i32> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        SessionsCommand::List { db, json } => inspect::list(&db.open()?, json, &mut out)?,
        SessionsCommand::Show { db, id, json } => inspect::show(&db.open()?, id, json, &mut out)?,
        SessionsCommand::Export {
            db,
            id,
            format,
            out: file,
            from,
            to,
            files,
            pause_ms,
            offers,
        } => {
            let spec = SliceSpec { from, to, files };
            let trajectory = load_session_trajectory(&db.open()?, id, &spec, pause_ms)?;
            let mut sink: Box<dyn Write> = match &file {
                Some(path) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                )),
                None => Box::new(&mut out),
            };
            if offers {
                let lines = nextedit::engine::live::export_lines(&trajectory, OFFER_CONTEXT_CHARS);
                match format {
                    ExportFormat::Json => {
                        serde_json::to_writer_pretty(&mut sink, &lines)?;
                        writeln!(sink)?;
                    }
                    ExportFormat::Jsonl => {
                        for line in lines {
                            writeln!(sink, "{line}")?;
                        }
                    }
                }
                sink.flush()?;
                return Ok(0);
            }
            match format {
                ExportFormat::Json => {
                    serde_json::to_writer_pretty(&mut sink, &trajectory)?;
                    writeln!(sink)?;
                }
                ExportFormat::Jsonl => write_jsonl(&trajectory, &mut sink)?,
            }
            sink.flush()?;
        }
        SessionsCommand::Link {
            db,
            id,
            repo,
            limit,
        } => return link::link(&mut db.open()?, id, repo, limit, &mut out),
        SessionsCommand::Delete { db, id } => erase::delete(&mut db.open()?, id, &mut out)?,
        SessionsCommand::Purge { db, files } => {
            let globs = erase::file_globs(&files)?;
            erase::purge(&mut db.open()?, &globs, &files, &mut out)?;
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
