//! DiffBLEU: BLEU of the predicted diff against the reference diff, in the NoFunEval
//! flavour ([`diff_bleu`], the default) and the CodePlan flavour ([`diff_bleu_codeplan`]).
//!
//! `DiffBLEU(O, A, B) = NLTK sentence BLEU (method 1) of wordpunct(diff(O, B)) against
//! [wordpunct(diff(O, A))]`, where `diff` is the hunk text of `git diff -U0
//! --ignore-all-space --ignore-blank-lines` (headers and hunk headings included).
//! nextedit renders that text itself (no `git` process): LCS alignment of lines
//! compared without whitespace, blank-line-only hunks dropped, git's default funcname
//! heading (the last line above the hunk starting with a letter, `_` or `$`, cut to
//! 80 bytes). Git's Myers/indent heuristics can group ambiguous hunks differently; the
//! shared vectors agree exactly.

use super::bleu::{NltkSmoothing, nltk_sentence_bleu, nmt_bleu, tokenize_13a, wordpunct_tokens};
use super::lcs::lcs_pairs;

/// One change: old lines `[i0, i1)` replaced by new lines `[j0, j1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    i0: usize,
    i1: usize,
    j0: usize,
    j1: usize,
}

/// The changes between `o` and `n` (lines compared through `key`), from one LCS.
fn change_blocks(o: &[&str], n: &[&str], key: impl Fn(&str) -> String) -> Vec<Block> {
    let ok: Vec<String> = o.iter().map(|l| key(l)).collect();
    let nk: Vec<String> = n.iter().map(|l| key(l)).collect();
    let mut pairs = lcs_pairs(&ok, &nk);
    pairs.push((o.len(), n.len()));
    let mut blocks = Vec::new();
    let (mut i, mut j) = (0usize, 0usize);
    for (pi, pj) in pairs {
        if pi > i || pj > j {
            blocks.push(Block {
                i0: i,
                i1: pi,
                j0: j,
                j1: pj,
            });
        }
        i = pi + 1;
        j = pj + 1;
    }
    blocks
}

/// The `-U0` hunks of the line diff from `old` to `new`, as git prints them after the headers.
pub fn unified_diff_u0(old: &str, new: &str) -> String {
    let o: Vec<&str> = old.lines().collect();
    let n: Vec<&str> = new.lines().collect();
    let no_space = |l: &str| -> String { l.chars().filter(|c| !c.is_whitespace()).collect() };
    let mut out = String::new();
    for b in change_blocks(&o, &n, no_space) {
        let del = &o[b.i0..b.i1];
        let ins = &n[b.j0..b.j1];
        // --ignore-blank-lines: hunks that only add or remove blank lines are dropped.
        if del.iter().chain(ins).all(|l| l.trim().is_empty()) {
            continue;
        }
        out.push_str(&hunk_header(&o, b.i0, del.len(), b.j0, ins.len()));
        push_lines(&mut out, '-', del);
        push_lines(&mut out, '+', ins);
    }
    out
}

fn push_lines(out: &mut String, mark: char, lines: &[&str]) {
    for l in lines {
        out.push(mark);
        out.push_str(l);
        out.push('\n');
    }
}

/// git's default unified diff (`-U3`) from the first `@@` on: exact line comparison,
/// changes closer than 2 × 3 lines share a hunk.
pub fn unified_diff_u3(old: &str, new: &str) -> String {
    const CONTEXT: usize = 3;
    let o: Vec<&str> = old.lines().collect();
    let n: Vec<&str> = new.lines().collect();
    let blocks = change_blocks(&o, &n, str::to_owned);
    let mut out = String::new();
    let mut k = 0;
    while k < blocks.len() {
        let mut last = k;
        while last + 1 < blocks.len() && blocks[last + 1].i0 - blocks[last].i1 <= 2 * CONTEXT {
            last += 1;
        }
        let (first, end) = (blocks[k], blocks[last]);
        let old_start = first.i0.saturating_sub(CONTEXT);
        let old_end = (end.i1 + CONTEXT).min(o.len());
        let new_start = first.j0 - (first.i0 - old_start);
        let new_end = end.j1 + (old_end - end.i1);
        out.push_str(&hunk_header(
            &o,
            old_start,
            old_end - old_start,
            new_start,
            new_end - new_start,
        ));
        let mut pos = old_start;
        for b in &blocks[k..=last] {
            push_lines(&mut out, ' ', &o[pos..b.i0]);
            push_lines(&mut out, '-', &o[b.i0..b.i1]);
            push_lines(&mut out, '+', &n[b.j0..b.j1]);
            pos = b.i1;
        }
        push_lines(&mut out, ' ', &o[pos..old_end]);
        k = last + 1;
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

/// DiffBLEU as CodePlan computes it (the ES paper's comparison): HF `evaluate` "bleu"
/// (tensorflow-nmt, 13a tokens, no smoothing) of the `git diff` (3 context lines, from the
/// first `@@`) O→B against O→A. `None` when either diff is empty (CodePlan skips the file).
pub fn diff_bleu_codeplan(o: &str, a: &str, b: &str) -> Option<f64> {
    let gold = unified_diff_u3(o, a);
    let pred = unified_diff_u3(o, b);
    if gold.is_empty() || pred.is_empty() {
        return None;
    }
    nmt_bleu(&tokenize_13a(&pred), &[tokenize_13a(&gold)], false).ok()
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

    #[test]
    fn codeplan_vectors() {
        let a = O.replace("x = a - b", "x = a + b");
        assert_eq!(
            unified_diff_u3(O, &a),
            "@@ -1,5 +1,5 @@\n def add(a, b):\n-    x = a - b\n+    x = a + b\n     return x\n \n def sub(a, b):\n"
        );
        assert_eq!(diff_bleu_codeplan(O, &a, &a), Some(1.0));
        let commuted = O.replace("x = a - b", "x = b + a");
        let got = diff_bleu_codeplan(O, &a, &commuted).unwrap();
        assert!((got - 0.8900101316172414).abs() < 1e-12, "{got}");
        let wrong = O.replace("    return a - b", "    return a + b");
        let got = diff_bleu_codeplan(O, &a, &wrong).unwrap();
        assert!((got - 0.629496576818972).abs() < 1e-12, "{got}");
        assert_eq!(diff_bleu_codeplan(O, &a, O), None);
    }
}
