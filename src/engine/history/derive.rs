//! One commit → one trajectory: files, edits with structure and identifiers,
//! the partial order, and the edits replayed as change events in natural order.
//! [`derive_from_source`] also checks out the trees the `--lsp` pass reads.

use serde_json::{Value, json};

use crate::core::syntax::structure::{FileStructure, analyze_pair};
use crate::core::trajectory::{
    Annotations, Change, CommitInfo, Edit, Event, EventBody, FileEntry, Origin, RefutedReason,
    SessionInfo, SessionKind, Trajectory, apply_byte_edit,
};

use super::HistoryError;
use super::dependency::Dependency;
use super::dependency::{EditFacts, dependencies};
use super::extract::{FileEdits, LineEdit, RoundTripError, extract_file, split_lines};
use super::lsp::{
    EditSpan, LspFindings, LspSetup, LspStats, Refutation, ServerSet, SideStructures,
    lsp_dependencies, lsp_dependencies_on,
};
use super::lsp_workspace::KeptWorkspace;
use super::order::{edit_id, order_from_dependencies};
use super::source::{CommitRecord, CommitSource};
use super::symbols::{EditSymbols, Side, edit_symbols_seen};
use super::visibility::FileNames;

/// A derived edit with the file it belongs to.
struct Located<'a> {
    file: usize,
    edit: &'a LineEdit,
    symbols: EditSymbols,
    path: Vec<Value>,
    scope: Vec<String>,
}

/// Derives the trajectory of one commit.
///
/// Fails for merge commits and when the edits do not rebuild the commit byte for
/// byte (checked per file on the extracted edits and again on the change events).
pub fn derive_commit(
    record: &CommitRecord,
    project: Option<&str>,
) -> Result<Trajectory, HistoryError> {
    derive(record, project, None).map(|(trajectory, _)| trajectory)
}

/// The `--lsp` pass as `derive` runs it: the commit's files, structures, edits and
/// syntactic dependencies in, the servers' findings out.
type LspPass<'a> = Box<
    dyn FnOnce(
            &[FileEdits],
            &[SideStructures],
            &[EditSpan],
            &[Dependency],
        ) -> (LspFindings, LspStats)
        + 'a,
>;

/// [`derive_commit`] plus the `--lsp` pass: language servers on the parent and
/// child trees refute name-based reasons that resolve elsewhere and add
/// `lsp_def_use` and `lsp_reference` reasons (`history::lsp`).
pub fn derive_commit_with_lsp(
    record: &CommitRecord,
    project: Option<&str>,
    setup: &LspSetup,
) -> Result<(Trajectory, LspStats), HistoryError> {
    let pass: LspPass = Box::new(|files, structures, spans, found| {
        lsp_dependencies(setup, files, structures, spans, found)
    });
    derive(record, project, Some(pass))
        .map(|(trajectory, stats)| (trajectory, stats.unwrap_or_default()))
}

/// [`derive_commit_with_lsp`] with servers kept alive across a range: `kept`'s two
/// directories are brought to `record`'s parent and commit trees (only the files that
/// differ rewritten, the running servers told) and its servers asked. Merge commits are
/// refused before anything is written.
pub fn derive_kept(
    source: &impl CommitSource,
    record: &CommitRecord,
    project: Option<&str>,
    kept: &mut KeptWorkspace,
) -> Result<(Trajectory, LspStats), HistoryError> {
    if record.parents.len() > 1 {
        return derive_commit(record, project).map(|t| (t, LspStats::default()));
    }
    let (setup, sides) = kept.sync(source, record)?;
    let pass: LspPass = Box::new(move |files, structures, spans, found| {
        lsp_dependencies_on(setup, sides, files, structures, spans, found)
    });
    derive(record, project, Some(pass))
        .map(|(trajectory, stats)| (trajectory, stats.unwrap_or_default()))
}

/// Per-request timeout of the `--lsp` pass (the first request waits for the server's
/// analysis of the tree).
pub const LSP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Cap on requests (definition and references) per side and language in the `--lsp` pass.
pub const LSP_MAX_REQUESTS: usize = 2000;

