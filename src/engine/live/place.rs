//! The text at taken text's place as the session goes on: what Zed's kept rate compares
//! the taken text with. A change inside the place (or overlapping it) rewrites it, a
//! change before it moves it, a change after it (or an insertion at either edge) leaves
//! it alone, an insertion at an emptied place fills it; a reload of the file empties it.

/// A byte range of a file and its current text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenPlace {
    at: usize,
    text: String,
}

impl TakenPlace {
    /// The place of `taken`, just written at byte `at`.
    pub fn new(taken: &str, at: usize) -> TakenPlace {
        TakenPlace {
            at,
            text: taken.to_string(),
        }
    }

    /// Its current text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Applies a change of the file: bytes `start..end` (of the text before it) replaced
    /// by `after`.
    pub fn apply(&mut self, start: usize, end: usize, after: &str) {
        let stop = self.at + self.text.len();
        let into_empty = self.text.is_empty() && start == self.at && end == self.at;
        if start > end || (start >= stop && !into_empty) {
            return;
        }
        if end <= self.at && !into_empty {
            // Before it (an insertion at its start included): it moves.
            self.at = self.at - (end - start) + after.len();
            return;
        }
        let (lo, hi) = (start.max(self.at) - self.at, end.min(stop) - self.at);
        if !(self.text.is_char_boundary(lo) && self.text.is_char_boundary(hi)) {
            return;
        }
        self.text.replace_range(lo..hi, after);
        self.at = self.at.min(start);
    }

    /// A reload replaced the whole file: nothing of the place is known to remain.
    pub fn clear(&mut self) {
        self.text.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_before_move_it_and_changes_inside_rewrite_it() {
        // The file: "ab" + taken "print(x)" + "cd"; the place is bytes 2..10.
        let mut p = TakenPlace::new("print(x)", 2);
        p.apply(0, 1, "AAA"); // before: moves by 2
        assert_eq!((p.at, p.text()), (4, "print(x)"));
        p.apply(10, 11, "y"); // inside: `x` → `y`
        assert_eq!(p.text(), "print(y)");
        p.apply(12, 12, "!"); // after it (an insertion at its end): unchanged
        assert_eq!(p.text(), "print(y)");
        p.apply(3, 6, ""); // overlapping its start: cuts `pr`
        assert_eq!((p.at, p.text()), (3, "int(y)"));
        p.clear();
        assert_eq!(p.text(), "");
        // Emptied, it takes what is typed at its place.
        p.apply(3, 3, "int");
        assert_eq!(p.text(), "int");
    }
}
