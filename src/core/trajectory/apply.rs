//! Applying byte-range edits to text: the one operation that rebuilds any version. Each
//! edit checks its before-text, so applying checks itself.

use thiserror::Error;

/// Why a byte edit could not be applied.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ApplyError {
    /// The range lies (partly) outside the text.
    #[error("edit range {start}..{end} is outside the text ({len} bytes)")]
    OutOfBounds {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Text length in bytes.
        len: usize,
    },
    /// The range cuts a UTF-8 character in two.
    #[error("edit range {start}..{end} does not fall on character boundaries")]
    NotCharBoundary {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
    },
    /// The text at the range is not the text the edit says it replaces.
    #[error("text at {start}..{end} differs from the edit's before-text")]
    BeforeMismatch {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
    },
}

/// Replaces `text[start..end]` (which must equal `before`) with `after`.
pub fn apply_byte_edit(
    text: &mut String,
    start: usize,
    end: usize,
    before: &str,
    after: &str,
) -> Result<(), ApplyError> {
    if start > end || end > text.len() {
        return Err(ApplyError::OutOfBounds {
            start,
            end,
            len: text.len(),
        });
    }
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return Err(ApplyError::NotCharBoundary { start, end });
    }
    if &text[start..end] != before {
        return Err(ApplyError::BeforeMismatch { start, end });
    }
    text.replace_range(start..end, after);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_and_checks() {
        let mut text = String::from("héllo world");
        apply_byte_edit(&mut text, 0, 6, "héllo", "bye").unwrap();
        assert_eq!(text, "bye world");
        assert_eq!(
            apply_byte_edit(&mut text, 1, 2, "x", "y"),
            Err(ApplyError::BeforeMismatch { start: 1, end: 2 })
        );
        assert_eq!(
            apply_byte_edit(&mut text, 5, 99, "", ""),
            Err(ApplyError::OutOfBounds {
                start: 5,
                end: 99,
                len: 9
            })
        );
    }
}