/// Why a commit could not be derived from its repository.
#[derive(Debug, thiserror::Error)]
pub enum DeriveFromSourceError {
    /// No scratch directory for the trees the servers read.
    #[error("creating a scratch directory for the language servers")]
    Scratch(#[source] std::io::Error),
    /// Checking out or deriving failed.
    #[error(transparent)]
    History(#[from] HistoryError),
}

/// Derives `record` from `source`, with the `--lsp` pass when `servers` are given:
/// the parent and commit trees are checked out into a scratch directory (removed
/// afterwards) for the servers to read. Merge commits are refused before anything is
/// written.
pub fn derive_from_source(
    source: &impl CommitSource,
    record: &CommitRecord,
    project: Option<&str>,
    servers: Option<&ServerSet>,
) -> Result<(Trajectory, Option<LspStats>), DeriveFromSourceError> {
    let Some(servers) = servers else {
        return Ok((derive_commit(record, project)?, None));
    };
    if record.parents.len() > 1 {
        // Refused by derive itself; no need to write trees first.
        return Ok((derive_commit(record, project)?, None));
    }
    let scratch = tempfile::tempdir().map_err(DeriveFromSourceError::Scratch)?;
    let parent_root = match record.parents.first() {
        Some(parent) => {
            let dir = scratch.path().join("parent");
            source.checkout(parent, &dir)?;
            Some(dir)
        }
        None => None,
    };
    let child_root = scratch.path().join("commit");
    source.checkout(&record.sha, &child_root)?;
    let setup = LspSetup {
        parent_root,
        child_root,
        servers: servers.clone(),
        timeout: LSP_TIMEOUT,
        max_requests: LSP_MAX_REQUESTS,
    };
    let (trajectory, stats) = derive_commit_with_lsp(record, project, &setup)?;
    Ok((trajectory, Some(stats)))
}

/// How the commits of a run get the `--lsp` pass: none, servers started for every
/// commit, or servers kept alive across the run (`lsp_workspace`).
#[allow(clippy::large_enum_variant)] // one per run, never moved in a loop
pub enum LspPlan {
    /// No `--lsp`.
    Off,
    /// Servers started for each commit and shut down after it.
    PerCommit(ServerSet),
    /// One server per language and side for the whole run.
    Kept(Box<KeptWorkspace>),
}

impl LspPlan {
    /// No pass without `servers`; else servers kept alive unless `per_commit`.
    pub fn new(
        servers: Option<ServerSet>,
        per_commit: bool,
    ) -> Result<LspPlan, DeriveFromSourceError> {
        Ok(match servers {
            None => LspPlan::Off,
            Some(servers) if per_commit => LspPlan::PerCommit(servers),
            Some(servers) => LspPlan::Kept(Box::new(
                KeptWorkspace::new(servers, LSP_TIMEOUT, LSP_MAX_REQUESTS)
                    .map_err(DeriveFromSourceError::Scratch)?,
            )),
        })
    }

    /// Derives `record` from `source` with this plan's pass (its stats: `None` without).
    pub fn derive(
        &mut self,
        source: &impl CommitSource,
        record: &CommitRecord,
        project: Option<&str>,
    ) -> Result<(Trajectory, Option<LspStats>), DeriveFromSourceError> {
        match self {
            LspPlan::Off => derive_from_source(source, record, project, None),
            LspPlan::PerCommit(servers) => {
                derive_from_source(source, record, project, Some(servers))
            }
            LspPlan::Kept(kept) => derive_kept(source, record, project, kept)
                .map(|(trajectory, stats)| (trajectory, Some(stats)))
                .map_err(DeriveFromSourceError::from),
        }
    }
}

fn derive(
    record: &CommitRecord,
    project: Option<&str>,
    lsp: Option<LspPass>,
) -> Result<(Trajectory, Option<LspStats>), HistoryError> {
    if record.parents.len() > 1 {
        return Err(HistoryError::Merge {
            commit: record.sha.clone(),
            parents: record.parents.len(),
        });
    }
    let files: Vec<FileEdits> = record
        .changes
        .iter()
        .map(|change| extract_file(&record.sha, change))
        .collect::<Result<_, _>>()?;
    let structures: Vec<SideStructures> = files.iter().map(structures_of).collect();
    let located = locate_edits(&files, &structures);

    let facts: Vec<EditFacts> = located
        .iter()
        .map(|l| EditFacts {
            path: &files[l.file].path,
            symbols: &l.symbols,
            before_text: &l.edit.before_text,
            after_text: &l.edit.after_text,
            scope: &l.scope,
        })
        .collect();
    let mut found = dependencies(&facts);
    let mut refuted: Vec<Refutation> = Vec::new();
    let stats = lsp.map(|pass| {
        let spans: Vec<EditSpan> = located
            .iter()
            .map(|l| EditSpan {
                file: l.file,
                before: (l.edit.before.start, l.edit.before.end),
                after: (l.edit.after.start, l.edit.after.end),
                changed: &l.symbols.changed,
            })
            .collect();
        let (findings, stats) = pass(&files, &structures, &spans, &found);
        // A refuted reason leaves the order; an edge with no reason left goes with it.
        found.retain(|d| !findings.refuted.iter().any(|r| &r.dependency == d));
        found.extend(findings.added);
        refuted = findings.refuted;
        stats
    });
    found.sort();
    found.dedup();
    let order = order_from_dependencies(located.len(), &found);

    let mut trajectory = Trajectory::new(commit_session(record, project));
    trajectory.files = files.iter().map(file_entry).collect();
    trajectory.edits = located
        .iter()
        .enumerate()
        .map(|(index, l)| to_edit(index, &files[l.file].path, l))
        .collect();
    record_refutations(&mut trajectory.edits, &refuted);
    let natural: Vec<usize> = order
        .natural
        .iter()
        .filter_map(|id| id.strip_prefix('e').and_then(|n| n.parse().ok()))
        .collect();
    trajectory.events = replay_events(&record.sha, &files, &located, &natural)?;
    trajectory.order = order;
    Ok((trajectory, stats))
}

/// Each side's syntax structure of a changed file with edits in a language we parse.
fn structures_of(file: &FileEdits) -> SideStructures {
    match file.language {
        Some(language) if !file.edits.is_empty() => {
            analyze_pair(language, file.old_text.as_deref(), file.new_text.as_deref())
        }
        _ => (None, None),
    }
}

/// Every edit of every file with its identifiers, structural path and scope names.
fn locate_edits<'f>(files: &'f [FileEdits], structures: &[SideStructures]) -> Vec<Located<'f>> {
    // What each file binds on each side, from its whole text: an edit's lines rarely
    // hold the imports its uses rely on.
    let file_names: Vec<[Option<FileNames>; 2]> = files
        .iter()
        .zip(structures)
        .map(|(file, (parent, child))| {
            let names = |structure: Option<&FileStructure>, text: Option<&String>| {
                Some(FileNames::new(file.language?, structure?, text?))
            };
            [
                names(parent.as_ref(), file.old_text.as_ref()),
                names(child.as_ref(), file.new_text.as_ref()),
            ]
        })
        .collect();
    let mut located = Vec::new();
    for (file_index, file) in files.iter().enumerate() {
        let (parent, child) = (
            structures[file_index].0.as_ref(),
            structures[file_index].1.as_ref(),
        );
        for edit in &file.edits {
            let [parent_names, child_names] = &file_names[file_index];
            let symbols = edit_symbols_seen(
                file_index,
                parent.map(|s| Side {
                    structure: s,
                    start: edit.before.start,
                    end: edit.before.end,
                }),
                child.map(|s| Side {
                    structure: s,
                    start: edit.after.start,
                    end: edit.after.end,
                }),
                [parent_names.as_ref(), child_names.as_ref()],
            );
            let path = structural_path(edit, parent, child);
            let scope = path
                .iter()
                .filter_map(|p| p["name"].as_str().map(str::to_string))
                .collect();
            located.push(Located {
                file: file_index,
                edit,
                symbols,
                path,
                scope,
            });
        }
    }
    located
}

