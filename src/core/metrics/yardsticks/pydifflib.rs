//! Python's `difflib`, reproduced exactly where the Next Edit Prediction benchmark uses it:
//! `SequenceMatcher` (Ratcliff–Obershelp with the "autojunk" heuristic) and
//! `unified_diff(a, b, lineterm='')`, plus `str.splitlines` and `str.isspace`.
//!
//! Written here because the `difflib` crate (0.4.0) inverts the autojunk test: on a
//! sequence of 200 or more items it keeps only the popular items instead of dropping
//! them, so its diffs differ from Python's on long files (shown by
//! `tests/it/yardsticks.rs`, which compares this module with the real `python3`).

use std::collections::HashMap;

/// One run of equal items: `a[a_start..a_start + size] == b[b_start..b_start + size]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Block {
    a_start: usize,
    b_start: usize,
    size: usize,
}

/// How a stretch of `a` becomes the matching stretch of `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// Equal items.
    Equal,
    /// `a[a1..a2]` replaced by `b[b1..b2]`.
    Replace,
    /// `a[a1..a2]` removed.
    Delete,
    /// `b[b1..b2]` inserted.
    Insert,
}

/// One opcode, as Python's `get_opcodes` yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opcode {
    /// What happens.
    pub tag: Tag,
    /// Start in `a`.
    pub a1: usize,
    /// End in `a`.
    pub a2: usize,
    /// Start in `b`.
    pub b1: usize,
    /// End in `b`.
    pub b2: usize,
}

/// Python's `SequenceMatcher(None, a, b)` (autojunk on, no junk function).
pub struct SequenceMatcher<'s, T> {
    a: &'s [T],
    b: &'s [T],
    /// Where each non-popular item of `b` occurs, ascending.
    b_index: HashMap<&'s T, Vec<usize>>,
}

impl<'s, T: Eq + std::hash::Hash> SequenceMatcher<'s, T> {
    /// Indexes `b`; with 200 items or more, an item occurring more than `len / 100 + 1`
    /// times is "popular" and never starts a match (it can still extend one).
    pub fn new(a: &'s [T], b: &'s [T]) -> Self {
        let mut b_index: HashMap<&T, Vec<usize>> = HashMap::new();
        for (j, item) in b.iter().enumerate() {
            b_index.entry(item).or_default().push(j);
        }
        if b.len() >= 200 {
            let limit = b.len() / 100 + 1;
            b_index.retain(|_, at| at.len() <= limit);
        }
        SequenceMatcher { a, b, b_index }
    }

    /// The longest matching block in `a[alo..ahi]`, `b[blo..bhi]`: earliest in `a`, then
    /// in `b`, among the longest; then widened over equal neighbours.
    fn longest_match(&self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> Block {
        let (mut best_i, mut best_j, mut best) = (alo, blo, 0);
        let mut run_ending_at: HashMap<usize, usize> = HashMap::new();
        for i in alo..ahi {
            let mut next: HashMap<usize, usize> = HashMap::new();
            for &j in self.b_index.get(&self.a[i]).map_or(&[][..], Vec::as_slice) {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j
                    .checked_sub(1)
                    .and_then(|p| run_ending_at.get(&p))
                    .copied()
                    .unwrap_or(0)
                    + 1;
                next.insert(j, k);
                if k > best {
                    (best_i, best_j, best) = (i + 1 - k, j + 1 - k, k);
                }
            }
            run_ending_at = next;
        }
        while best_i > alo && best_j > blo && self.a[best_i - 1] == self.b[best_j - 1] {
            (best_i, best_j, best) = (best_i - 1, best_j - 1, best + 1);
        }
        while best_i + best < ahi
            && best_j + best < bhi
            && self.a[best_i + best] == self.b[best_j + best]
        {
            best += 1;
        }
        Block {
            a_start: best_i,
            b_start: best_j,
            size: best,
        }
    }

    /// Python's `get_matching_blocks`, without the final sentinel.
    fn matching_blocks(&self) -> Vec<Block> {
        let mut queue = vec![(0, self.a.len(), 0, self.b.len())];
        let mut found = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let m = self.longest_match(alo, ahi, blo, bhi);
            if m.size == 0 {
                continue;
            }
            found.push(m);
            if alo < m.a_start && blo < m.b_start {
                queue.push((alo, m.a_start, blo, m.b_start));
            }
            if m.a_start + m.size < ahi && m.b_start + m.size < bhi {
                queue.push((m.a_start + m.size, ahi, m.b_start + m.size, bhi));
            }
        }
        found.sort();
        let mut merged: Vec<Block> = Vec::new();
        for m in found {
            match merged.last_mut() {
                Some(last)
                    if last.a_start + last.size == m.a_start
                        && last.b_start + last.size == m.b_start =>
                {
                    last.size += m.size;
                }
                _ => merged.push(m),
            }
        }
        merged
    }

