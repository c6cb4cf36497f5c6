//! Shadow copies of open documents (ropey, with LSP's line breaks only), kept in step
//! with the editor's content changes; positions in the session's negotiated encoding
//! are converted to byte offsets here.

use std::cell::Cell;

use ropey::Rope;

/// How LSP `Position.character` counts (negotiated per session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionEncoding {
    /// UTF-8 code units (bytes).
    Utf8,
    /// UTF-16 code units: the LSP default when the server names none.
    #[default]
    Utf16,
    /// Unicode code points.
    Utf32,
}

impl PositionEncoding {
    /// The LSP name (`utf-8`, `utf-16`, `utf-32`).
    pub fn as_str(self) -> &'static str {
        match self {
            PositionEncoding::Utf8 => "utf-8",
            PositionEncoding::Utf16 => "utf-16",
            PositionEncoding::Utf32 => "utf-32",
        }
    }

    /// Parses an LSP name; `None` for unknown names.
    pub fn parse(name: &str) -> Option<PositionEncoding> {
        match name.to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Some(PositionEncoding::Utf8),
            "utf-16" | "utf16" => Some(PositionEncoding::Utf16),
            "utf-32" | "utf32" => Some(PositionEncoding::Utf32),
            _ => None,
        }
    }

    fn units(self, c: char) -> usize {
        match self {
            PositionEncoding::Utf8 => c.len_utf8(),
            PositionEncoding::Utf16 => c.len_utf16(),
            PositionEncoding::Utf32 => 1,
        }
    }
}

/// An LSP position: 0-based line and character in the session's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct LspPosition {
    /// Line.
    pub line: u32,
    /// Character offset in encoding units.
    pub character: u32,
}

/// An LSP range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct LspRange {
    /// Start.
    pub start: LspPosition,
    /// End (exclusive).
    pub end: LspPosition,
}

impl LspRange {
    /// A range read from JSON without copying it (`None` when it is not one).
    pub fn from_json(value: &serde_json::Value) -> Option<LspRange> {
        serde::Deserialize::deserialize(value).ok()
    }
}

/// One proposed text edit in LSP coordinates: `(range, new text)`.
pub type LspTextEdit = (LspRange, String);

/// What one content change did, in canonical coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeSpan {
    /// Byte offset of the replaced text, in the text before.
    pub start_byte: usize,
    /// End of the replaced text (exclusive), in the text before.
    pub end_byte: usize,
    /// Line of `start_byte` (0-based).
    pub start_line: usize,
    /// Line of `end_byte` in the text before.
    pub end_line: usize,
    /// Line of the end of the inserted text in the text after.
    pub new_end_line: usize,
    /// Replaced text.
    pub before: String,
    /// Inserted text.
    pub after: String,
}

/// A position converted to a byte offset, remembered until the text changes.
type Converted = Option<(LspPosition, PositionEncoding, usize)>;

/// The editor's view of one document, rebuilt from didOpen + didChange.
#[derive(Debug, Clone)]
pub struct ShadowDocument {
    rope: Rope,
    /// Version from the latest didOpen/didChange.
    pub version: i64,
    /// The last two positions converted: the items of a completion answer (up to a
    /// hundred, each read twice) share one range.
    converted: Cell<[Converted; 2]>,
}

impl ShadowDocument {
    /// A document opened with `text`.
    pub fn new(text: &str, version: i64) -> ShadowDocument {
        ShadowDocument {
            rope: Rope::from_str(text),
            version,
            converted: Cell::new([None; 2]),
        }
    }

    /// The current text.
    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    /// The text between two byte offsets (on char boundaries), without the rest.
    pub fn slice(&self, start: usize, end: usize) -> String {
        self.rope.byte_slice(start..end).to_string()
    }

    /// Length in bytes.
    pub fn len_bytes(&self) -> usize {
        self.rope.len_bytes()
    }

    /// Number of lines (a trailing line break starts one more, empty line).
    pub fn len_lines(&self) -> usize {
        self.rope.len_lines()
    }

