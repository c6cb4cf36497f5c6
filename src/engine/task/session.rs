//! Tasks from a recorded session: at each pause in typing (no change for `pause_ms`),
//! the code the developer typed next at the cursor, until the next pause or a jump.
//!
//! The texts are rebuilt from the trajectory's base texts and its changes. A run of
//! typing is a sequence of the developer's own changes (`origin: user`) in one file,
//! each inserting at the cursor (or deleting just before it, a backspace); anything
//! else — another file, another place, a paste over a selection, a formatter — ends
//! it. The task is the text at the pause cut at the run's first position, the ground
//! truth what the run left typed there. Pure: a trajectory in, pauses out.

use std::collections::BTreeMap;

use crate::core::trajectory::{Change, EventBody, Origin, Trajectory, apply_byte_edit};

/// Default pause: 2 s without typing.
pub const DEFAULT_PAUSE_MS: f64 = 2000.0;

/// One pause and what was typed after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    /// The seq of the first change typed after the pause (the state is just before it).
    pub seq: u64,
    /// The file typed into.
    pub file: String,
    /// Every file's text at the pause.
    pub texts: BTreeMap<String, String>,
    /// Byte offset of the cursor in `file`'s text.
    pub cursor: usize,
    /// What the run left typed at the cursor.
    pub typed: String,
}

/// The pauses of `trajectory` followed by typing that left some non-blank text.
pub fn pauses(trajectory: &Trajectory, pause_ms: f64) -> Vec<Pause> {
    let mut texts: BTreeMap<String, String> = trajectory
        .files
        .iter()
        .filter_map(|f| Some((f.path.clone(), f.base_text.clone()?)))
        .collect();
    let changes: Vec<(usize, f64, &Change)> = trajectory
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.body {
            EventBody::Change(c) => Some((i, e.t_ms, c)),
            _ => None,
        })
        .collect();
    let mut next_change = 0;
    let mut last_t = 0.0;
    let mut out = Vec::new();
    for (i, event) in trajectory.events.iter().enumerate() {
        match &event.body {
            EventBody::Open {
                file,
                text: Some(text),
                ..
            } => {
                texts.insert(file.clone(), text.clone());
            }
            EventBody::Change(change) => {
                let at = next_change;
                next_change += 1;
                debug_assert_eq!(changes[at].0, i);
                if change.origin == Origin::User && event.t_ms - last_t >= pause_ms {
                    let (cursor, typed) = typed_run(&changes[at..], pause_ms);
                    let fits = texts
                        .get(&change.file)
                        .is_some_and(|t| t.is_char_boundary(cursor));
                    if !typed.trim().is_empty() && fits {
                        out.push(Pause {
                            seq: event.seq,
                            file: change.file.clone(),
                            texts: texts.clone(),
                            cursor,
                            typed,
                        });
                    }
                }
                last_t = event.t_ms;
                if let Some(text) = texts.get_mut(&change.file)
                    && apply_byte_edit(
                        text,
                        change.start_byte,
                        change.end_byte,
                        &change.before,
                        &change.after,
                    )
                    .is_err()
                {
                    // A text the changes do not fit is no state to cut from.
                    texts.remove(&change.file);
                }
            }
            _ => {}
        }
    }
    out
}

/// The cursor where `run[0]` starts and what the typing from there left.
fn typed_run(run: &[(usize, f64, &Change)], pause_ms: f64) -> (usize, String) {
    let first = run[0].2;
    if first.start_byte != first.end_byte {
        return (first.start_byte, String::new());
    }
    let start = first.start_byte;
    let mut cursor = start;
    let mut typed = String::new();
    let mut last_t = run[0].1;
    for &(_, t, change) in run {
        if t - last_t >= pause_ms || change.file != first.file || change.origin != Origin::User {
            break;
        }
        last_t = t;
        let insertion = change.start_byte == cursor && change.end_byte == cursor;
        let backspace = change.after.is_empty()
            && change.end_byte == cursor
            && change.start_byte >= start
            && change.start_byte < cursor;
        if insertion && !change.after.is_empty() {
            typed.push_str(&change.after);
            cursor += change.after.len();
        } else if backspace && typed.is_char_boundary(change.start_byte - start) {
            typed.truncate(change.start_byte - start);
            cursor = change.start_byte;
        } else {
            break;
        }
    }
    (start, typed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A recorded trajectory of `a.py` (base `base`) with changes (t_ms, start, end,
    /// before, after, origin).
    fn trajectory(base: &str, changes: &[(f64, usize, usize, &str, &str, &str)]) -> Trajectory {
        let events: Vec<_> = changes
            .iter()
            .enumerate()
            .map(|(i, (t, start, end, before, after, origin))| {
                json!({"seq": i + 1, "t_ms": t, "type": "change", "file": "a.py", "version": i + 2,
                       "start_byte": start, "end_byte": end, "start_line": 0, "end_line": 0,
                       "new_end_line": 0, "before": before, "after": after, "origin": origin})
            })
            .collect();
        serde_json::from_value(json!({
            "format": "nextedit.trajectory", "version": 1,
            "session": {"id": "1", "kind": "recorded"},
            "files": [{"path": "a.py", "base_text": base}],
            "events": events,
        }))
        .unwrap()
    }

    #[test]
    fn typing_after_a_pause_with_a_typo_fixed_then_a_jump() {
        let t = trajectory(
            "x = 1\n",
            &[
                (3000.0, 6, 6, "", "y", "user"),
                (3100.0, 7, 7, "", "=", "user"),
                (3200.0, 7, 8, "=", "", "user"),
                (3300.0, 7, 7, "", " = 2", "user"),
                // A jump back to the first line ends the run.
                (3400.0, 0, 0, "", "#", "user"),
                // Too soon to be a pause; then a formatter's edit after one.
                (3500.0, 1, 1, "", " ", "user"),
                (9000.0, 0, 2, "# ", "", "format"),
            ],
        );
        let got = pauses(&t, DEFAULT_PAUSE_MS);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].seq, 1);
        assert_eq!(got[0].cursor, 6);
        assert_eq!(got[0].typed, "y = 2");
        assert_eq!(got[0].texts["a.py"], "x = 1\n");
    }
}