/// The session of a commit's trajectory.
fn commit_session(record: &CommitRecord, project: Option<&str>) -> SessionInfo {
    SessionInfo {
        id: record.sha.clone(),
        kind: SessionKind::Commit,
        workspace: None,
        git_head: Some(record.sha.clone()),
        commit: Some(CommitInfo {
            sha: record.sha.clone(),
            parent: record.parents.first().cloned(),
            message: Some(record.message.clone()),
            project: project.map(str::to_string),
        }),
        repository_url: None,
        server_command: Vec::new(),
        position_encoding: None,
        started_at: None,
        ended_at: None,
    }
}

/// A changed file as the trajectory lists it.
fn file_entry(f: &FileEdits) -> FileEntry {
    FileEntry {
        path: f.path.clone(),
        uri: None,
        language: f.language.map(|l| l.name().to_string()),
        base_text: f.old_text.clone(),
        final_text: f.new_text.clone(),
        excluded: false,
        status: Some(f.status.as_str().to_string()),
        old_path: f.old_path.clone(),
        skipped: f.skipped.as_ref().map(|r| r.to_string()),
    }
}

/// Keeps each refuted reason on the dependent edit (`annotations.lsp_refuted`: the
/// providing edit, the reason and where the server resolved the use instead), so
/// `eval-order --explain` and readers of the trajectory see what `--lsp` removed.
fn record_refutations(edits: &mut [Edit], refuted: &[Refutation]) {
    for refutation in refuted {
        let d = &refutation.dependency;
        let Some(edit) = edits.get_mut(d.to) else {
            continue;
        };
        edit.annotations.lsp_refuted.push(RefutedReason {
            from: edit_id(d.from),
            kind: d.kind.into(),
            detail: d.detail.clone(),
            resolved: refutation.resolved.clone(),
        });
    }
}

