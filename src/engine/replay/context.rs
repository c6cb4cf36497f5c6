//! What a suggester read during a replay (the reads it reported per step, or those a
//! proxy in front of its language server recorded after its `$/nextedit/replayStep`
//! markers), as ContextBench steps scored against the trajectory's default gold (its
//! edited lines plus the definitions they use, or its own gold context) on its final
//! texts, for `nextedit report`.
//!
//! A suggester reads in the *current* coordinates of its step; the gold lives in the
//! final texts. The step's state is rebuilt from the stored applied order, and each
//! read is carried through the edits not applied yet at that step.

use super::engine::{ReplayError, reapply};
use crate::core::metrics::contextbench::{
    ContextBenchConfig, ContextRead, ContextStep, InstanceError, SessionScores, TrajectoryRepo,
    default_gold, evaluate_steps, regions_to_gold,
};
use crate::core::trajectory::{
    EditIndex, EventBody, LineRange, Origin, ReplayStepSignal, SignalKind, StepCall, Trajectory,
};
use crate::engine::suggest::{Call, ReadSource, StepRead};

/// The reads of a session recorded behind a suggester, each attributed to the step and
/// call named by the latest `replay_step` signal before it (`$/nextedit/replayStep`, sent
/// by a suggester through its proxied language server at the start of each call) (`suggest` when it names no
/// call, or one that is not `generate`): (step, read, in the step's current
/// coordinates). Reads before any marker (e.g. during `initialize`) are not attributed.
pub fn attribute_lsp_reads(session: &Trajectory) -> Vec<(usize, StepRead)> {
    let mut current: Option<(usize, Call)> = None;
    let mut out = Vec::new();
    for event in &session.events {
        match &event.body {
            EventBody::Signal(s) if s.kind == SignalKind::ReplayStep => {
                let signal = ReplayStepSignal::read(&s.payload);
                let call = match signal.call {
                    StepCall::Generate => Call::Generate,
                    StepCall::Suggest => Call::Suggest,
                };
                current = signal.step.map(|n| (n, call));
            }
            EventBody::Read(read) => {
                if let Some((step, call)) = current {
                    out.push((
                        step,
                        StepRead {
                            call,
                            source: ReadSource::Lsp,
                            file: read.file.clone(),
                            start_line: read.lines.start,
                            end_line: Some(read.lines.end),
                            via: Some(read.via.clone()),
                        },
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// Why a run's reads cannot be scored.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The trajectory's edits do not fit its files, or the stored order does not fit them.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The stored steps name an edit the trajectory does not have.
    #[error("the stored steps name edit {0}, which the trajectory does not have")]
    UnknownEdit(String),
    /// Nothing read resolves to a file with text.
    #[error(transparent)]
    Instance(#[from] InstanceError),
}

/// An unapplied edit's lines now (current) and in the final text, both half-open.
type Moved = ((usize, usize), (usize, usize));

/// Where a current line lands in the final text: unapplied edits below it shift
/// nothing, those above shift it by their line delta, and a line inside one lands at
/// that edit's first (`head`) or last new line.
fn to_final(line: usize, head: bool, spans: &[Moved]) -> usize {
    let mut shift: isize = 0;
    for &((cs, ce), (fs, fe)) in spans {
        if line >= cs && line < ce {
            return if head || fe == fs { fs } else { fe - 1 };
        }
        if ce <= line {
            shift += (fe - fs) as isize - (ce - cs) as isize;
        }
    }
    (line as isize + shift).max(0) as usize
}

/// The suggester's reads of each step in final coordinates: one step per call that
/// read something, in step order. `applied` is the stored order (initial edit first,
/// then the edit applied by each step) and `exclude_origins` the run's, so the states
/// are the replay's own; `reads[k]` are the reads of step `k + 1`.
pub fn replay_context_steps(
    trajectory: &Trajectory,
    exclude_origins: &[Origin],
    applied: &[String],
    reads: &[(usize, Vec<StepRead>)],
) -> Result<Vec<ContextStep>, ContextError> {
    let indices = trajectory.edit_indices();
    let index = |id: &String| {
        (indices.get(id.as_str()).copied()).ok_or_else(|| ContextError::UnknownEdit(id.clone()))
    };
    let order: Vec<EditIndex> = applied.iter().map(index).collect::<Result<_, _>>()?;
    let mut finished = reapply(trajectory, exclude_origins, &order, |_, _| {})?;
    // Index order is temporal for sequential edits, so each is ready in turn.
    for i in finished.remaining() {
        finished.apply(i);
    }
    let mut out = Vec::new();
    reapply(trajectory, exclude_origins, &order, |k, state| {
        // Reads of step k + 1 happen in the state after the first k + 1 edits.
        let Some((_, step_reads)) = reads.iter().find(|(s, _)| *s == k + 1) else {
            return;
        };
        let mut by_call: Vec<ContextStep> = Vec::new();
        for r in step_reads {
            // Edits still waiting for others have no lines in this state yet.
            let mut spans: Vec<Moved> = state
                .remaining()
                .into_iter()
                .filter(|&i| state.edits()[i].file == r.file && state.is_ready(i))
                .map(|i| (state.current_range(i), finished.current_range(i)))
                .collect();
            spans.sort();
            let end = r
                .end_line
                .unwrap_or_else(|| state.lines(&r.file).map_or(r.start_line + 1, <[_]>::len));
            let lines = (end > r.start_line).then(|| {
                let start = to_final(r.start_line, true, &spans);
                let last = to_final(end - 1, false, &spans).max(start);
                LineRange::new(start, last + 1)
            });
            let read = ContextRead {
                file: r.file.clone(),
                lines,
            };
            match by_call.iter_mut().find(|s| s.via == r.call.key()) {
                Some(step) => step.reads.push(read),
                None => by_call.push(ContextStep {
                    t_ms: None,
                    via: r.call.key().to_owned(),
                    reads: vec![read],
                }),
            }
        }
        out.extend(by_call);
    })?;
    Ok(out)
}

/// ContextBench scores of a replayed trajectory's reads against its default gold, on
/// its final texts; `None` when the suggester read nothing.
pub fn score_replay_reads(
    trajectory: &Trajectory,
    exclude_origins: &[Origin],
    applied: &[String],
    reads: &[(usize, Vec<StepRead>)],
    config: &ContextBenchConfig,
) -> Result<Option<SessionScores>, ContextError> {
    let steps = replay_context_steps(trajectory, exclude_origins, applied, reads)?;
    if steps.is_empty() {
        return Ok(None);
    }
    let (regions, _) = default_gold(trajectory);
    let id = &trajectory.session.id;
    let gold = regions_to_gold(id, &regions);
    let repo = TrajectoryRepo::new(trajectory);
    Ok(Some(evaluate_steps(&gold, id, &steps, &repo, config)?))
}

#[cfg(test)]
mod tests {
    use super::to_final;

    #[test]
    fn lines_move_past_unapplied_edits() {
        // An unapplied edit at current lines 2..4 becomes final lines 2..5.
        let spans = [((2, 4), (2, 5))];
        assert_eq!(to_final(1, true, &spans), 1);
        assert_eq!(to_final(2, true, &spans), 2);
        assert_eq!(to_final(3, false, &spans), 4);
        assert_eq!(to_final(4, true, &spans), 5);
    }
}
