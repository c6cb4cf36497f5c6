//! Language-server answers as next-edit predictions, with no I/O: LSP positions
//! (UTF-16, the only encoding the `lsp:` suggester offers) to byte offsets and back,
//! text edits applied to a file's current text, the result as whole-line edits in
//! current coordinates (one per changed hunk of a line diff), completion and inline
//! completion items as edits at the cursor (filtered and capped), code actions' and
//! renames' workspace edits, the one-identifier change that makes an applied edit a
//! rename, and the ranked list.

use serde_json::Value;
use similar::{Algorithm, capture_diff_slices, group_diff_ops};

use super::protocol::{AppliedEdit, SuggestedEdit};

/// One LSP `TextEdit`: the range in (line, UTF-16 column) and the text it puts there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// Start (line, UTF-16 character).
    pub start: (usize, usize),
    /// End (line, UTF-16 character), exclusive.
    pub end: (usize, usize),
    /// Replacement text.
    pub new_text: String,
}

/// The byte offset of LSP position (`line`, `character` in UTF-16 code units) in
/// `text`; a character past the line's end clamps to it, a line past the end to the
/// end of the text.
pub fn offset(text: &str, line: usize, character: usize) -> usize {
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let rest = &text[start..];
    let content = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let content = content.strip_suffix('\r').unwrap_or(content);
    let mut units = 0;
    for (i, c) in content.char_indices() {
        if units >= character {
            return start + i;
        }
        units += c.len_utf16();
    }
    start + content.len()
}

/// The LSP position (line, UTF-16 character) of byte `column` in line `line` of `text`.
pub fn position(text: &str, line: usize, column: usize) -> (usize, usize) {
    let content = text.split('\n').nth(line).unwrap_or("");
    let mut column = column.min(content.len());
    while !content.is_char_boundary(column) {
        column -= 1;
    }
    (line, content[..column].encode_utf16().count())
}

/// `text` with `edits` applied (all in `text`'s coordinates, as LSP requires);
/// `None` when two of them overlap.
pub fn apply(text: &str, edits: &[TextEdit]) -> Option<String> {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            let start = offset(text, e.start.0, e.start.1);
            let end = offset(text, e.end.0, e.end.1).max(start);
            (start, end, e.new_text.as_str())
        })
        .collect();
    spans.sort_by_key(|&(start, end, _)| (start, end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new_text) in spans {
        if start < at {
            return None;
        }
        out.push_str(&text[at..start]);
        out.push_str(new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// The whole-line edits that turn `old` into `new` (the texts of `file`): one per
/// changed hunk of a line diff, in file order; none when they are equal.
pub fn line_edits(file: &str, old: &str, new: &str) -> Vec<SuggestedEdit> {
    if old == new {
        return Vec::new();
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines);
    group_diff_ops(ops, 0)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            Some(SuggestedEdit {
                file: file.to_string(),
                start_line: old_range.start,
                end_line: old_range.end,
                text: new_lines[new_range].concat(),
                confidence: None,
            })
        })
        .collect()
}

/// A `Position` object's (line, character).
fn parse_position(value: &Value) -> Option<(usize, usize)> {
    Some((
        usize::try_from(value.get("line")?.as_u64()?).ok()?,
        usize::try_from(value.get("character")?.as_u64()?).ok()?,
    ))
}

/// A `Range` object's start and end.
fn parse_range(value: &Value) -> Option<((usize, usize), (usize, usize))> {
    Some((
        parse_position(value.get("start")?)?,
        parse_position(value.get("end")?)?,
    ))
}

/// One `TextEdit` (or an `InsertReplaceEdit`, taken as its `insert` range, as editors
/// do by default).
pub fn parse_text_edit(value: &Value) -> Option<TextEdit> {
    let range = value.get("range").or_else(|| value.get("insert"))?;
    let (start, end) = parse_range(range)?;
    Some(TextEdit {
        start,
        end,
        new_text: value.get("newText")?.as_str()?.to_string(),
    })
}

/// Every `TextEdit` of a JSON array (`None` if one is malformed).
pub fn parse_text_edits(value: &Value) -> Option<Vec<TextEdit>> {
    value.as_array()?.iter().map(parse_text_edit).collect()
}

/// A `WorkspaceEdit`'s text edits per document URI, by URI: `documentChanges`'
/// `TextDocumentEdit`s (file creations, renames and deletions are not edits of a
/// file's lines and are left out), else `changes`. `None` when it is malformed.
pub fn workspace_edits(value: &Value) -> Option<Vec<(String, Vec<TextEdit>)>> {
    let mut out: Vec<(String, Vec<TextEdit>)> = Vec::new();
    let mut push = |uri: &str, edits: Vec<TextEdit>| match out.iter_mut().find(|(u, _)| u == uri) {
        Some((_, all)) => all.extend(edits),
        None => out.push((uri.to_string(), edits)),
    };
    if let Some(changes) = value.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            if change.get("kind").is_some() {
                continue;
            }
            let uri = change.pointer("/textDocument/uri")?.as_str()?;
            push(uri, parse_text_edits(change.get("edits")?)?);
        }
    } else if let Some(changes) = value.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            push(uri, parse_text_edits(edits)?);
        }
    }
    // By document: a server's own order of `documentChanges` follows what it happened to
    // analyse first (pyright's differed between a sandboxed and an unsandboxed run of the
    // same rename), and the rank of every edit it proposes follows this order.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

