//! Zed's kept rate: of the text a prediction adds, the share the final text keeps.
//!
//! Texts are split into tokens (identifier runs, whitespace runs, single other
//! characters). A predicted token is *context* when it lies on one longest common
//! subsequence with the base and on one with the final text; the other predicted tokens
//! are new. Kept = the new predicted tokens on a longest common subsequence with the new
//! final tokens (those not shared by final, base and prediction). Sizes are UTF-8 bytes,
//! as in the reference. Equal to `kept_rate.rs::compute_kept_rate` at the commit named in
//! `docs/metrics.md`, including its tie-breaking.

/// What became of one predicted token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFate {
    /// Shared by base, prediction and final text.
    Context,
    /// New in the prediction and kept by the final text.
    Kept,
    /// New in the prediction and not in the final text.
    Discarded,
}

/// The kept rate and the sizes it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptRate {
    /// `kept_chars / predicted_new_chars`; 1 when neither side adds anything, 0 when
    /// only the final text does.
    pub kept_rate: f64,
    /// Bytes of new predicted tokens the final text keeps.
    pub kept_chars: usize,
    /// Bytes of new predicted tokens it does not keep.
    pub discarded_chars: usize,
    /// Bytes of predicted tokens that are not context.
    pub predicted_new_chars: usize,
    /// Bytes of final tokens not shared with both base and prediction.
    pub final_new_chars: usize,
    /// Bytes of predicted context tokens.
    pub context_chars: usize,
    /// One fate per predicted token, in order.
    pub fates: Vec<TokenFate>,
}

/// The kept rate of `predicted` (made from `base`) given what the user ended with.
pub fn kept_rate(base: &str, predicted: &str, final_text: &str) -> KeptRate {
    let p = tokenize(predicted);
    if base == predicted && predicted == final_text {
        return KeptRate {
            kept_rate: 1.0,
            kept_chars: 0,
            discarded_chars: 0,
            predicted_new_chars: 0,
            final_new_chars: 0,
            context_chars: predicted.len(),
            fates: vec![TokenFate::Context; p.len()],
        };
    }
    let (b, f) = (tokenize(base), tokenize(final_text));
    let (p_on_base, _) = lcs_masks(&p, &b);
    let (p_on_final, f_on_pred) = lcs_masks(&p, &f);
    let (f_on_base, _) = lcs_masks(&f, &b);
    let p_context = both(&p_on_base, &p_on_final);
    let f_context = both(&f_on_base, &f_on_pred);
    let p_new = unmasked(&p, &p_context);
    let f_new = unmasked(&f, &f_context);
    let kept = if p_new == f_new {
        vec![true; p_new.len()]
    } else {
        lcs_masks(&p_new, &f_new).0
    };
    let bytes = |tokens: &[&str], mask: &[bool], want: bool| -> usize {
        tokens
            .iter()
            .zip(mask)
            .filter(|&(_, &m)| m == want)
            .map(|(t, _)| t.len())
            .sum()
    };
    let predicted_new_chars = bytes(&p, &p_context, false);
    let final_new_chars = bytes(&f, &f_context, false);
    let kept_chars = bytes(&p_new, &kept, true);
    let kept_rate = match (predicted_new_chars, final_new_chars) {
        (0, 0) => 1.0,
        (0, _) => 0.0,
        (n, _) => kept_chars as f64 / n as f64,
    };
    let mut kept_iter = kept.iter();
    let fates = p_context
        .iter()
        .map(|&context| {
            if context {
                TokenFate::Context
            } else if kept_iter.next().copied().unwrap_or(false) {
                TokenFate::Kept
            } else {
                TokenFate::Discarded
            }
        })
        .collect();
    KeptRate {
        kept_rate,
        kept_chars,
        discarded_chars: predicted_new_chars - kept_chars,
        predicted_new_chars,
        final_new_chars,
        context_chars: bytes(&p, &p_context, true),
        fates,
    }
}

/// Identifier runs (alphanumeric or `_`), whitespace runs, and every other character alone.
pub fn tokenize(text: &str) -> Vec<&str> {
    #[derive(PartialEq)]
    enum Class {
        Word,
        Space,
        Other,
    }
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            Class::Word
        } else if c.is_whitespace() {
            Class::Space
        } else {
            Class::Other
        }
    };
    let mut tokens = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let k = class(c);
        let joins_next = |next: Option<&(usize, char)>| {
            k != Class::Other && next.is_some_and(|&(_, n)| class(n) == k)
        };
        if !joins_next(chars.peek()) {
            tokens.push(&text[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    tokens
}

fn both(a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter().zip(b).map(|(&x, &y)| x && y).collect()
}

fn unmasked<'t>(tokens: &[&'t str], mask: &[bool]) -> Vec<&'t str> {
    tokens
        .iter()
        .zip(mask)
        .filter(|&(_, &m)| !m)
        .map(|(&t, _)| t)
        .collect()
}

/// Which tokens of `a` and of `b` lie on one longest common subsequence: the common
/// prefix and suffix, then a full table over the middle, walked back from the end taking
/// equal tokens, else dropping from `a` when that loses nothing (the reference's ties).
fn lcs_masks(a: &[&str], b: &[&str]) -> (Vec<bool>, Vec<bool>) {
    if a.is_empty() || b.is_empty() || a == b {
        let on = a == b && !a.is_empty();
        return (vec![on; a.len()], vec![on; b.len()]);
    }
    let (mut in_a, mut in_b) = (vec![false; a.len()], vec![false; b.len()]);
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    for k in 0..pre {
        (in_a[k], in_b[k]) = (true, true);
    }
    for k in 1..=suf {
        (in_a[a.len() - k], in_b[b.len() - k]) = (true, true);
    }
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    if am.is_empty() || bm.is_empty() {
        return (in_a, in_b);
    }
    // table[i * w + j] = LCS length of am[..i] and bm[..j].
    let w = bm.len() + 1;
    let mut table = vec![0u32; (am.len() + 1) * w];
    for i in 1..=am.len() {
        for j in 1..=bm.len() {
            table[i * w + j] = if am[i - 1] == bm[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let (mut i, mut j) = (am.len(), bm.len());
    while i > 0 && j > 0 {
        if am[i - 1] == bm[j - 1] {
            (in_a[pre + i - 1], in_b[pre + j - 1]) = (true, true);
            (i, j) = (i - 1, j - 1);
        } else if table[(i - 1) * w + j] >= table[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    (in_a, in_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_words_space_runs_and_single_punctuation() {
        assert_eq!(
            tokenize("foo_bar12  (x)é\n\n"),
            ["foo_bar12", "  ", "(", "x", ")", "é", "\n\n"]
        );
        assert_eq!(tokenize("a..b"), ["a", ".", ".", "b"]);
    }

    #[test]
    fn masks_break_ties_by_dropping_from_the_first() {
        assert_eq!(
            lcs_masks(&["a", "b", "c", "d", "e"], &["a", "c", "e"]).0,
            [true, false, true, false, true]
        );
        assert_eq!(
            lcs_masks(&["x", "y"], &["y", "x"]),
            (vec![true, false], vec![false, true])
        );
    }

    #[test]
    fn prediction_equal_to_final_keeps_everything() {
        let k = kept_rate("old", "new", "new");
        assert_eq!((k.kept_rate, k.kept_chars), (1.0, 3));
        assert_eq!(kept_rate("old", "old", "new").kept_rate, 0.0);
    }
}
