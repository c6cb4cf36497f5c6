//! Completion answers as the recorder reads them: typed, borrowing the frame's
//! strings, only the fields it uses.
//!
//! Why not `serde_json::Value`: a completion answer is the largest and most frequent
//! answer a server sends (hundreds of items, each with nested edits), and building a
//! map per object and a string per key is most of what recording it cost. Here
//! unknown fields are skipped without allocating, ranges go straight into
//! [`LspRange`], and strings are borrowed unless they hold escapes.
//!
//! Lenient like the `Value` reading it replaces: a field of an unexpected type counts
//! as absent, an item that is not an object has no fields, an answer that is neither
//! a list nor an array of items has no items.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::document::{LspRange, LspTextEdit};

/// A `textDocument/completion` answer (`CompletionItem[]` or a `CompletionList`).
#[derive(Debug, Default)]
pub struct CompletionAnswer<'a> {
    /// The items, in the server's order.
    pub items: Vec<CompletionItem<'a>>,
    /// `isIncomplete`.
    pub incomplete: bool,
    /// `itemDefaults` (LSP 3.17; small and rare, so read as a value).
    pub defaults: Option<Value>,
}

/// One `CompletionItem`.
#[derive(Debug, Default)]
pub struct CompletionItem<'a> {
    /// `label`.
    pub label: Option<Cow<'a, str>>,
    /// `textEdit` (a `TextEdit` or an `InsertReplaceEdit`).
    pub text_edit: Option<ItemEdit<'a>>,
    /// `textEditText` (with the list's default edit range).
    pub text_edit_text: Option<Cow<'a, str>>,
    /// `insertText`.
    pub insert_text: Option<Cow<'a, str>>,
    /// `insertTextFormat` (2: a snippet).
    pub insert_text_format: Option<u64>,
    /// `additionalTextEdits`; `None` when absent or not a list of text edits.
    pub additional: Option<Vec<LspTextEdit>>,
}

/// A completion item's `textEdit`: `range` for a `TextEdit`, `insert` and `replace`
/// for an `InsertReplaceEdit`.
#[derive(Debug, Default)]
pub struct ItemEdit<'a> {
    /// `range`.
    pub range: Option<LspRange>,
    /// `insert`.
    pub insert: Option<LspRange>,
    /// `replace`.
    pub replace: Option<LspRange>,
    /// `newText`.
    pub new_text: Option<Cow<'a, str>>,
}

/// The fields read, each kept raw until it is read (a field of the wrong type must
/// not fail the item).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireItem<'a> {
    #[serde(borrow, default)]
    label: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text_edit: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text_edit_text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    insert_text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    insert_text_format: Option<&'a RawValue>,
    #[serde(borrow, default)]
    additional_text_edits: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireList<'a> {
    #[serde(borrow, default)]
    items: Option<&'a RawValue>,
    #[serde(borrow, default)]
    is_incomplete: Option<&'a RawValue>,
    #[serde(borrow, default)]
    item_defaults: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireEdit<'a> {
    #[serde(borrow, default)]
    range: Option<&'a RawValue>,
    #[serde(borrow, default)]
    insert: Option<&'a RawValue>,
    #[serde(borrow, default)]
    replace: Option<&'a RawValue>,
    #[serde(borrow, default)]
    new_text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTextEdit<'a> {
    range: LspRange,
    #[serde(borrow)]
    new_text: Cow<'a, str>,
}

