//! Matching predicted edits to gold edits, one to one, in rank order.
//!
//! A location is a file and a half-open line range in current coordinates; its
//! "at-lines" are the replaced lines, or the single line an insertion goes before
//! (Historian's convention). Location rule: two insertions match when their
//! insertion points are at most one line apart (and, under [`MatchRule::Historian`],
//! sit in the same enclosing definitions: Historian's structural-path rule, computed
//! with the file's own grammar at the right line, bugs 5 and 11); any other pair when
//! the Dice coefficient of their at-lines exceeds 0.5 (so, unlike Historian, a
//! replace may match an insert, bug 6). Content rule: per [`MatchRule`].
//!
//! A hit means a change: under every rule but [`MatchRule::Historian`] (the named
//! compat mode), a prediction whose text equals the current text at its own location
//! ([`is_unchanged`]) matches nothing. Historian's BLEU-4 of an unchanged line against
//! a slightly edited one is above 50, so its rule rewards doing nothing.

use crate::core::metrics::bleu::historian_bleu;
use crate::core::metrics::excision::{EsGranularity, ExcisionConfig, excision_score_text};

/// How predicted content is compared with gold content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatchRule {
    /// The default: Historian's BLEU-4 of the new text above 50 (0–100 scale), and the
    /// prediction changes the text at its location.
    Bleu,
    /// Historian compat: BLEU-4 of the new text above 50, quirk included (an unchanged
    /// prediction can match), for reproducing Historian's published numbers.
    Historian,
    /// Excision Score (ES-Line) of the edit at or above the threshold (0–1).
    Es {
        /// Minimum ES.
        threshold: f64,
    },
    /// Same new text, ignoring trailing whitespace on each line.
    Exact,
}

impl MatchRule {
    /// Whether a prediction must change the text to match (every rule but the compat one).
    pub fn requires_change(self) -> bool {
        self != MatchRule::Historian
    }

