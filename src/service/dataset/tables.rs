//! The database's sessions and replay runs as dataset [`Table`]s.
//!
//! A trajectory's repository (the unit of a split) is its commit's project (the
//! repository directory's name, `.git` dropped), else its workspace directory's name;
//! rows without either share the repository `""`. A replay step's repository is the
//! one of the trajectory it replays. An item that cannot be read (a session whose texts
//! do not rebuild, a run's trajectory that is not valid JSON) is left out and named in
//! [`Skipped`]; the rest go on.

use crate::store::RunRead;
use crate::store::RunResults;
use crate::store::SessionRead;
use std::borrow::Cow;
use std::path::Path;

use serde_json::json;

use super::{Column, ColumnType, DatasetKind, Row, Table, Value};
use crate::base::progress::Progress;
use crate::core::trajectory::{SliceSpec, Trajectory};
use crate::engine::judge::{Judgement, Verdict};
use crate::service::sessions::load_session_trajectory;
use crate::store::{Database, StoreError};

/// An item left out of a table, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// What it was (`session 3`, `run 2 trajectory x`).
    pub item: String,
    /// Why it was left out.
    pub reason: String,
}

const fn column(name: &'static str, kind: ColumnType, nullable: bool, doc: &'static str) -> Column {
    Column {
        name: Cow::Borrowed(name),
        kind,
        nullable,
        doc: Cow::Borrowed(doc),
    }
}

use ColumnType::{Float64, Int64, Text};

/// The columns of `nextedit export trajectories`.
pub const TRAJECTORY_COLUMNS: &[Column] = &[
    column(
        "session",
        Int64,
        false,
        "session id in the database it came from",
    ),
    column("kind", Text, false, "`recorded`, `commit` or `imported`"),
    column(
        "repository",
        Text,
        false,
        "repository name (the unit of the split; empty when unknown)",
    ),
    column(
        "commit",
        Text,
        true,
        "commit id, for a commit-derived or linked trajectory",
    ),
    column("parent", Text, true, "the commit's parent"),
    column(
        "started_at",
        Text,
        true,
        "RFC 3339 start of a recorded session",
    ),
    column("files", Int64, false, "files in the trajectory"),
    column("events", Int64, false, "events (changes, reads, signals)"),
    column(
        "edits",
        Int64,
        false,
        "edits (coalesced changes, or a commit's runs of changed lines)",
    ),
    column(
        "trajectory",
        Text,
        false,
        "the whole trajectory document, JSON",
    ),
];

/// The columns of `nextedit export results`.
pub const RESULT_COLUMNS: &[Column] = &[
    column("run", Int64, false, "replay run id"),
    column("suggester", Text, false, "the run's suggester spec"),
    column(
        "trajectory",
        Text,
        false,
        "the trajectory's key in the run (`project@sha10`, `session:N`, a file)",
    ),
    column(
        "repository",
        Text,
        false,
        "the trajectory's repository (the unit of the split)",
    ),
    column("commit", Text, true, "the trajectory's commit id"),
    column(
        "step",
        Int64,
        false,
        "step number, from 1 (the initial edit is given, not a step)",
    ),
    column(
        "applied",
        Text,
        false,
        "id of the gold edit applied at the end of the step",
    ),
    column(
        "allowed",
        Int64,
        false,
        "gold edits allowed next at the step",
    ),
    column(
        "remaining",
        Int64,
        false,
        "gold edits not yet applied before the step",
    ),
    column(
        "precision",
        Float64,
        false,
        "precision of the ranked predictions",
    ),
    column("recall", Float64, false, "recall of the ranked predictions"),
    column("f1", Float64, false, "F1 of precision and recall"),
    column("tp", Int64, false, "Historian's true positives"),
    column("fp", Int64, false, "Historian's false positives"),
    column("fn", Int64, false, "Historian's false negatives"),
    column(
        "content_bleu",
        Float64,
        true,
        "BLEU-4 (0-100) of the step's content, when scored",
    ),
    column(
        "content_es",
        Float64,
        true,
        "ES-Line (0-1) of the step's content, when scored",
    ),
    column(
        "content_answer",
        Int64,
        true,
        "the right answer the content was scored against: 0 the gold edit, k its k-th alternative",
    ),
    column(
        "delta_chrf",
        Float64,
        true,
        "Zed's delta-chrF (0-100) of the step's content, in its file",
    ),
    column(
        "nep_partial",
        Int64,
        true,
        "NEP partial match (1/0) of the step's content",
    ),
    column(
        "nep_position",
        Int64,
        true,
        "NEP position match (1/0) of the step's content",
    ),
    column(
        "location_hit",
        Int64,
        true,
        "1 when the best-ranked prediction is at an edit allowed next, else 0",
    ),
    column(
        "judge_yes",
        Int64,
        true,
        "the judge's nep verdict (1 yes, 0 no)",
    ),
    column(
        "judge_reverts_edits",
        Int64,
        true,
        "the judge's zed-qa verdict: 1 when it says the prediction reverts edits",
    ),
    column(
        "judge_confidence",
        Int64,
        true,
        "the judge's zed-qa confidence (1-5)",
    ),
    column(
        "judge_failure",
        Text,
        true,
        "why the judge gave no verdict (`bad_result`, `timeout`, ...), when asked and it failed",
    ),
    column("suggest_ms", Float64, false, "suggest latency, ms"),
    column(
        "generate_ms",
        Float64,
        true,
        "generate latency, ms, when called",
    ),
    column(
        "predictions",
        Text,
        false,
        "ranked predictions, JSON array of {rank, file, start_line, end_line, text, confidence, matched, class}",
    ),
];