/// The byte range of the identifier that ends at byte `column` of `line` (the word a
/// completion at the cursor replaces).
fn word_before(line: &str, column: usize) -> usize {
    line[..column]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_identifier_char(*c))
        .last()
        .map_or(column, |(i, _)| i)
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Line `line` of `text` without its line break (empty past the end).
fn line_at(text: &str, line: usize) -> &str {
    let content = text.split('\n').nth(line).unwrap_or("");
    content.strip_suffix('\r').unwrap_or(content)
}

/// What a completion wrote into a hole: `new` (the file after the completion's
/// edits) less the unchanged `prefix` before the cursor and `suffix` after it; `None`
/// when the completion changed either (it rewrote typed text, or added an import).
pub fn hole_text(prefix: &str, suffix: &str, new: &str) -> Option<String> {
    let rest = new.strip_prefix(prefix)?;
    Some(rest.strip_suffix(suffix)?.to_string())
}

/// The completion items of a `textDocument/completion` answer (a list or a
/// `CompletionList`) that fit the identifier before the cursor, in the order an editor
/// shows them (`sortText`, else `label`; the server's order breaks ties), at most `cap`.
pub fn completion_items(
    answer: &Value,
    text: &str,
    cursor: (usize, usize),
    cap: usize,
) -> Vec<Value> {
    let items = answer
        .as_array()
        .or_else(|| answer.get("items").and_then(Value::as_array));
    let Some(items) = items else {
        return Vec::new();
    };
    let line = line_at(text, cursor.0);
    let column = cursor.1.min(line.len());
    let prefix = line[word_before(line, column)..column].to_lowercase();
    let key =
        |item: &Value, field: &str| item.get(field).and_then(Value::as_str).map(str::to_string);
    let mut kept: Vec<(String, Value)> = items
        .iter()
        .filter(|item| {
            let filter = key(item, "filterText")
                .or_else(|| key(item, "label"))
                .unwrap_or_default();
            filter.to_lowercase().starts_with(&prefix)
        })
        .map(|item| {
            let sort = key(item, "sortText")
                .or_else(|| key(item, "label"))
                .unwrap_or_default();
            (sort, item.clone())
        })
        .collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    kept.into_iter().take(cap).map(|(_, item)| item).collect()
}

/// The text edits a completion item makes at `cursor` (line, byte column): its
/// `textEdit` (else its `insertText` or `label` in place of the identifier before the
/// cursor) plus its `additionalTextEdits` (an import it needs).
pub fn completion_edits(item: &Value, text: &str, cursor: (usize, usize)) -> Option<Vec<TextEdit>> {
    let mut edits = match item.get("textEdit") {
        Some(edit) => vec![parse_text_edit(edit)?],
        None => {
            let line = line_at(text, cursor.0);
            let column = cursor.1.min(line.len());
            let new_text = item
                .get("insertText")
                .or_else(|| item.get("label"))?
                .as_str()?
                .to_string();
            vec![TextEdit {
                start: position(text, cursor.0, word_before(line, column)),
                end: position(text, cursor.0, column),
                new_text,
            }]
        }
    };
    if let Some(more) = item.get("additionalTextEdits").filter(|v| !v.is_null()) {
        edits.extend(parse_text_edits(more)?);
    }
    Some(edits)
}

