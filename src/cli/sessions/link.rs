//! `sessions link`: a session linked to the commit that contains its edits.

use nextedit::store::SessionRead;
use nextedit::store::SessionStore;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use nextedit::engine::history::link::{LinkOutcome, find_link, repository_root};
use nextedit::service::sessions::edited_files;
use nextedit::store::Database;

/// `sessions link`: finds, stores and prints the commit; 1 when there is none.
pub fn link(
    database: &mut Database,
    id: i64,
    repo: Option<PathBuf>,
    limit: usize,
    out: &mut impl Write,
) -> anyhow::Result<i32> {
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
    let files = edited_files(database, id, workspace.as_deref(), &root)?;
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
