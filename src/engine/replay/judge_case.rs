//! What a judge model is shown about one replay step (`replay --judge`): the lines
//! around the gold edit as they are before it, with it applied and with the step's
//! content (the kept prediction's or generated text) in its place, and the edit history.
//! Built before the step's edit is applied; the judge itself is `engine::judge`.

use super::state::ReplayState;
use crate::engine::judge::JudgeCase;
use crate::engine::suggest::prompt::edit_history;
use crate::engine::suggest::protocol::AppliedEdit;

/// Lines shown each side of the gold edit's lines.
pub const CONTEXT_LINES: usize = 10;

/// The case of `text` written in place of gold edit `gold`'s current lines, after the
/// `applied` edits; `None` when its file is not in the state.
pub fn judge_case(
    state: &ReplayState,
    gold: usize,
    text: &str,
    applied: &[AppliedEdit],
) -> Option<JudgeCase> {
    let edit = &state.edits()[gold];
    let lines = state.lines(&edit.file)?;
    let (start, end) = state.current_range(gold);
    let from = start.saturating_sub(CONTEXT_LINES);
    let to = (end + CONTEXT_LINES).min(lines.len());
    let (head, tail) = (lines[from..start].concat(), lines[end..to].concat());
    Some(JudgeCase {
        file: edit.file.clone(),
        start_line: from,
        before: lines[from..to].concat(),
        gold: format!("{head}{}{tail}", edit.after_text()),
        predicted: format!("{head}{text}{tail}"),
        history: edit_history(applied),
    })
}
