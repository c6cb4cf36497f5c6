//! What an applied edit teaches `builtin:retrieve`, and where that change applies
//! again inside a chunk.
//!
//! - a rename or a one-line change: `builtin:propagate`'s rules
//!   ([`propagate::learn`], applied line by line with [`propagate::apply_to_line`]);
//! - a block: the edit's before-lines (two or more, or one that became several or
//!   none) found again, equal up to indentation, become its after-lines;
//! - an insertion: its lines inserted again after each line equal (up to
//!   indentation) to the line the edit was inserted after.
//!
//! New lines are re-indented: the edit's indentation is replaced by the target's, so
//! the change carries over between a method and a function. Pure: no I/O.

use super::super::propagate::{self, Propagation};
use super::super::protocol::{AppliedEdit, SuggestedEdit};
use super::chunks::Chunk;

/// A change that can be repeated elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A rename or one-line change (`builtin:propagate`'s rules).
    Line(Propagation),
    /// Consecutive lines equal to `from` (trimmed) become `to`.
    Block {
        /// The old lines, trimmed.
        from: Vec<String>,
        /// The new lines (with their line breaks), indented relative to `indent`.
        to: Vec<String>,
        /// The indentation of the old block's first line.
        indent: String,
    },
    /// `lines` inserted after a line equal to `anchor` (trimmed).
    InsertAfter {
        /// The line before the insertion, trimmed.
        anchor: String,
        /// The inserted lines (with their line breaks), indented relative to `indent`.
        lines: Vec<String>,
        /// The anchor's indentation.
        indent: String,
    },
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `lines` with the indentation `from` at their start replaced by `to`.
fn reindent(lines: &[String], from: &str, to: &str) -> String {
    lines
        .iter()
        .map(|l| match l.strip_prefix(from) {
            Some(rest) if !l.trim().is_empty() => format!("{to}{rest}"),
            _ => l.clone(),
        })
        .collect()
}

/// What `edit` teaches; `text` is its file's current text (for an insertion's anchor).
pub fn learn(edit: &AppliedEdit, text: Option<&str>) -> Vec<Change> {
    let mut out: Vec<Change> = propagate::learn(&edit.before, &edit.after)
        .into_iter()
        .map(Change::Line)
        .collect();
    let before: Vec<&str> = edit.before.split_inclusive('\n').collect();
    let after: Vec<String> = edit.after.split_inclusive('\n').map(String::from).collect();
    if before.is_empty() {
        let anchor = edit
            .start_line
            .checked_sub(1)
            .and_then(|l| text?.split_inclusive('\n').nth(l));
        if let Some(anchor) = anchor.filter(|a| !a.trim().is_empty())
            && !after.is_empty()
        {
            out.push(Change::InsertAfter {
                anchor: anchor.trim().to_string(),
                lines: after,
                indent: indentation(anchor).to_string(),
            });
        }
    } else if (before.len() > 1 || after.len() != 1) && before.iter().any(|l| !l.trim().is_empty())
    {
        out.push(Change::Block {
            from: before.iter().map(|l| l.trim().to_string()).collect(),
            to: after,
            indent: indentation(before[0]).to_string(),
        });
    }
    out
}