/// A step's judge verdict as the `judge_*` columns (all `None`: not asked).
#[derive(Debug, Default)]
struct JudgeColumns {
    yes: Option<bool>,
    reverts_edits: Option<bool>,
    confidence: Option<i64>,
    failure: Option<String>,
}

impl JudgeColumns {
    fn of(judgement: Option<&Judgement>) -> JudgeColumns {
        let Some(judgement) = judgement else {
            return JudgeColumns::default();
        };
        match &judgement.result {
            Ok(Verdict::Nep { yes }) => JudgeColumns {
                yes: Some(*yes),
                ..JudgeColumns::default()
            },
            Ok(Verdict::ZedQa {
                reverts_edits,
                confidence,
            }) => JudgeColumns {
                reverts_edits: Some(*reverts_edits),
                confidence: Some(i64::from(*confidence)),
                ..JudgeColumns::default()
            },
            Err(failure) => JudgeColumns {
                failure: Some(failure.kind.key().to_string()),
                ..JudgeColumns::default()
            },
        }
    }
}

/// The repository a trajectory belongs to.
pub fn repository_of(trajectory: &Trajectory) -> String {
    let session = &trajectory.session;
    let project = session.commit.as_ref().and_then(|c| c.project.clone());
    let workspace = || {
        let name = Path::new(session.workspace.as_deref()?).file_name()?;
        let name = name.to_string_lossy();
        Some(name.strip_suffix(".git").unwrap_or(&name).to_owned())
    };
    project.or_else(workspace).unwrap_or_default()
}

/// Stored sessions (`ids`, or every one when empty, oldest first) as trajectory rows;
/// `progress` counts the sessions.
pub fn trajectory_table(
    db: &Database,
    ids: &[i64],
    progress: &Progress,
) -> Result<(Table, Vec<Skipped>), StoreError> {
    let ids = if ids.is_empty() {
        let mut all: Vec<i64> = db.sessions()?.iter().map(|s| s.id).collect();
        all.sort_unstable();
        all
    } else {
        ids.to_vec()
    };
    progress.start(ids.len());
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for id in ids {
        let trajectory = match load_session_trajectory(db, id, &SliceSpec::default(), None) {
            Ok(t) => t,
            Err(error) => {
                progress.item(&format!("session {id}"), "skipped");
                skipped.push(Skipped {
                    item: format!("session {id}"),
                    reason: crate::service::run::error_chain(&error),
                });
                continue;
            }
        };
        progress.item(
            &format!("session {id}"),
            &format!("{} edits", trajectory.edits.len()),
        );
        let commit = trajectory.session.commit.as_ref();
        let document = serde_json::to_string(&trajectory).expect("a trajectory serialises");
        rows.push(Row {
            repository: repository_of(&trajectory),
            values: vec![
                Value::Int(id),
                Value::Text(trajectory.session.kind.as_str().to_owned()),
                Value::Text(repository_of(&trajectory)),
                commit.map(|c| c.sha.clone()).into(),
                commit.and_then(|c| c.parent.clone()).into(),
                trajectory.session.started_at.clone().into(),
                Value::Int(trajectory.files.len() as i64),
                Value::Int(trajectory.events.len() as i64),
                Value::Int(trajectory.edits.len() as i64),
                Value::Text(document),
            ],
        });
    }
    let table = Table {
        kind: DatasetKind::Trajectories,
        columns: Cow::Borrowed(TRAJECTORY_COLUMNS),
        rows,
    };
    Ok((table, skipped))
}

