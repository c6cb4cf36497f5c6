//! DiffBLEU (NoFunEval flavour): BLEU of the predicted diff against the reference diff.
//!
//! `DiffBLEU(O, A, B) = NLTK sentence BLEU (method 1) of wordpunct(diff(O, B)) against
//! [wordpunct(diff(O, A))]`, where `diff` is the hunk text of `git diff -U0
//! --ignore-all-space --ignore-blank-lines` (headers and hunk headings included).
//! nextedit renders that text itself (no `git` process): LCS alignment of lines
//! compared without whitespace, blank-line-only hunks dropped, git's default funcname
//! heading (the last line above the hunk starting with a letter, `_` or `$`, cut to
//! 80 bytes). Git's Myers/indent heuristics can group ambiguous hunks differently; the
//! shared vectors agree exactly.

use super::bleu::{NltkSmoothing, nltk_sentence_bleu, wordpunct_tokens};
use super::lcs::lcs_pairs;

/// The `-U0` hunks of the line diff from `old` to `new`, as git prints them after the headers.
pub fn unified_diff_u0(old: &str, new: &str) -> String {
    let o: Vec<&str> = old.lines().collect();
    let n: Vec<&str> = new.lines().collect();
    let key = |l: &&str| -> String { l.chars().filter(|c| !c.is_whitespace()).collect() };
    let ok: Vec<String> = o.iter().map(key).collect();
    let nk: Vec<String> = n.iter().map(key).collect();
    let mut pairs = lcs_pairs(&ok, &nk);
    pairs.push((o.len(), n.len()));
    let mut out = String::new();
    let (mut i, mut j) = (0usize, 0usize);
    for (pi, pj) in pairs {
        if pi > i || pj > j {
            let del = &o[i..pi];
            let ins = &n[j..pj];
            let blank_only = del.iter().chain(ins.iter()).all(|l| l.trim().is_empty());
            if !blank_only {
                out.push_str(&hunk_header(&o, i, del.len(), j, ins.len()));
                for l in del {
                    out.push('-');
                    out.push_str(l);
                    out.push('\n');
                }
                for l in ins {
                    out.push('+');
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        i = pi + 1;
        j = pj + 1;
    }
    out
}

fn range_text(start: usize, count: usize) -> String {
    match count {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{count}", start + 1),
    }
}

fn hunk_header(old: &[&str], i: usize, del: usize, j: usize, ins: usize) -> String {
    let heading = old[..i]
        .iter()
        .rev()
        .find(|l| {
            l.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        })
        .map(|l| {
            let l = l.trim_end();
            let mut cut = l.len().min(80);
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            format!(" {}", &l[..cut])
        })
        .unwrap_or_default();
    format!(
        "@@ -{} +{} @@{heading}\n",
        range_text(i, del),
        range_text(j, ins)
    )
}

/// DiffBLEU of prediction `b` against reference `a`, both revisions of `o`, 0–1.
///
/// An empty prediction (only whitespace) scores 0, as in NoFunEval.
pub fn diff_bleu(o: &str, a: &str, b: &str) -> f64 {
    if b.trim().is_empty() {
        return 0.0;
    }
    let gold = wordpunct_tokens(&unified_diff_u0(o, a));
    let pred = wordpunct_tokens(&unified_diff_u0(o, b));
    nltk_sentence_bleu(&pred, &[gold], NltkSmoothing::Method1).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: &str =
        "def add(a, b):\n    x = a - b\n    return x\n\ndef sub(a, b):\n    return a - b\n";

    #[test]
    fn git_like_hunks() {
        let a = O.replace("x = a - b", "x = a + b");
        assert_eq!(
            unified_diff_u0(O, &a),
            "@@ -2 +2 @@ def add(a, b):\n-    x = a - b\n+    x = a + b\n"
        );
    }

    #[test]
    fn nofuneval_vectors() {
        let a = O.replace("x = a - b", "x = a + b");
        assert_eq!(diff_bleu(O, &a, &a), 1.0);
        let commuted = O.replace("x = a - b", "x = b + a");
        assert!((diff_bleu(O, &a, &commuted) - 0.9003477491896975).abs() < 1e-12);
        let wrong = O.replace("    return a - b", "    return a + b");
        assert!((diff_bleu(O, &a, &wrong) - 0.37652017880472516).abs() < 1e-12);
        assert_eq!(diff_bleu(O, &a, O), 0.0);
    }
}