    /// Whether inserts must also share their enclosing definitions (Historian's
    /// structural path, with the file's own grammar).
    fn checks_structure(self) -> bool {
        matches!(self, MatchRule::Bleu | MatchRule::Historian)
    }
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
    /// Replaced text: the gold edit's, or for a prediction the current text of its lines.
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

/// Whether `after` leaves `before` as it is: the same lines, ignoring trailing whitespace
/// on each line and whether the last line ends with a newline (the differences an
/// editor strips on save and no reader sees).
pub fn is_unchanged(before: &str, after: &str) -> bool {
    normalize(before) == normalize(after)
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
        MatchRule::Bleu | MatchRule::Historian => historian_bleu(pred.after, gold.after) > 50.0,
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

/// Tells whether two lines of a file lie in the same enclosing definitions.
pub type SameStructure<'a> = &'a dyn Fn(&str, usize, usize) -> bool;

/// Matches predictions (in rank order) to gold edits, each gold edit at most once.
/// Returns, per prediction, the index into `golds` it matched. `structure` is
/// consulted for two insertions under [`MatchRule::Bleu`] and [`MatchRule::Historian`].
/// A prediction that leaves its lines unchanged matches nothing unless the rule is
/// the Historian compat one.
pub fn match_one_to_one(
    preds: &[Located<'_>],
    golds: &[Located<'_>],
    rule: MatchRule,
    structure: Option<SameStructure<'_>>,
) -> Vec<Option<usize>> {
    let golds: Vec<&[Located<'_>]> = golds.iter().map(std::slice::from_ref).collect();
    match_among_alternatives(preds, &golds, rule, structure)
        .into_iter()
        .map(|m| m.map(|(g, _)| g))
        .collect()
}

/// [`match_one_to_one`] where each gold edit has several right answers (the edit
/// itself first, then its alternatives): a prediction matches a gold edit when it
/// matches any of them, by that answer's overlap. Returns, per prediction, the gold
/// edit and the answer it matched (the best overlap; ties to the earlier answer).
pub fn match_among_alternatives(
    preds: &[Located<'_>],
    golds: &[&[Located<'_>]],
    rule: MatchRule,
    structure: Option<SameStructure<'_>>,
) -> Vec<Option<(usize, usize)>> {
    let mut taken = vec![false; golds.len()];
    preds
        .iter()
        .map(|pred| {
            if rule.requires_change() && is_unchanged(pred.before, pred.after) {
                return None;
            }
            let best = golds
                .iter()
                .enumerate()
                .filter(|(g, _)| !taken[*g])
                .filter_map(|(g, answers)| {
                    answers
                        .iter()
                        .enumerate()
                        .map(|(a, gold)| (a, location_score(pred, gold)))
                        .filter(|(_, score)| *score > 0.0)
                        .filter(|(a, _)| same_place(pred, &answers[*a], rule, structure))
                        .filter(|(a, _)| content_matches(rule, pred, &answers[*a]))
                        .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
                        .map(|(a, score)| ((g, a), score))
                })
                // Best overlap first; ties to the earlier gold edit.
                .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.0.cmp(&x.0.0)))
                .map(|(m, _)| m);
            if let Some((g, _)) = best {
                taken[g] = true;
            }
            best
        })
        .collect()
}

/// Whether two insertions lie in the same enclosing definitions, where the rule asks
/// (Historian compares the structure at the line before the insertion point).
fn same_place(
    pred: &Located<'_>,
    gold: &Located<'_>,
    rule: MatchRule,
    structure: Option<SameStructure<'_>>,
) -> bool {
    let both_inserts = pred.is_insert() && gold.is_insert();
    !(both_inserts && rule.checks_structure())
        || structure.is_none_or(|same| {
            same(
                gold.file,
                pred.start.saturating_sub(1),
                gold.start.saturating_sub(1),
            )
        })
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
            match_one_to_one(&preds, &golds, MatchRule::Historian, None),
            vec![Some(0), None, Some(1), None]
        );
        assert_eq!(
            match_one_to_one(&preds[2..3], &golds, MatchRule::Exact, None),
            vec![Some(1)]
        );
        let wrong = [at("a", 8, 9, "    print(y)\n")];
        assert_eq!(
            match_one_to_one(&wrong, &golds, MatchRule::Historian, None),
            vec![None]
        );
    }

    #[test]
    fn an_unchanged_prediction_is_a_hit_only_in_historian_compat() {
        // The unchanged line has BLEU-4 74.8 against the edited one (reference §7.2).
        let old = "    self.assertEqual(x, 1)\n";
        let new = "    self.assertEqual(x, 2)\n";
        assert!(historian_bleu(old, new) > 50.0);
        let golds = [Located {
            file: "a",
            start: 8,
            end: 9,
            before: old,
            after: new,
        }];
        // Trailing spaces and a missing final newline do not make it a change.
        for text in [
            old,
            "    self.assertEqual(x, 1)  ",
            "    self.assertEqual(x, 1)",
        ] {
            let unchanged = [Located {
                before: old,
                ..at("a", 8, 9, text)
            }];
            let rules = [
                MatchRule::Bleu,
                MatchRule::Es { threshold: 0.0 },
                MatchRule::Exact,
            ];
            for rule in rules {
                assert_eq!(
                    match_one_to_one(&unchanged, &golds, rule, None),
                    vec![None],
                    "{rule:?}"
                );
            }
            assert_eq!(
                match_one_to_one(&unchanged, &golds, MatchRule::Historian, None),
                vec![Some(0)]
            );
        }
        // The right change matches under every rule.
        let right = [Located {
            before: old,
            ..at("a", 8, 9, new)
        }];
        for rule in [MatchRule::Bleu, MatchRule::Historian, MatchRule::Exact] {
            assert_eq!(match_one_to_one(&right, &golds, rule, None), vec![Some(0)]);
        }
        // Inserting nothing is no change either.
        assert!(is_unchanged("", ""));
        assert!(!is_unchanged("", "\n"));
        assert!(!is_unchanged("x\n", "  x\n"));
    }

    #[test]
    fn historian_inserts_must_share_their_enclosing_definitions() {
        use crate::core::syntax::{Language, structure::analyze};
        let text = "def f():\n    a = 1\n\ndef g():\n    b = 2\n";
        let structure = analyze(Language::Python, text);
        let same = |_: &str, a: usize, b: usize| structure.path_at(a) == structure.path_at(b);
        // Gold inserts at the end of g's body (line 5); one prediction next to it, one
        // a line above g's header (inside f's region), both within ±1 line of a gold.
        let golds = [
            at("a.py", 5, 5, "    c = 3\n"),
            at("a.py", 2, 2, "    z = 0\n"),
        ];
        let in_g = [at("a.py", 5, 5, "    c = 3\n")];
        assert_eq!(
            match_one_to_one(&in_g, &golds, MatchRule::Historian, Some(&same)),
            vec![Some(0)]
        );
        // Inserting `z` after line 2 of f (the blank line) vs before g's header (line 3):
        // one line apart, but the line before each lies in different definitions.
        let near_g = [at("a.py", 4, 4, "    c = 3\n")];
        assert_eq!(
            match_one_to_one(&near_g, &golds, MatchRule::Historian, Some(&same)),
            vec![Some(0)]
        );
        let wrong_place = [at("a.py", 3, 3, "    z = 0\n")];
        assert_eq!(
            match_one_to_one(&wrong_place, &golds, MatchRule::Historian, Some(&same)),
            vec![None]
        );
        // Exact rule: position alone.
        assert_eq!(
            match_one_to_one(&wrong_place, &golds, MatchRule::Exact, Some(&same)),
            vec![Some(1)]
        );
    }
}