impl<'a> CompletionAnswer<'a> {
    /// Reads an answer's `result`.
    pub fn parse(result: &'a RawValue) -> CompletionAnswer<'a> {
        match first_byte(result) {
            Some(b'[') => CompletionAnswer {
                items: items(result),
                ..CompletionAnswer::default()
            },
            Some(b'{') => {
                let list: WireList<'a> = serde_json::from_str(result.get()).unwrap_or_default();
                CompletionAnswer {
                    items: list.items.map(items).unwrap_or_default(),
                    incomplete: list.is_incomplete.is_some_and(|v| v.get() == "true"),
                    defaults: list
                        .item_defaults
                        .and_then(|d| serde_json::from_str(d.get()).ok()),
                }
            }
            _ => CompletionAnswer::default(),
        }
    }
}

impl<'a> CompletionItem<'a> {
    /// Reads one item (a `completionItem/resolve` answer, or an item of a list).
    pub fn parse(value: &'a RawValue) -> CompletionItem<'a> {
        let wire: WireItem<'a> = serde_json::from_str(value.get()).unwrap_or_default();
        CompletionItem {
            label: wire.label.and_then(string),
            text_edit: wire.text_edit.and_then(ItemEdit::parse),
            text_edit_text: wire.text_edit_text.and_then(string),
            insert_text: wire.insert_text.and_then(string),
            insert_text_format: wire
                .insert_text_format
                .and_then(|f| serde_json::from_str(f.get()).ok()),
            additional: wire.additional_text_edits.and_then(text_edits),
        }
    }
}

impl<'a> ItemEdit<'a> {
    fn parse(value: &'a RawValue) -> Option<ItemEdit<'a>> {
        let wire: WireEdit<'a> = serde_json::from_str(value.get()).ok()?;
        Some(ItemEdit {
            range: wire.range.and_then(range),
            insert: wire.insert.and_then(range),
            replace: wire.replace.and_then(range),
            new_text: wire.new_text.and_then(string),
        })
    }

    /// As a `TextEdit`: its range and text, if it has both.
    pub fn text_edit(&self) -> Option<LspTextEdit> {
        Some((self.range?, self.new_text.as_deref()?.to_string()))
    }
}

/// The items of an array, each read on its own (one bad item spoils only itself).
fn items(array: &RawValue) -> Vec<CompletionItem<'_>> {
    let raw: Vec<&RawValue> = serde_json::from_str(array.get()).unwrap_or_default();
    raw.into_iter().map(CompletionItem::parse).collect()
}

/// LSP `TextEdit[]`; `None` when the value is not one (as [`super::origin::text_edits`]).
fn text_edits(value: &RawValue) -> Option<Vec<LspTextEdit>> {
    let edits: Vec<WireTextEdit<'_>> = serde_json::from_str(value.get()).ok()?;
    Some(
        edits
            .into_iter()
            .map(|e| (e.range, e.new_text.into_owned()))
            .collect(),
    )
}

fn range(value: &RawValue) -> Option<LspRange> {
    serde_json::from_str(value.get()).ok()
}

/// A JSON string, borrowed when it holds no escapes; `None` for anything else.
fn string(value: &RawValue) -> Option<Cow<'_, str>> {
    let text = value.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(text) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

fn first_byte(value: &RawValue) -> Option<u8> {
    value.get().bytes().find(|b| !b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_string()).unwrap()
    }

    #[test]
    fn a_list_reads_items_flags_and_defaults_and_skips_what_is_not_used() {
        let json = raw(
            r#"{"isIncomplete": true, "itemDefaults": {"insertTextFormat": 2},
                "items": [{"label": "pa\"th", "kind": 6, "documentation": {"kind": "markdown", "value": "x"},
                           "textEdit": {"range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 4}}, "newText": "path"},
                           "additionalTextEdits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "newText": "import os\n"}]},
                          {"label": 7, "insertText": "x", "insertTextFormat": "two"},
                          5]}"#,
        );
        let answer = CompletionAnswer::parse(&json);
        assert!(answer.incomplete);
        assert_eq!(
            answer.defaults,
            Some(serde_json::json!({"insertTextFormat": 2}))
        );
        assert_eq!(answer.items.len(), 3);
        let first = &answer.items[0];
        assert_eq!(first.label.as_deref(), Some("pa\"th"));
        let edit = first.text_edit.as_ref().unwrap();
        assert_eq!(edit.text_edit().unwrap().1, "path");
        assert_eq!(edit.range.unwrap().start.character, 2);
        assert_eq!(first.additional.as_ref().unwrap()[0].1, "import os\n");
        // Fields of the wrong type are absent; an item that is no object has none.
        let second = &answer.items[1];
        assert_eq!(
            (second.label.as_deref(), second.insert_text.as_deref()),
            (None, Some("x"))
        );
        assert_eq!(second.insert_text_format, None);
        assert!(answer.items[2].label.is_none());
    }

    #[test]
    fn an_array_a_null_and_an_insert_replace_edit() {
        let json = raw(
            r#"[{"label": "a", "textEdit": {"newText": "ab", "insert": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                 "replace": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}}}]"#,
        );
        let answer = CompletionAnswer::parse(&json);
        assert!(!answer.incomplete);
        let edit = answer.items[0].text_edit.as_ref().unwrap();
        assert!(edit.text_edit().is_none());
        assert_eq!(edit.replace.unwrap().end.character, 3);
        assert!(CompletionAnswer::parse(&raw("null")).items.is_empty());
    }
}