/// The text edits of a `textDocument/inlineCompletion` answer's items (a list or an
/// `InlineCompletionList`), each at its `range` or else at the cursor (an LSP
/// position), in the server's order, at most `cap`.
pub fn inline_completion_edits(
    answer: &Value,
    cursor: (usize, usize),
    cap: usize,
) -> Vec<TextEdit> {
    let items = answer
        .as_array()
        .or_else(|| answer.get("items").and_then(Value::as_array));
    items
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let insert = item.get("insertText")?;
            // A snippet (`StringValue`) keeps its text; placeholders stay as written.
            let new_text = insert
                .as_str()
                .or_else(|| insert.get("value")?.as_str())?
                .to_string();
            let (start, end) = match item.get("range") {
                Some(range) => parse_range(range)?,
                None => (cursor, cursor),
            };
            Some(TextEdit {
                start,
                end,
                new_text,
            })
        })
        .take(cap)
        .collect()
}

/// The code actions of a `textDocument/codeAction` answer that carry an edit, each
/// with whether the server marked it preferred (`isPreferred`), in the server's order;
/// commands without an edit are left out (running them would need
/// `workspace/applyEdit`, which the suggester declines).
pub fn code_action_edits(answer: &Value) -> Vec<(bool, Value)> {
    answer
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|action| {
            let edit = action.get("edit").filter(|e| !e.is_null())?;
            let preferred = action.get("isPreferred").and_then(Value::as_bool) == Some(true);
            Some((preferred, edit.clone()))
        })
        .collect()
}

/// Whether a completion at byte `column` of line `line` of `text` is one an editor
/// would offer: after part of an identifier, or right after one of the server's
/// trigger characters (`.`, `::`…). At an empty prefix every name in scope fits.
pub fn completes_here(text: &str, line: usize, column: usize, triggers: &[String]) -> bool {
    let content = line_at(text, line);
    let column = column.min(content.len());
    let head = &content[..column];
    word_before(content, column) < column
        || triggers
            .iter()
            .any(|t| !t.is_empty() && head.ends_with(t.as_str()))
}

/// An applied edit that renamed one identifier: where the old name is in the edit's
/// `before` text and both names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// Line of the old name in the file before the edit (the edit's `start_line` plus
    /// its line within `before`).
    pub line: usize,
    /// Byte column of the old name in that line.
    pub column: usize,
    /// The identifier before the edit.
    pub old_name: String,
    /// The identifier after it.
    pub new_name: String,
}

/// Identifier runs and single other characters, each with its byte offset.
fn tokens(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        if is_identifier_char(c) {
            while let Some(&(i, next)) = chars.peek() {
                if !is_identifier_char(next) {
                    break;
                }
                end = i + next.len_utf8();
                chars.next();
            }
        }
        out.push((start, &text[start..end]));
    }
    out
}

fn is_identifier(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The rename `edit` made, if it changed exactly one identifier into another and
/// nothing else (so the file's other lines keep their numbers).
pub fn renamed_identifier(edit: &AppliedEdit) -> Option<Renamed> {
    let before = tokens(&edit.before);
    let after = tokens(&edit.after);
    if before.len() != after.len() {
        return None;
    }
    let mut differing = before.iter().zip(&after).filter(|((_, b), (_, a))| b != a);
    let ((at, old), (_, new)) = differing.next()?;
    if differing.next().is_some() || !is_identifier(old) || !is_identifier(new) {
        return None;
    }
    let head = &edit.before[..*at];
    let line_in_edit = head.matches('\n').count();
    let column = at - head.rfind('\n').map_or(0, |i| i + 1);
    Some(Renamed {
        line: edit.start_line + line_in_edit,
        column,
        old_name: old.to_string(),
        new_name: new.to_string(),
    })
}

/// The applied edits that made the same rename as `renamed` (the last edit's), the
/// last one included: set back together they give the state where every occurrence
/// still agrees, even when earlier steps renamed some of them already.
pub fn same_renames<'a>(prior: &'a [AppliedEdit], renamed: &Renamed) -> Vec<&'a AppliedEdit> {
    prior
        .iter()
        .filter(|edit| {
            renamed_identifier(edit)
                .is_some_and(|r| r.old_name == renamed.old_name && r.new_name == renamed.new_name)
        })
        .collect()
}

