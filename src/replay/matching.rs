//! Matching predicted edits to gold edits, one to one, in rank order.
//!
//! A location is a file and a half-open line range in current coordinates; its
//! "at-lines" are the replaced lines, or the single line an insertion goes before
//! (Historian's convention). Location rule: two insertions match when their
//! insertion points are at most one line apart; any other pair when the Dice
//! coefficient of their at-lines exceeds 0.5 (so, unlike Historian, a replace may
//! match an insert, bug 6). Content rule: per [`MatchRule`].

use crate::metrics::bleu::historian_bleu;
use crate::metrics::excision::{EsGranularity, ExcisionConfig, excision_score_text};

/// How predicted content is compared with gold content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatchRule {
    /// Historian: BLEU-4 of the new text above 50 (0–100 scale).
    Historian,
    /// Excision Score (ES-Line) of the edit at or above the threshold (0–1).
    Es {
        /// Minimum ES.
        threshold: f64,
    },
    /// Same new text, ignoring trailing whitespace on each line.
    Exact,
}

/// A located edit in current coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<'a> {
    /// File path.
    pub file: &'a str,
    /// First replaced line (insertion point when `start == end`).
    pub start: usize,
    /// End of the replaced lines (exclusive).
    pub end: usize,
    /// Replaced text (gold edits; empty for predictions, which only give new text).
    pub before: &'a str,
    /// New text.
    pub after: &'a str,
}

impl Located<'_> {
    fn is_insert(&self) -> bool {
        self.start == self.end
    }

    /// Historian's at-lines: the replaced lines, or the insertion point.
    fn at_lines(&self) -> (usize, usize) {
        if self.is_insert() {
            (self.start, self.start + 1)
        } else {
            (self.start, self.end)
        }
    }
}

/// Dice coefficient of two half-open line ranges: |A∩B| / ((|A|+|B|)/2).
pub fn dice(a: (usize, usize), b: (usize, usize)) -> f64 {
    let len = |r: (usize, usize)| r.1.saturating_sub(r.0);
    let total = len(a) + len(b);
    if total == 0 {
        return 0.0;
    }
    let overlap = a.1.min(b.1).saturating_sub(a.0.max(b.0));
    2.0 * overlap as f64 / total as f64
}

/// How well two locations coincide (0 when the location rule fails).
pub fn location_score(pred: &Located<'_>, gold: &Located<'_>) -> f64 {
    if pred.file != gold.file {
        return 0.0;
    }
    if pred.is_insert() && gold.is_insert() {
        return if pred.start.abs_diff(gold.start) <= 1 {
            1.0
        } else {
            0.0
        };
    }
    let d = dice(pred.at_lines(), gold.at_lines());
    if d > 0.5 { d } else { 0.0 }
}

/// Whether the predicted new text is close enough to the gold one.
pub fn content_matches(rule: MatchRule, pred: &Located<'_>, gold: &Located<'_>) -> bool {
    match rule {
        MatchRule::Historian => historian_bleu(pred.after, gold.after) > 50.0,
        MatchRule::Es { threshold } => {
            let score = excision_score_text(
                gold.before,
                gold.after,
                pred.after,
                EsGranularity::Line,
                None,
                &ExcisionConfig::default(),
            );
            score.score >= threshold
        }
        MatchRule::Exact => normalize(pred.after) == normalize(gold.after),
    }
}

fn normalize(text: &str) -> Vec<&str> {
    text.lines().map(str::trim_end).collect()
}

/// Matches predictions (in rank order) to gold edits, each gold edit at most once.
/// Returns, per prediction, the index into `golds` it matched.
pub fn match_one_to_one(
    preds: &[Located<'_>],
    golds: &[Located<'_>],
    rule: MatchRule,
) -> Vec<Option<usize>> {
    let mut taken = vec![false; golds.len()];
    preds
        .iter()
        .map(|pred| {
            let best = golds
                .iter()
                .enumerate()
                .filter(|(g, _)| !taken[*g])
                .map(|(g, gold)| (g, location_score(pred, gold)))
                .filter(|(_, score)| *score > 0.0)
                .filter(|(g, _)| content_matches(rule, pred, &golds[*g]))
                // Best overlap first; ties to the earlier gold edit.
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(g, _)| g);
            if let Some(g) = best {
                taken[g] = true;
            }
            best
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(file: &'a str, start: usize, end: usize, after: &'a str) -> Located<'a> {
        Located {
            file,
            start,
            end,
            before: "",
            after,
        }
    }

    #[test]
    fn dice_and_locations() {
        assert_eq!(dice((3, 5), (4, 6)), 0.5);
        assert_eq!(dice((3, 5), (3, 5)), 1.0);
        assert_eq!(dice((0, 0), (0, 0)), 0.0);
        // Insert vs insert: within one line.
        assert_eq!(location_score(&at("a", 4, 4, ""), &at("a", 5, 5, "")), 1.0);
        assert_eq!(location_score(&at("a", 4, 4, ""), &at("a", 6, 6, "")), 0.0);
        // A one-line replace at an insertion point matches it (Historian would not).
        assert_eq!(location_score(&at("a", 4, 5, ""), &at("a", 4, 4, "")), 1.0);
        assert_eq!(location_score(&at("b", 4, 5, ""), &at("a", 4, 5, "")), 0.0);
    }

    #[test]
    fn one_to_one_in_rank_order() {
        let golds = [
            at(
                "a",
                3,
                5,
                "def compute(x, scale=1):\n    return (x + 1) * scale\n",
            ),
            at("a", 8, 9, "    return compute(y, scale=2) * 2\n"),
        ];
        let preds = [
            at(
                "a",
                3,
                5,
                "def compute(x, scale=1):\n    return (x + 1) * scale\n",
            ),
            // Same gold again: a duplicate, not a second hit.
            at(
                "a",
                3,
                5,
                "def compute(x, scale=1):\n    return (x + 1) * scale\n",
            ),
            at("a", 8, 9, "    return compute(y, scale=2) * 2\n"),
            at("a", 0, 1, "import sys\n"),
        ];
        assert_eq!(
            match_one_to_one(&preds, &golds, MatchRule::Historian),
            vec![Some(0), None, Some(1), None]
        );
        assert_eq!(
            match_one_to_one(&preds[2..3], &golds, MatchRule::Exact),
            vec![Some(1)]
        );
        let wrong = [at("a", 8, 9, "    print(y)\n")];
        assert_eq!(
            match_one_to_one(&wrong, &golds, MatchRule::Historian),
            vec![None]
        );
    }
}