    /// Python's `get_opcodes`.
    pub fn opcodes(&self) -> Vec<Opcode> {
        let sentinel = Block {
            a_start: self.a.len(),
            b_start: self.b.len(),
            size: 0,
        };
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        for m in self.matching_blocks().into_iter().chain([sentinel]) {
            let tag = match (i < m.a_start, j < m.b_start) {
                (true, true) => Some(Tag::Replace),
                (true, false) => Some(Tag::Delete),
                (false, true) => Some(Tag::Insert),
                (false, false) => None,
            };
            if let Some(tag) = tag {
                out.push(Opcode {
                    tag,
                    a1: i,
                    a2: m.a_start,
                    b1: j,
                    b2: m.b_start,
                });
            }
            (i, j) = (m.a_start + m.size, m.b_start + m.size);
            if m.size > 0 {
                out.push(Opcode {
                    tag: Tag::Equal,
                    a1: m.a_start,
                    a2: i,
                    b1: m.b_start,
                    b2: j,
                });
            }
        }
        out
    }

    /// Python's `get_grouped_opcodes(n)`: the changes with up to `n` equal items of
    /// context, split where more than `2n` equal items separate them.
    pub fn grouped_opcodes(&self, n: usize) -> Vec<Vec<Opcode>> {
        let mut codes = self.opcodes();
        if codes.is_empty() {
            codes.push(Opcode {
                tag: Tag::Equal,
                a1: 0,
                a2: 1,
                b1: 0,
                b2: 1,
            });
        }
        if let Some(first) = codes.first_mut().filter(|c| c.tag == Tag::Equal) {
            first.a1 = first.a1.max(first.a2.saturating_sub(n));
            first.b1 = first.b1.max(first.b2.saturating_sub(n));
        }
        if let Some(last) = codes.last_mut().filter(|c| c.tag == Tag::Equal) {
            last.a2 = last.a2.min(last.a1 + n);
            last.b2 = last.b2.min(last.b1 + n);
        }
        let mut groups = Vec::new();
        let mut group = Vec::new();
        for mut c in codes {
            if c.tag == Tag::Equal && c.a2 - c.a1 > 2 * n {
                group.push(Opcode {
                    a2: c.a2.min(c.a1 + n),
                    b2: c.b2.min(c.b1 + n),
                    ..c
                });
                groups.push(std::mem::take(&mut group));
                c.a1 = c.a1.max(c.a2.saturating_sub(n));
                c.b1 = c.b1.max(c.b2.saturating_sub(n));
            }
            group.push(c);
        }
        if !(group.len() == 1 && group[0].tag == Tag::Equal) {
            groups.push(group);
        }
        groups
    }
}

/// Python's `difflib.unified_diff(a, b, n=n, lineterm='')` with empty file names and
/// dates: `--- `, `+++ `, then per group an `@@ -r +r @@` line and its prefixed lines.
pub fn unified_diff(a: &[&str], b: &[&str], n: usize) -> Vec<String> {
    let groups = SequenceMatcher::new(a, b).grouped_opcodes(n);
    let mut out = Vec::new();
    if !groups.is_empty() {
        out.push("--- ".to_owned());
        out.push("+++ ".to_owned());
    }
    for group in groups {
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push(format!(
            "@@ -{} +{} @@",
            unified_range(first.a1, last.a2),
            unified_range(first.b1, last.b2)
        ));
        for c in group {
            let lines = |prefix: &str, xs: &[&str]| -> Vec<String> {
                xs.iter().map(|x| format!("{prefix}{x}")).collect()
            };
            match c.tag {
                Tag::Equal => out.extend(lines(" ", &a[c.a1..c.a2])),
                Tag::Delete => out.extend(lines("-", &a[c.a1..c.a2])),
                Tag::Insert => out.extend(lines("+", &b[c.b1..c.b2])),
                Tag::Replace => {
                    out.extend(lines("-", &a[c.a1..c.a2]));
                    out.extend(lines("+", &b[c.b1..c.b2]));
                }
            }
        }
    }
    out
}

/// Python's `_format_range_unified`: `start,length` (1-based; the line before for an
/// empty range), or just the line for a length of 1.
fn unified_range(start: usize, stop: usize) -> String {
    match stop - start {
        1 => (start + 1).to_string(),
        0 => format!("{start},0"),
        len => format!("{},{len}", start + 1),
    }
}

/// Python's `str.splitlines()`: split at `\n`, `\r`, `\r\n`, `\v`, `\f`, `\x1c`–`\x1e`,
/// `\x85`, U+2028 and U+2029; no empty last line for a trailing break.
pub fn splitlines(text: &str) -> Vec<&str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        )
    };
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if is_break(c) {
            lines.push(&text[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
                chars.next();
                end += 1;
            }
            start = end;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Python's `str.isspace()` for one character: Rust's whitespace plus the separators
/// `\x1c`–`\x1f`, which Python counts and Unicode's White_Space does not.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(splitlines("a\r\nb\rc\n"), ["a", "b", "c"]);
        assert_eq!(splitlines("\n"), [""]);
        assert!(splitlines("").is_empty());
        assert_eq!(splitlines("a\x0bb\u{2028}"), ["a", "b"]);
    }

    #[test]
    fn unified_diff_of_one_change() {
        let d = unified_diff(&["a", "b", "c"], &["a", "B", "c"], 3);
        assert_eq!(
            d,
            ["--- ", "+++ ", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]
        );
        assert!(unified_diff(&["a"], &["a"], 3).is_empty());
        assert_eq!(unified_range(0, 0), "0,0");
    }
}