fn structural_path(
    edit: &LineEdit,
    parent: Option<&FileStructure>,
    child: Option<&FileStructure>,
) -> Vec<Value> {
    // Historian: the construct around the edit's first line or, for an insertion,
    // the line just before the insertion point, in the parent (child for new files).
    let (structure, line) = match parent {
        Some(p) if edit.before.is_empty() => match edit.before.start.checked_sub(1) {
            Some(line) => (p, line),
            None => return Vec::new(),
        },
        Some(p) => (p, edit.before.start),
        None => match child {
            Some(c) => (c, edit.after.start),
            None => return Vec::new(),
        },
    };
    structure
        .path_at(line)
        .into_iter()
        .map(|index| {
            let scope = &structure.scopes[index];
            json!({"type": scope.kind.as_str(), "name": scope.name, "signature": scope.signature, "at_line": scope.start_line})
        })
        .collect()
}

fn names(set: &std::collections::BTreeSet<String>) -> Value {
    Value::from(set.iter().cloned().collect::<Vec<_>>())
}

fn to_edit(index: usize, path: &str, located: &Located) -> Edit {
    let s = &located.symbols;
    let annotations = Annotations {
        hunk: Some(index),
        identifiers: Some(json!({
            "parent": {"defined": names(&s.defined_before), "used": names(&s.used_before), "imported": names(&s.imported_before)},
            "child": {"defined": names(&s.defined_after), "used": names(&s.used_after), "imported": names(&s.imported_after)},
            "added": s.defined_after.difference(&s.defined_before).cloned().collect::<Vec<_>>(),
            "removed": s.defined_before.difference(&s.defined_after).cloned().collect::<Vec<_>>(),
            "renamed": s.renamed.iter().map(|(from, to)| json!({"from": from, "to": to})).collect::<Vec<_>>(),
        })),
        structure: (!located.path.is_empty()).then(|| located.path.clone()),
        ..Annotations::default()
    };
    Edit {
        id: edit_id(index),
        file: path.to_string(),
        kind: located.edit.kind,
        before_lines: located.edit.before,
        after_lines: located.edit.after,
        start_byte: None,
        before_text: located.edit.before_text.clone(),
        after_text: located.edit.after_text.clone(),
        context_before: located.edit.context_before.clone(),
        context_after: located.edit.context_after.clone(),
        structural_path: located
            .path
            .iter()
            .filter_map(|p| p["signature"].as_str().map(str::to_string))
            .collect(),
        origin: Origin::Commit,
        events: Vec::new(),
        annotations,
    }
}

/// Applies the edits in natural order as byte-level change events and checks that
/// every file ends exactly at the commit's text.
fn replay_events(
    sha: &str,
    files: &[FileEdits],
    located: &[Located],
    natural: &[usize],
) -> Result<Vec<Event>, HistoryError> {
    let mut current: Vec<String> = files
        .iter()
        .map(|f| f.old_text.clone().unwrap_or_default())
        .collect();
    let mut versions = vec![0i64; files.len()];
    let mut applied = vec![false; located.len()];
    let mut events = Vec::with_capacity(natural.len());
    for (seq, &index) in natural.iter().enumerate() {
        let l = &located[index];
        // Edits of a file are disjoint and numbered top to bottom, so only the
        // applied edits above this one shift it.
        let shift: isize = located[..index]
            .iter()
            .zip(&applied)
            .filter(|(other, done)| **done && other.file == l.file)
            .map(|(other, _)| other.edit.after.len() as isize - other.edit.before.len() as isize)
            .sum();
        let start_line = (l.edit.before.start as isize + shift) as usize;
        let text = &mut current[l.file];
        let lines = split_lines(text.as_bytes());
        let start_byte: usize = lines[..start_line.min(lines.len())]
            .iter()
            .map(|x| x.len())
            .sum();
        let end_byte = start_byte + l.edit.before_text.len();
        let path = &files[l.file].path;
        apply_byte_edit(
            text,
            start_byte,
            end_byte,
            &l.edit.before_text,
            &l.edit.after_text,
        )
        .map_err(|e| HistoryError::RoundTrip {
            commit: sha.to_string(),
            file: path.clone(),
            detail: RoundTripError::Replay { index, source: e },
        })?;
        applied[index] = true;
        versions[l.file] += 1;
        let last = |len: usize| start_line + len.max(1) - 1;
        events.push(Event {
            seq: seq as u64,
            t_ms: 0.0,
            body: EventBody::Change(Change {
                file: path.clone(),
                version: versions[l.file],
                start_byte,
                end_byte,
                start_line,
                end_line: last(l.edit.before.len()),
                new_end_line: last(l.edit.after.len()),
                before: l.edit.before_text.clone(),
                after: l.edit.after_text.clone(),
                origin: Origin::Commit,
            }),
        });
    }
    for (file, text) in files.iter().zip(&current) {
        if file.skipped.is_some() {
            continue;
        }
        if text.as_str() != file.new_text.as_deref().unwrap_or("") {
            return Err(HistoryError::RoundTrip {
                commit: sha.to_string(),
                file: file.path.clone(),
                detail: RoundTripError::Events,
            });
        }
    }
    Ok(events)
}