    /// Byte offset of an LSP position; characters past the line end clamp to the
    /// end of the line (LSP rule), lines past the end clamp to the end of the text.
    pub fn position_to_byte(&self, position: LspPosition, encoding: PositionEncoding) -> usize {
        let converted = self.converted.get();
        if let Some((_, _, byte)) = converted
            .iter()
            .flatten()
            .find(|(p, e, _)| *p == position && *e == encoding)
        {
            return *byte;
        }
        let byte = self.convert(position, encoding);
        self.converted
            .set([Some((position, encoding, byte)), converted[0]]);
        byte
    }

    fn convert(&self, position: LspPosition, encoding: PositionEncoding) -> usize {
        let line = position.line as usize;
        let Some(text) = self.rope.get_line(line) else {
            return self.rope.len_bytes();
        };
        let line_start_char = self.rope.line_to_char(line);
        let mut units = 0usize;
        let mut chars = 0usize;
        let target = position.character as usize;
        for c in text.chars() {
            if c == '\n' || c == '\r' || units >= target {
                break;
            }
            let width = encoding.units(c);
            if units + width > target {
                // A position inside a character (half a surrogate pair): round down.
                break;
            }
            units += width;
            chars += 1;
        }
        self.rope.char_to_byte(line_start_char + chars)
    }

    /// Start of the word (letters, digits, `_`) that ends at `byte`: what an editor
    /// replaces with a completion item that has no edit of its own.
    pub fn word_start(&self, byte: usize) -> usize {
        let mut at = self.rope.byte_to_char(byte.min(self.rope.len_bytes()));
        let mut chars = self.rope.chars_at(at);
        while let Some(c) = chars.prev() {
            if !(c.is_alphanumeric() || c == '_') {
                break;
            }
            at -= 1;
        }
        self.rope.char_to_byte(at)
    }

    /// The range of the word around `position` (letters, digits and `_` on either
    /// side): what an editor replaces with a completion item that has no edit of its
    /// own. In LSP coordinates of `encoding`, on the position's line.
    pub fn word_range(&self, position: LspPosition, encoding: PositionEncoding) -> LspRange {
        let byte = self.position_to_byte(position, encoding);
        let start = self.word_start(byte);
        let at = self.rope.byte_to_char(byte);
        let end_char = at
            + self
                .rope
                .chars_at(at)
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .count();
        let end = self.rope.char_to_byte(end_char);
        let units = |from: usize, to: usize| -> u32 {
            let text = self.rope.byte_slice(from..to).to_string();
            (match encoding {
                PositionEncoding::Utf8 => text.len(),
                PositionEncoding::Utf16 => text.encode_utf16().count(),
                PositionEncoding::Utf32 => text.chars().count(),
            }) as u32
        };
        // Counted from the line's start: a position past the line's end is clamped.
        let line = self.byte_to_line(byte);
        let line_start = self.rope.line_to_byte(line);
        let line = line as u32;
        LspRange {
            start: LspPosition {
                line,
                character: units(line_start, start),
            },
            end: LspPosition {
                line,
                character: units(line_start, end),
            },
        }
    }

    /// Line containing a byte offset.
    pub fn byte_to_line(&self, byte: usize) -> usize {
        self.rope.byte_to_line(byte.min(self.rope.len_bytes()))
    }

    /// Applies an incremental change (`range` + `text`).
    pub fn apply_range_change(
        &mut self,
        range: LspRange,
        text: &str,
        encoding: PositionEncoding,
    ) -> ChangeSpan {
        let mut start = self.position_to_byte(range.start, encoding);
        let mut end = self.position_to_byte(range.end, encoding);
        if end < start {
            std::mem::swap(&mut start, &mut end);
        }
        self.replace(start, end, text)
    }

    /// Applies a full-text change, reported as the smallest single replacement.
    pub fn apply_full_change(&mut self, text: &str) -> Option<ChangeSpan> {
        let old = self.rope.to_string();
        if old == text {
            return None;
        }
        let (start, old_end, new_end) = minimal_replacement(&old, text);
        let after = &text[start..new_end];
        let span = self.replace(start, old_end, after);
        debug_assert_eq!(self.rope.len_bytes(), text.len());
        Some(span)
    }

