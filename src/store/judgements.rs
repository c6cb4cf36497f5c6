//! What a judge model said about replay steps (`run_step_judgements`, schema v12):
//! written with their step, read back with it and per run for `nextedit report`.

use rusqlite::params;

use crate::engine::judge::{JudgePrompt, Judgement, Verdict};
use crate::engine::suggest::{CallFailure, FailureKind};

/// The columns a judgement is read from, in [`judgement_at`]'s order.
pub(super) const COLUMNS: &str =
    "prompt, yes, reverts_edits, confidence, failure_kind, failure_message, cached";

/// Writes a step's judgement inside the transaction that records the step.
pub(super) fn insert_step_judgement(
    tx: &rusqlite::Transaction<'_>,
    run: i64,
    key: &str,
    step: usize,
    judgement: &Judgement,
) -> rusqlite::Result<()> {
    let (mut yes, mut reverts, mut confidence, mut kind, mut message) =
        (None, None, None, None, None);
    match &judgement.result {
        Ok(Verdict::Nep { yes: y }) => yes = Some(*y),
        Ok(Verdict::ZedQa {
            reverts_edits,
            confidence: c,
        }) => {
            reverts = Some(*reverts_edits);
            confidence = Some(i64::from(*c));
        }
        Err(failure) => {
            kind = Some(failure.kind.key());
            message = Some(crate::base::secrets::scrub(&failure.message).into_owned());
        }
    }
    tx.execute(
        "INSERT OR REPLACE INTO run_step_judgements (run_id, key, step, prompt, yes, reverts_edits,
                confidence, failure_kind, failure_message, cached)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            run,
            key,
            step as i64,
            judgement.prompt.key(),
            yes,
            reverts,
            confidence,
            kind,
            message,
            judgement.cached
        ],
    )?;
    Ok(())
}

/// The judgement in a row's [`COLUMNS`] from column `first` on (`None`: no row joined,
/// or one this build cannot read).
pub(super) fn judgement_at(
    row: &rusqlite::Row<'_>,
    first: usize,
) -> rusqlite::Result<Option<Judgement>> {
    let Some(prompt) = row.get::<_, Option<String>>(first)? else {
        return Ok(None);
    };
    let Some(prompt) = JudgePrompt::from_key(&prompt) else {
        return Ok(None);
    };
    let yes: Option<bool> = row.get(first + 1)?;
    let reverts: Option<bool> = row.get(first + 2)?;
    let confidence: Option<i64> = row.get(first + 3)?;
    let kind: Option<String> = row.get(first + 4)?;
    let message: Option<String> = row.get(first + 5)?;
    let cached: bool = row.get(first + 6)?;
    let result = match (kind, prompt, yes, reverts, confidence) {
        (Some(kind), ..) => Err(CallFailure {
            kind: FailureKind::from_key(&kind).unwrap_or(FailureKind::BadResult),
            message: message.unwrap_or_default(),
        }),
        (None, JudgePrompt::Nep, Some(yes), ..) => Ok(Verdict::Nep { yes }),
        (None, JudgePrompt::ZedQa, _, Some(reverts_edits), Some(confidence)) => {
            Ok(Verdict::ZedQa {
                reverts_edits,
                confidence: confidence.clamp(1, 5) as u8,
            })
        }
        _ => return Ok(None),
    };
    Ok(Some(Judgement {
        prompt,
        result,
        cached,
    }))
}