/// Replay runs (`runs`, or every one when empty, oldest first) as one row per step;
/// `progress` counts the runs.
pub fn result_table(
    db: &Database,
    runs: &[i64],
    progress: &Progress,
) -> Result<(Table, Vec<Skipped>), StoreError> {
    let runs = if runs.is_empty() {
        let mut all: Vec<i64> = db.runs()?.iter().map(|r| r.id).collect();
        all.sort_unstable();
        all
    } else {
        runs.to_vec()
    };
    progress.start(runs.len());
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for run in runs {
        let summary = db.run(run)?;
        let mut origin = std::collections::HashMap::new();
        for stored in db.run_trajectories(run)? {
            let parsed = stored
                .text
                .as_deref()
                .map(serde_json::from_str::<Trajectory>);
            match parsed {
                Some(Ok(t)) => {
                    let sha = t.session.commit.as_ref().map(|c| c.sha.clone());
                    origin.insert(stored.key, Some((repository_of(&t), sha)));
                }
                Some(Err(error)) => {
                    skipped.push(Skipped {
                        item: format!("run {run} trajectory {}", stored.key),
                        reason: format!("its stored trajectory is not valid: {error}"),
                    });
                    origin.insert(stored.key, None);
                }
                // Never read or derived: it has no steps either.
                None => {}
            }
        }
        let before = rows.len();
        for step in db.result_steps(run)? {
            let Some(Some((repository, sha))) = origin.get(&step.key) else {
                continue;
            };
            let predictions = json!(step.predictions).to_string();
            let verdict = JudgeColumns::of(step.judgement.as_ref());
            rows.push(Row {
                repository: repository.clone(),
                values: vec![
                    Value::Int(run),
                    Value::Text(summary.suggester.clone()),
                    Value::Text(step.key.clone()),
                    Value::Text(repository.clone()),
                    sha.clone().into(),
                    Value::Int(step.step),
                    Value::Text(step.applied),
                    Value::Int(step.allowed),
                    Value::Int(step.remaining),
                    Value::Float(step.prf.0),
                    Value::Float(step.prf.1),
                    Value::Float(step.prf.2),
                    Value::Int(step.counts.0),
                    Value::Int(step.counts.1),
                    Value::Int(step.counts.2),
                    step.content_bleu.into(),
                    step.content_es.into(),
                    step.content_answer.map(|k| k as i64).into(),
                    step.yardsticks.delta_chrf.into(),
                    step.yardsticks.nep_partial.into(),
                    step.yardsticks.nep_position.into(),
                    step.yardsticks.location_hit.into(),
                    verdict.yes.into(),
                    verdict.reverts_edits.into(),
                    verdict.confidence.into(),
                    verdict.failure.into(),
                    Value::Float(step.suggest_ms),
                    step.generate_ms.into(),
                    Value::Text(predictions),
                ],
            });
        }
        progress.item(
            &format!("run {run}"),
            &format!("{} steps", rows.len() - before),
        );
    }
    let table = Table {
        kind: DatasetKind::Results,
        columns: Cow::Borrowed(RESULT_COLUMNS),
        rows,
    };
    Ok((table, skipped))
}