    /// Replaces the bytes `start..end` (on char boundaries) by `text`; importers use it
    /// for formats that address text by offset rather than by LSP position.
    pub fn replace(&mut self, start: usize, end: usize, text: &str) -> ChangeSpan {
        self.converted.set([None; 2]);
        let start_char = self.rope.byte_to_char(start);
        let end_char = self.rope.byte_to_char(end);
        let before = self.rope.slice(start_char..end_char).to_string();
        let start_line = self.rope.char_to_line(start_char);
        let end_line = self.rope.char_to_line(end_char);
        self.rope.remove(start_char..end_char);
        self.rope.insert(start_char, text);
        let new_end_char = start_char + text.chars().count();
        let new_end_line = self.rope.char_to_line(new_end_char);
        ChangeSpan {
            start_byte: start,
            end_byte: end,
            start_line,
            end_line,
            new_end_line,
            before,
            after: text.to_string(),
        }
    }
}

/// The common prefix/suffix split of two texts: `(start, old_end, new_end)` on char boundaries.
pub fn minimal_replacement(old: &str, new: &str) -> (usize, usize, usize) {
    let prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let mut start = prefix;
    while !old.is_char_boundary(start) || !new.is_char_boundary(start) {
        start -= 1;
    }
    let max_suffix = (old.len() - start).min(new.len() - start);
    let suffix = old.as_bytes()[old.len() - max_suffix..]
        .iter()
        .rev()
        .zip(new.as_bytes()[new.len() - max_suffix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut old_end = old.len() - suffix;
    let mut new_end = new.len() - suffix;
    while !old.is_char_boundary(old_end) || !new.is_char_boundary(new_end) {
        old_end += 1;
        new_end += 1;
    }
    (start, old_end, new_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> LspPosition {
        LspPosition { line, character }
    }

    #[test]
    fn utf16_positions_count_surrogate_pairs() {
        let doc = ShadowDocument::new("a😀b\r\n漢字x\rz", 1);
        assert_eq!(doc.position_to_byte(pos(0, 1), PositionEncoding::Utf16), 1);
        assert_eq!(doc.position_to_byte(pos(0, 3), PositionEncoding::Utf16), 5);
        assert_eq!(
            doc.position_to_byte(pos(0, 2), PositionEncoding::Utf16),
            1,
            "inside a pair rounds down"
        );
        assert_eq!(
            doc.position_to_byte(pos(0, 99), PositionEncoding::Utf16),
            6,
            "clamped before \\r\\n"
        );
        assert_eq!(doc.position_to_byte(pos(1, 2), PositionEncoding::Utf16), 14);
        assert_eq!(doc.position_to_byte(pos(1, 2), PositionEncoding::Utf32), 14);
        assert_eq!(doc.position_to_byte(pos(1, 6), PositionEncoding::Utf8), 14);
        assert_eq!(
            doc.position_to_byte(pos(2, 0), PositionEncoding::Utf16),
            16,
            "bare \\r is a line break"
        );
        assert_eq!(doc.position_to_byte(pos(9, 0), PositionEncoding::Utf16), 17);
    }

    #[test]
    fn range_change_reports_both_texts() {
        let mut doc = ShadowDocument::new("one\ntwo\nthree\n", 1);
        let range = LspRange {
            start: pos(0, 2),
            end: pos(2, 1),
        };
        let span = doc.apply_range_change(range, "E\nT", PositionEncoding::Utf16);
        assert_eq!(doc.text(), "onE\nThree\n");
        assert_eq!(
            span,
            ChangeSpan {
                start_byte: 2,
                end_byte: 9,
                start_line: 0,
                end_line: 2,
                new_end_line: 1,
                before: "e\ntwo\nt".into(),
                after: "E\nT".into(),
            }
        );
    }

    #[test]
    fn full_change_is_minimal() {
        let mut doc = ShadowDocument::new("héllo wörld", 1);
        let span = doc.apply_full_change("héllo brave wörld").unwrap();
        assert_eq!(
            (span.start_byte, span.end_byte, span.after.as_str()),
            (7, 7, "brave ")
        );
        assert_eq!(doc.text(), "héllo brave wörld");
        assert_eq!(doc.apply_full_change("héllo brave wörld"), None);
        // Replacing one multi-byte char by another sharing its first byte.
        let mut doc = ShadowDocument::new("aé", 1);
        let span = doc.apply_full_change("aè").unwrap();
        assert_eq!((span.before.as_str(), span.after.as_str()), ("é", "è"));
    }
}
