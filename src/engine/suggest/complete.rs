//! One `complete` call outside replay's engine (`nextedit tasks run` asks it once per
//! task and sample): the call, timed, and its answer checked by the rules every
//! caller shares (reads normalized; [`SuggestError::BadResult`] for a bad one), so a bad
//! answer is a typed failure and never a scored one.

use std::time::{Duration, Instant};

use super::protocol::{CompleteParams, CompleteResult};
use super::{SuggestError, Suggester};
use crate::core::trajectory::RelPath;

/// Asks `suggester` to fill the hole of `params` (the caller has initialized it for
/// the task's worktree) and returns its checked answer and the call's time. Read
/// paths are normalized (`./a.py` is `a.py`); an answer whose reads leave the
/// worktree or whose ranges end before they start is [`SuggestError::BadResult`].
pub fn complete_call(
    suggester: &mut dyn Suggester,
    params: &CompleteParams,
) -> Result<(CompleteResult, Duration), SuggestError> {
    let started = Instant::now();
    let mut result = suggester.complete(params)?;
    let elapsed = started.elapsed();
    check(&mut result)?;
    Ok((result, elapsed))
}

/// The protocol's rules for a `complete` answer beyond its JSON shape.
fn check(result: &mut CompleteResult) -> Result<(), SuggestError> {
    let bad = |reason: String| SuggestError::BadResult {
        method: "complete".into(),
        reason,
    };
    for read in &mut result.reads {
        read.file = RelPath::parse(&read.file)
            .map_err(|e| bad(format!("read {:?}: {e}", read.file)))?
            .as_str()
            .to_owned();
        if read.end_line.is_some_and(|end| end < read.start_line) {
            return Err(bad(format!(
                "read {} lines {}..{}: the range ends before it starts",
                read.file,
                read.start_line,
                read.end_line.unwrap_or_default()
            )));
        }
    }
    if result.text.contains('\0') {
        return Err(bad("the text holds a NUL byte".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::suggest::protocol::SuggesterRead;

    fn read(file: &str, start: usize, end: Option<usize>) -> SuggesterRead {
        SuggesterRead {
            file: file.into(),
            start_line: start,
            end_line: end,
        }
    }

    #[test]
    fn answers_are_normalized_or_refused() {
        let mut ok = CompleteResult {
            text: "x".into(),
            reads: vec![read("./a/b.py", 1, Some(3)), read("c.py", 0, None)],
        };
        check(&mut ok).unwrap();
        assert_eq!(ok.reads[0].file, "a/b.py");
        let refused = |r: SuggesterRead| {
            check(&mut CompleteResult {
                text: String::new(),
                reads: vec![r],
            })
            .unwrap_err()
            .to_string()
        };
        assert!(
            refused(read("../x.py", 0, None))
                .starts_with("suggester's `complete` result is invalid: read \"../x.py\": ")
        );
        assert_eq!(
            refused(read("a.py", 4, Some(2))),
            "suggester's `complete` result is invalid: read a.py lines 4..2: the range ends before it starts"
        );
        let error = check(&mut CompleteResult {
            text: "a\0".into(),
            reads: vec![],
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "suggester's `complete` result is invalid: the text holds a NUL byte"
        );
    }
}