/// `text` with lines `[start_line, end_line)` replaced by `lines` (the state before an
/// applied edit, from the current one).
pub fn replace_lines(text: &str, start_line: usize, end_line: usize, lines: &str) -> String {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let start = start_line.min(all.len());
    let end = end_line.clamp(start, all.len());
    let mut out: String = all[..start].concat();
    out.push_str(lines);
    out.push_str(&all[end..].concat());
    out
}

/// The ranked list: `proposals` in rank order, each edit kept once (its first, best
/// place), at most `cap`.
pub fn ranked(proposals: Vec<Vec<SuggestedEdit>>, cap: usize) -> Vec<SuggestedEdit> {
    let mut out: Vec<SuggestedEdit> = Vec::new();
    for edit in proposals.into_iter().flatten() {
        if out.len() == cap {
            break;
        }
        if !out.contains(&edit) {
            out.push(edit);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(start: (usize, usize), end: (usize, usize), new_text: &str) -> TextEdit {
        TextEdit {
            start,
            end,
            new_text: new_text.into(),
        }
    }

    #[test]
    fn a_hole_is_what_a_completion_writes_at_the_cursor_only() {
        let (prefix, suffix) = ("x = os.getcw", "()\n");
        let text = format!("{prefix}{suffix}");
        let new = apply(&text, &[edit((0, 7), (0, 12), "getcwd")]).unwrap();
        assert_eq!(hole_text(prefix, suffix, &new), Some("d".into()));
        // A case-changing completion rewrites what was typed: not a hole's text.
        let new = apply(&text, &[edit((0, 7), (0, 12), "GetCwd")]).unwrap();
        assert_eq!(hole_text(prefix, suffix, &new), None);
        // An import added above changes the prefix too.
        let new = apply(
            &text,
            &[
                edit((0, 12), (0, 12), "d"),
                edit((0, 0), (0, 0), "import os\n"),
            ],
        )
        .unwrap();
        assert_eq!(hole_text(prefix, suffix, &new), None);
    }

    #[test]
    fn positions_count_utf16_units_and_clamp() {
        let text = "a😀b\nxyz\r\nq";
        assert_eq!(offset(text, 0, 0), 0);
        assert_eq!(offset(text, 0, 1), 1);
        assert_eq!(offset(text, 0, 3), 5);
        assert_eq!(offset(text, 0, 99), 6);
        assert_eq!(offset(text, 1, 99), 10);
        assert_eq!(offset(text, 2, 1), 13);
        assert_eq!(offset(text, 7, 0), text.len());
        assert_eq!(position(text, 0, 5), (0, 3));
        assert_eq!(position(text, 0, 3), (0, 1));
    }

    #[test]
    fn edits_apply_in_order_and_become_whole_line_hunks() {
        let text = "import os\nimport sys\n\nprint(sys.argv)\n";
        let removed = apply(text, &[edit((0, 0), (1, 0), "")]).unwrap();
        assert_eq!(removed, "import sys\n\nprint(sys.argv)\n");
        assert_eq!(
            line_edits("a.py", text, &removed),
            vec![SuggestedEdit {
                file: "a.py".into(),
                start_line: 0,
                end_line: 1,
                text: String::new(),
                confidence: None
            }]
        );
        // An insertion at a line start is an insertion of whole lines, not a change of that line.
        let inserted = apply(
            text,
            &[edit((2, 0), (2, 0), "x = 1\n"), edit((3, 6), (3, 9), "os")],
        )
        .unwrap();
        let hunks = line_edits("a.py", text, &inserted);
        assert_eq!(
            hunks
                .iter()
                .map(|e| (e.start_line, e.end_line, e.text.as_str()))
                .collect::<Vec<_>>(),
            vec![(2, 2, "x = 1\n"), (3, 4, "print(os.argv)\n")]
        );
        assert_eq!(
            apply(text, &[edit((0, 0), (0, 5), ""), edit((0, 2), (0, 3), "")]),
            None
        );
        assert!(line_edits("a.py", text, text).is_empty());
    }

    #[test]
    fn a_one_identifier_change_is_a_rename_and_anything_more_is_not() {
        let applied = |before: &str, after: &str| AppliedEdit {
            file: "a.py".into(),
            start_line: 4,
            end_line: 6,
            before: before.into(),
            after: after.into(),
            step: 1,
        };
        assert_eq!(
            renamed_identifier(&applied(
                "x = 1\ndef total(a):\n",
                "x = 1\ndef sum_of(a):\n"
            )),
            Some(Renamed {
                line: 5,
                column: 4,
                old_name: "total".into(),
                new_name: "sum_of".into()
            })
        );
        assert_eq!(renamed_identifier(&applied("f(a)\n", "f(a, b)\n")), None);
        assert_eq!(renamed_identifier(&applied("x = 1\n", "x = 2\n")), None);
        assert_eq!(renamed_identifier(&applied("f(a)\n", "g(b)\n")), None);
    }

    #[test]
    fn completions_are_filtered_sorted_capped_and_become_edits() {
        let text = "import os\nos.pa\n";
        let answer = json!({"isIncomplete": false, "items": [
            {"label": "path", "sortText": "b"},
            {"label": "pathsep", "sortText": "a", "textEdit": {"range": {"start": {"line": 1, "character": 3}, "end": {"line": 1, "character": 5}}, "newText": "pathsep"}},
            {"label": "getcwd", "sortText": "0"},
            {"label": "pardir", "sortText": "c", "additionalTextEdits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "newText": "import x\n"}]}
        ]});
        let items = completion_items(&answer, text, (1, 5), 2);
        assert_eq!(
            items
                .iter()
                .map(|i| i["label"].as_str().unwrap())
                .collect::<Vec<_>>(),
            vec!["pathsep", "path"]
        );
        let new = apply(text, &completion_edits(&items[1], text, (1, 5)).unwrap()).unwrap();
        assert_eq!(new, "import os\nos.path\n");
        let dot = vec![".".to_string()];
        assert!(completes_here(text, 1, 5, &[]));
        assert!(completes_here(text, 1, 3, &dot));
        assert!(!completes_here(text, 1, 3, &[]));
        assert!(!completes_here("print(x)\n", 0, 8, &dot));
        let pardir = completion_items(&answer, text, (1, 5), 9)[2].clone();
        let new = apply(text, &completion_edits(&pardir, text, (1, 5)).unwrap()).unwrap();
        assert_eq!(new, "import x\nimport os\nos.pardir\n");
    }

    #[test]
    fn workspace_edits_and_code_actions_and_inline_items_parse() {
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}});
        let answer = json!([
            {"title": "run", "command": "x"},
            {"title": "fix", "edit": {"changes": {"file:///w/a.py": [{"range": range, "newText": ""}]}}},
            {"title": "best", "isPreferred": true, "edit": {"documentChanges": [
                {"textDocument": {"uri": "file:///w/b.py", "version": 2}, "edits": [{"range": range, "newText": "y\n"}]},
                {"kind": "create", "uri": "file:///w/c.py"}
            ]}}
        ]);
        let actions = code_action_edits(&answer);
        assert_eq!(
            actions
                .iter()
                .map(|(preferred, _)| *preferred)
                .collect::<Vec<_>>(),
            vec![false, true]
        );
        let first = workspace_edits(&actions[1].1).unwrap();
        assert_eq!(
            first,
            vec![(
                "file:///w/b.py".to_string(),
                vec![edit((0, 0), (1, 0), "y\n")]
            )]
        );
        assert_eq!(
            workspace_edits(&json!({"changes": {"u": [{"range": 3}]}})),
            None
        );
        let inline = json!({"items": [{"insertText": "ab"}, {"insertText": {"kind": "snippet", "value": "c"}, "range": range}]});
        assert_eq!(
            inline_completion_edits(&inline, (2, 1), 5),
            vec![edit((2, 1), (2, 1), "ab"), edit((0, 0), (1, 0), "c")]
        );
    }

    #[test]
    fn ranking_keeps_the_first_place_of_each_edit_and_caps() {
        let e = |line: usize| SuggestedEdit {
            file: "a".into(),
            start_line: line,
            end_line: line + 1,
            text: String::new(),
            confidence: None,
        };
        assert_eq!(
            ranked(vec![vec![e(3), e(1)], vec![e(1), e(2)], vec![e(4)]], 3),
            vec![e(3), e(1), e(2)]
        );
        assert_eq!(replace_lines("a\nb\nc\n", 1, 2, "x\ny\n"), "a\nx\ny\nc\n");
    }
}
