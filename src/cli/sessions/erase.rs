//! `sessions delete` and `sessions purge`: erasure, and what it took with it.

use nextedit::store::Erase;
use std::io::Write;

use anyhow::Context;
use globset::GlobSet;
use nextedit::store::{Database, Erasure};

/// The `--file` globs of `sessions purge`: as in .gitignore, a pattern without a
/// slash matches a file name at any depth.
pub fn file_globs(files: &[String]) -> anyhow::Result<GlobSet> {
    let mut globs = globset::GlobSetBuilder::new();
    for pattern in files {
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
    globs.build().context("building the --file globs")
}

/// Deletes session `id` and says what went with it.
pub fn delete(db: &mut Database, id: i64, out: &mut impl Write) -> anyhow::Result<()> {
    let erased = db.delete_session(id)?;
    writeln!(out, "deleted session {id}")?;
    print_erasure(out, &erased)
}

/// Removes every stored file `globs` matches (`files` are the patterns as given).
pub fn purge(
    db: &mut Database,
    globs: &GlobSet,
    files: &[String],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let erased = db.purge_files(&|path| globs.is_match(path))?;
    if erased.documents.is_empty() {
        writeln!(out, "no stored file matches {}", files.join(", "))?;
    }
    for (session, path) in &erased.documents {
        writeln!(out, "removed {path} from session {session}")?;
    }
    print_erasure(out, &erased)
}

/// The runs an erasure deleted and whether the log could be emptied.
fn print_erasure(out: &mut impl Write, erased: &Erasure) -> anyhow::Result<()> {
    for run in &erased.runs {
        writeln!(out, "deleted replay run {run} (it held a copy)")?;
    }
    for (deleted, promoted) in &erased.regrouped {
        writeln!(
            out,
            "run {promoted} now names the repetition group run {deleted} started"
        )?;
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
