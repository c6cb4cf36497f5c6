//! An inserted text followed through later changes of its file: which of its bytes
//! survive, where they are now, and which changes touched it. The pieces keep their
//! offsets into the original text, so the share kept is counted in its characters.

/// The surviving pieces of one inserted text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedSpan {
    /// The text as inserted.
    text: String,
    /// Surviving pieces, in document order: (offset in `text`, length, where it starts now).
    pieces: Vec<Piece>,
    /// Later changes that fell inside the span without deleting all of it.
    pub edits_inside: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    origin: usize,
    len: usize,
    at: usize,
}

impl TrackedSpan {
    /// `text` inserted at byte `at`.
    pub fn new(text: &str, at: usize) -> TrackedSpan {
        TrackedSpan {
            text: text.to_string(),
            pieces: if text.is_empty() {
                Vec::new()
            } else {
                vec![Piece {
                    origin: 0,
                    len: text.len(),
                    at,
                }]
            },
            edits_inside: 0,
        }
    }

    /// The characters of the original text.
    pub fn chars(&self) -> usize {
        self.text.chars().count()
    }

    /// The characters that survive.
    pub fn kept_chars(&self) -> usize {
        self.pieces
            .iter()
            .map(|p| {
                self.text
                    .get(p.origin..p.origin + p.len)
                    .map_or(p.len, |s| s.chars().count())
            })
            .sum()
    }

    /// Share of the original characters that survive (1 for an empty text).
    pub fn kept_rate(&self) -> f64 {
        let all = self.chars();
        if all == 0 {
            1.0
        } else {
            self.kept_chars() as f64 / all as f64
        }
    }

    /// Byte range from the first to the end of the last surviving piece.
    pub fn extent(&self) -> Option<(usize, usize)> {
        let first = self.pieces.first()?;
        let last = self.pieces.last()?;
        Some((first.at, last.at + last.len))
    }

    /// Applies a change of the file: bytes `start..end` (of the text before it)
    /// replaced by `inserted` bytes.
    pub fn apply(&mut self, start: usize, end: usize, inserted: usize) {
        let Some((lo, hi)) = self.extent() else {
            return;
        };
        let before = self.kept_chars();
        // Inside: overlaps the surviving extent, or inserts strictly within it.
        let touches = if start == end {
            start > lo && start < hi
        } else {
            start < hi && end > lo
        };
        let mut pieces = Vec::with_capacity(self.pieces.len() + 1);
        for p in &self.pieces {
            let (p_start, p_end) = (p.at, p.at + p.len);
            if p_end <= start {
                pieces.push(*p);
            } else if p_start >= end {
                // Entirely after the change: moves by the change's size difference.
                pieces.push(Piece {
                    at: p_start + inserted - (end - start),
                    ..*p
                });
            } else {
                // Overlaps (or an insertion splits it): the parts outside survive.
                if p_start < start {
                    pieces.push(Piece {
                        len: start - p_start,
                        ..*p
                    });
                }
                if p_end > end {
                    pieces.push(Piece {
                        origin: p.origin + (end - p_start),
                        len: p_end - end,
                        at: start + inserted,
                    });
                }
            }
        }
        self.pieces = pieces;
        if touches && !self.pieces.is_empty() && before > 0 {
            self.edits_inside += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletions_inside_and_around() {
        // "hello world" inserted at 10; "lo w" (bytes 13..17) deleted: 7 of 11 kept.
        let mut span = TrackedSpan::new("hello world", 10);
        span.apply(13, 17, 0);
        assert_eq!(span.kept_chars(), 7);
        assert_eq!(span.extent(), Some((10, 17)));
        assert_eq!(span.edits_inside, 1);
        // Typing before it moves it; typing right after it does not touch it.
        span.apply(0, 0, 3);
        assert_eq!(span.extent(), Some((13, 20)));
        span.apply(20, 20, 5);
        assert_eq!(span.extent(), Some((13, 20)));
        assert_eq!(span.edits_inside, 1);
        // An insertion inside splits it.
        span.apply(15, 15, 2);
        assert_eq!(span.extent(), Some((13, 22)));
        assert_eq!(span.kept_chars(), 7);
        assert_eq!(span.edits_inside, 2);
        // Deleting everything leaves nothing, and that is not an edit inside.
        span.apply(0, 40, 0);
        assert_eq!(span.kept_chars(), 0);
        assert_eq!(span.kept_rate(), 0.0);
        assert_eq!(span.edits_inside, 2);
    }

    #[test]
    fn counts_characters_not_bytes() {
        // "é=1" is 4 bytes, 3 characters; deleting "é" keeps 2 of 3.
        let mut span = TrackedSpan::new("é=1", 0);
        span.apply(0, 2, 0);
        assert_eq!(span.kept_chars(), 2);
        assert!((span.kept_rate() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn insertion_at_the_start_moves_it() {
        let mut span = TrackedSpan::new("abc", 5);
        span.apply(5, 5, 1);
        assert_eq!(span.extent(), Some((6, 9)));
        assert_eq!(span.edits_inside, 0);
    }
}