/// The edits `changes` make inside `chunk` of a file's `lines` (with their line
/// breaks), by first line; a line for which `blocked` is true (an applied edit's) is
/// never changed again, and where two changes overlap the earlier one in `changes` wins.
pub fn propose(
    changes: &[Change],
    path: &str,
    lines: &[&str],
    chunk: &Chunk,
    blocked: &dyn Fn(usize) -> bool,
) -> Vec<SuggestedEdit> {
    let end = chunk.end_line.min(lines.len());
    let edit = |start_line: usize, end_line: usize, text: String| SuggestedEdit {
        file: path.to_string(),
        start_line,
        end_line,
        text,
        confidence: None,
    };
    let mut found: Vec<SuggestedEdit> = Vec::new();
    for change in changes {
        for i in chunk.start_line..end {
            match change {
                Change::Line(p) => {
                    if let Some(new) = propagate::apply_to_line(p, lines[i]) {
                        found.push(edit(i, i + 1, new));
                    }
                }
                Change::Block { from, to, indent } => {
                    let n = from.len();
                    if i + n <= end && lines[i..i + n].iter().zip(from).all(|(l, f)| l.trim() == f)
                    {
                        found.push(edit(i, i + n, reindent(to, indent, indentation(lines[i]))));
                    }
                }
                Change::InsertAfter {
                    anchor,
                    lines: new,
                    indent,
                } => {
                    if lines[i].trim() != anchor.as_str() {
                        continue;
                    }
                    let inserted = reindent(new, indent, indentation(lines[i]));
                    let following: String =
                        lines[i + 1..].iter().take(new.len()).copied().collect();
                    if following != inserted {
                        found.push(edit(i + 1, i + 1, inserted));
                    }
                }
            }
        }
    }
    // Stable: the earlier change keeps its place among edits at the same line.
    found.sort_by_key(|e| e.start_line);
    let mut kept: Vec<SuggestedEdit> = Vec::new();
    for e in found {
        let touches_applied = if e.start_line == e.end_line {
            e.start_line > 0 && blocked(e.start_line - 1) && blocked(e.start_line)
        } else {
            (e.start_line..e.end_line).any(blocked)
        };
        let overlaps = kept.last().is_some_and(|k| {
            e.start_line < k.end_line
                || (e.start_line == k.start_line && k.start_line == k.end_line)
        });
        if !touches_applied && !overlaps {
            kept.push(e);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(start_line: usize, end_line: usize, before: &str, after: &str) -> AppliedEdit {
        AppliedEdit {
            file: "m.py".into(),
            start_line,
            end_line,
            before: before.into(),
            after: after.into(),
            step: 0,
        }
    }

    fn lines(text: &str) -> Vec<&str> {
        text.split_inclusive('\n').collect()
    }

    /// (start_line, end_line, text) of what the edit's changes propose in the whole
    /// of `target` (no line blocked).
    fn check(edit: AppliedEdit, file: &str, target: &str, expected: &[(usize, usize, &str)]) {
        let changes = learn(&edit, Some(file));
        let chunk = Chunk {
            start_line: 0,
            end_line: target.lines().count(),
            name: None,
        };
        let got: Vec<(usize, usize, String)> =
            propose(&changes, "t.py", &lines(target), &chunk, &|_| false)
                .into_iter()
                .map(|e| (e.start_line, e.end_line, e.text))
                .collect();
        let expected: Vec<(usize, usize, String)> = expected
            .iter()
            .map(|(s, e, t)| (*s, *e, t.to_string()))
            .collect();
        assert_eq!(got, expected, "{changes:?}");
    }

    #[test]
    fn one_line_changes_and_renames_as_propagate_learns_them() {
        check(
            applied(
                1,
                2,
                "    with open(path) as f:\n",
                "    with open(path, encoding=\"utf-8\") as f:\n",
            ),
            "",
            "def g(p):\n  with open(path) as f:\n    return f.read()\n",
            &[(1, 2, "  with open(path, encoding=\"utf-8\") as f:\n")],
        );
        check(
            applied(0, 1, "x = total(a)\n", "x = subtotal(a)\n"),
            "",
            "y = total(b) + total(c)\nx = total(a)\n",
            &[
                (0, 1, "y = subtotal(b) + subtotal(c)\n"),
                (1, 2, "x = subtotal(a)\n"),
            ],
        );
    }

    #[test]
    fn blocks_are_found_up_to_indentation_and_reindented() {
        check(
            applied(
                1,
                3,
                "    a = 1\n    b = 2\n",
                "    ab = (1, 2)\n    check(ab)\n    done()\n",
            ),
            "",
            "class C:\n        a = 1\n        b = 2\n        a = 1\n",
            &[(
                1,
                3,
                "        ab = (1, 2)\n        check(ab)\n        done()\n",
            )],
        );
        // A deleted line is a block that becomes nothing.
        check(
            applied(2, 2, "    print(x)\n", ""),
            "",
            "def f(x):\n    print(x)\n    return x\n",
            &[(1, 2, "")],
        );
    }

    #[test]
    fn insertions_repeat_after_the_same_anchor_unless_already_there() {
        let file = "def f(path):\n    check(path)\n    return path\n";
        check(
            applied(1, 2, "", "    check(path)\n"),
            file,
            "def f(path):\n    return 1\n\nclass A:\n    def f(path):\n        return 2\n",
            &[(1, 1, "    check(path)\n"), (5, 5, "        check(path)\n")],
        );
        check(applied(1, 2, "", "    check(path)\n"), file, file, &[]);
        // Without a line before it (or after a blank one), an insertion teaches nothing.
        assert_eq!(
            learn(&applied(0, 1, "", "import os\n"), Some("import os\n")),
            vec![]
        );
    }

    #[test]
    fn blocked_lines_and_overlaps_are_left_out() {
        let changes = learn(&applied(0, 1, "x = total(a)\n", "x = subtotal(a)\n"), None);
        let text = "x = total(a)\ny = total(b)\n";
        let chunk = Chunk {
            start_line: 0,
            end_line: 2,
            name: None,
        };
        let got = propose(&changes, "t.py", &lines(text), &chunk, &|l| l == 0);
        assert_eq!(
            got.iter()
                .map(|e| (e.start_line, e.text.as_str()))
                .collect::<Vec<_>>(),
            vec![(1, "y = subtotal(b)\n")]
        );
    }
}
