//! Sentence BLEU: Historian's smoothed BLEU-4 and the NLTK, sacrebleu and
//! tensorflow-nmt variants, plus the tokenisers they rely on.
//!
//! One n-gram core ([`BleuStats`]) feeds every variant; the variants differ only in
//! reference length, smoothing, early exits and scale (see `docs/metrics.md` §BLEU).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::LazyLock;

use regex::Regex;

use super::ngram::{count_ngrams, ngram_total};

/// `sys.float_info.min`, the ε that Historian's BLEU adds inside its logarithms.
const PY_FLOAT_MIN: f64 = f64::MIN_POSITIVE;

/// Errors of BLEU variants whose reference implementations raise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BleuError {
    /// NLTK method 6 asserts a non-zero trigram precision.
    #[error("nltk smoothing method 6 needs a non-zero trigram precision")]
    Method6NeedsTrigrams,
    /// tensorflow-nmt `compute_bleu` divides by both lengths.
    #[error("nmt compute_bleu is undefined for an empty hypothesis or reference")]
    EmptySegment,
    /// At least one reference is required.
    #[error("at least one reference is required")]
    NoReference,
}

/// Python's `str.isspace` (Unicode White_Space plus the ASCII separators U+001C–U+001F).
pub(crate) fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `\w` on `str`: alphanumeric or `_` (Rust's Unicode tables; see docs).
fn is_python_word(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Python's `str.split()` without arguments.
pub(crate) fn python_split(s: &str) -> Vec<String> {
    s.split(is_python_space)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Python's `re.findall(r"[\w]+|[^\s\w]", s)`, joined by single spaces.
fn word_runs_and_single_punct(s: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in s.char_indices() {
        if is_python_word(c) {
            start.get_or_insert(i);
            continue;
        }
        if let Some(st) = start.take() {
            out.push(&s[st..i]);
        }
        if !is_python_space(c) {
            out.push(&s[i..i + c.len_utf8()]);
        }
    }
    if let Some(st) = start {
        out.push(&s[st..]);
    }
    out.join(" ")
}

/// Characters the first MOSES/NIST rule pads with spaces:
/// `{ | } ~ [ \ ] ^ _ `` space ! " # $ % & ( ) * + : ; < = > ? @ /`.
fn is_padded_punct(c: char) -> bool {
    matches!(c, '\x7B'..='\x7E' | '\x5B'..='\x60' | '\x20'..='\x26' | '\x28'..='\x2B' | '\x3A'..='\x40' | '/')
}

/// The rules for `.`, `,` and `-`, applied in order as `re.sub` does (leftmost,
/// non-overlapping); each runs only when its trigger character occurs (same result, less work).
static NUMBER_RULES: LazyLock<[(Regex, &'static str, &'static [char]); 3]> = LazyLock::new(|| {
    [
        // period and comma unless preceded by a digit
        (
            Regex::new(r"([^0-9])([\.,])").expect("valid"),
            "${1} ${2} ",
            &['.', ','],
        ),
        // period and comma unless followed by a digit
        (
            Regex::new(r"([\.,])([^0-9])").expect("valid"),
            " ${1} ${2}",
            &['.', ','],
        ),
        // dash after a digit
        (
            Regex::new(r"([0-9])(-)").expect("valid"),
            "${1} ${2} ",
            &['-'],
        ),
    ]
});

fn apply_punct_rules(s: String) -> String {
    // Rule 1 (a character class replaced by " c ") as a single pass without a regex.
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if is_padded_punct(c) {
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    let mut s = out;
    for (re, rep, trigger) in NUMBER_RULES.iter() {
        if !s.contains(*trigger) {
            continue;
        }
        if let std::borrow::Cow::Owned(o) = re.replace_all(&s, *rep) {
            s = o;
        }
    }
    s
}

/// The MOSES/NIST `normalize` of CodeXGLUE's `bleu.py` (lowercasing, punctuation split).
pub fn nist_tokens(s: &str) -> Vec<String> {
    let s = s
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    // xml.sax.saxutils.unescape order: &lt; &gt; then &quot; then &amp; last.
    let s = s
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let s = format!(" {s} ").to_lowercase();
    python_split(&apply_punct_rules(s))
}

/// Historian's BLEU tokens: strip, lowercase, `[\w]+|[^\s\w]` runs, then [`nist_tokens`].
pub fn historian_tokens(text: &str) -> Vec<String> {
    let lowered = text.trim_matches(is_python_space).to_lowercase();
    nist_tokens(&word_runs_and_single_punct(&lowered))
}

/// sacrebleu's `13a` tokeniser (case preserved).
pub fn tokenize_13a(line: &str) -> Vec<String> {
    let mut s = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if s.contains('&') {
        s = s
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    python_split(&apply_punct_rules(format!(" {s} ")))
}

/// NLTK's `wordpunct_tokenize`: `\w+|[^\w\s]+`.
pub fn wordpunct_tokens(s: &str) -> Vec<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Kind {
        Word,
        Punct,
        Space,
    }
    let kind = |c: char| {
        if is_python_word(c) {
            Kind::Word
        } else if is_python_space(c) {
            Kind::Space
        } else {
            Kind::Punct
        }
    };
    let mut out = Vec::new();
    let mut cur: Option<(usize, Kind)> = None;
    for (i, c) in s.char_indices() {
        let k = kind(c);
        match cur {
            Some((_, ck)) if ck == k => {}
            Some((st, ck)) => {
                if ck != Kind::Space {
                    out.push(s[st..i].to_owned());
                }
                cur = Some((i, k));
            }
            None => cur = Some((i, k)),
        }
    }
    if let Some((st, ck)) = cur {
        if ck != Kind::Space {
            out.push(s[st..].to_owned());
        }
    }
    out
}

/// Clipped n-gram statistics of one hypothesis against its references, n = 1..=max_n.
#[derive(Debug, Clone, PartialEq)]
pub struct BleuStats {
    /// Clipped matches per order (index 0 = unigrams).
    pub matches: Vec<u64>,
    /// Hypothesis n-grams per order, `max(|hyp| − n + 1, 0)`.
    pub totals: Vec<u64>,
    /// Hypothesis length in tokens.
    pub hyp_len: usize,
    /// Every reference length in tokens.
    pub ref_lens: Vec<usize>,
}

impl BleuStats {
    /// Counts matches clipped by the maximum count over references.
    pub fn new<T: Eq + Hash, R: AsRef<[T]>>(hyp: &[T], refs: &[R], max_n: usize) -> BleuStats {
        let mut matches = Vec::with_capacity(max_n);
        let mut totals = Vec::with_capacity(max_n);
        for n in 1..=max_n {
            let h = count_ngrams(hyp, n);
            let mut max_ref: HashMap<&[T], u64> = HashMap::new();
            for r in refs {
                for (g, c) in count_ngrams(r.as_ref(), n).iter() {
                    let e = max_ref.entry(g).or_insert(0);
                    *e = (*e).max(c);
                }
            }
            let m: u64 = h
                .iter()
                .map(|(g, c)| c.min(max_ref.get(g).copied().unwrap_or(0)))
                .sum();
            matches.push(m);
            totals.push(ngram_total(hyp.len(), n));
        }
        BleuStats {
            matches,
            totals,
            hyp_len: hyp.len(),
            ref_lens: refs.iter().map(|r| r.as_ref().len()).collect(),
        }
    }

    /// The closest reference length, ties to the shorter (NLTK, sacrebleu).
    pub fn closest_ref_len(&self) -> usize {
        let c = self.hyp_len as i64;
        self.ref_lens
            .iter()
            .copied()
            .min_by_key(|&r| ((r as i64 - c).abs(), r))
            .unwrap_or(0)
    }

    /// The shortest reference length (Historian, tensorflow-nmt).
    pub fn shortest_ref_len(&self) -> usize {
        self.ref_lens.iter().copied().min().unwrap_or(0)
    }
}

/// CodeXGLUE/MOSES smoothed sentence BLEU-4 over given tokens, on the 0–100 scale.
///
/// Add-one smoothing for n ≥ 2, ε = `sys.float_info.min` inside the logarithms,
/// shortest reference length and the `min(0, 1 − (r+1)/(c+1))` brevity penalty.
pub fn smooth_bleu<T: Eq + Hash, R: AsRef<[T]>>(hyp: &[T], refs: &[R]) -> f64 {
    let st = BleuStats::new(hyp, refs, 4);
    let mut log_sum = 0.0;
    for k in 0..4 {
        let s = if k == 0 { 0.0 } else { 1.0 };
        log_sum += (st.matches[k] as f64 + s + PY_FLOAT_MIN).ln()
            - (st.totals[k] as f64 + s + PY_FLOAT_MIN).ln();
    }
    let log_sum = log_sum / 4.0;
    let r = st.shortest_ref_len() as f64;
    let c = st.hyp_len as f64;
    let bp = f64::min(0.0, 1.0 - (r + 1.0) / (c + 1.0));
    100.0 * (log_sum + bp).exp()
}

/// Historian's `get_bleu(gold, prediction)`: BLEU-4 on [`historian_tokens`], 0–100.
pub fn historian_bleu(prediction: &str, reference: &str) -> f64 {
    let hyp = historian_tokens(prediction);
    let reference = historian_tokens(reference);
    smooth_bleu(&hyp, &[reference])
}

/// NLTK smoothing functions (`SmoothingFunction(epsilon=0.1, alpha=5, k=5)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NltkSmoothing {
    /// No smoothing: zero precisions become `sys.float_info.min`.
    Method0,
    /// Zero matches become `0.1 / l`.
    Method1,
    /// Lin & Och add-one for n ≥ 2.
    Method2,
    /// NIST geometric: the k-th zero order gets `1 / (2^k · l)`.
    Method3,
    /// Length-aware geometric smoothing (`k = 5`).
    Method4,
    /// Average with the neighbouring orders.
    Method5,
    /// Interpolation with the prior `p_{n−1}² / p_{n−2}` (`alpha = 5`).
    Method6,
    /// Method 4 then method 5.
    Method7,
}

impl NltkSmoothing {
    /// All methods, 0 through 7.
    pub const ALL: [NltkSmoothing; 8] = [
        Self::Method0,
        Self::Method1,
        Self::Method2,
        Self::Method3,
        Self::Method4,
        Self::Method5,
        Self::Method6,
        Self::Method7,
    ];
}

/// An unnormalised NLTK `Fraction(m, max(1, l))` or a float after smoothing.
#[derive(Clone, Copy, Debug)]
struct Prec {
    num: f64,
    den: f64,
}

impl Prec {
    fn value(self) -> f64 {
        self.num / self.den
    }
    fn float(v: f64) -> Prec {
        Prec { num: v, den: 1.0 }
    }
}

fn nltk_method4(p: &mut [Prec], hyp_len: usize) {
    let mut inc = 1;
    for pi in p.iter_mut() {
        if pi.num == 0.0 && hyp_len > 1 {
            let numerator = 1.0 / (2f64.powi(inc) * 5.0 / (hyp_len as f64).ln());
            *pi = Prec::float(numerator / pi.den);
            inc += 1;
        }
    }
}

fn nltk_method5(p: &mut [Prec], p5: Prec) {
    let original: Vec<f64> = p.iter().map(|x| x.value()).collect();
    let mut prev = original[0] + 1.0;
    for i in 0..p.len() {
        let next = if i + 1 < p.len() {
            original[i + 1]
        } else {
            p5.value()
        };
        let v = (prev + original[i] + next) / 3.0;
        p[i] = Prec::float(v);
        prev = v;
    }
}

/// NLTK `sentence_bleu(refs, hyp, smoothing_function=method)` (nltk 3.10.4, weights ¼), 0–1.
pub fn nltk_sentence_bleu<T: Eq + Hash, R: AsRef<[T]>>(
    hyp: &[T],
    refs: &[R],
    method: NltkSmoothing,
) -> Result<f64, BleuError> {
    if refs.is_empty() {
        return Err(BleuError::NoReference);
    }
    let st = BleuStats::new(hyp, refs, 5);
    let mut p: Vec<Prec> = (0..4)
        .map(|k| Prec {
            num: st.matches[k] as f64,
            den: st.totals[k].max(1) as f64,
        })
        .collect();
    let p5 = Prec {
        num: st.matches[4] as f64,
        den: st.totals[4].max(1) as f64,
    };
    let c = st.hyp_len;
    let r = st.closest_ref_len();
    let bp = if c > r {
        1.0
    } else if c == 0 {
        0.0
    } else {
        (1.0 - r as f64 / c as f64).exp()
    };
    if st.matches[0] == 0 {
        return Ok(0.0);
    }
    match method {
        NltkSmoothing::Method0 => {
            for pi in p.iter_mut() {
                if pi.num == 0.0 {
                    *pi = Prec::float(PY_FLOAT_MIN);
                }
            }
        }
        NltkSmoothing::Method1 => {
            for pi in p.iter_mut() {
                if pi.num == 0.0 {
                    *pi = Prec::float((pi.num + 0.1) / pi.den);
                }
            }
        }
        NltkSmoothing::Method2 => {
            for pi in p.iter_mut().skip(1) {
                *pi = Prec {
                    num: pi.num + 1.0,
                    den: pi.den + 1.0,
                };
            }
        }
        NltkSmoothing::Method3 => {
            let mut inc = 1;
            for pi in p.iter_mut() {
                if pi.num == 0.0 {
                    *pi = Prec::float(1.0 / (2f64.powi(inc) * pi.den));
                    inc += 1;
                }
            }
        }
        NltkSmoothing::Method4 => nltk_method4(&mut p, c),
        NltkSmoothing::Method5 => nltk_method5(&mut p, p5),
        NltkSmoothing::Method6 => {
            if p[2].num == 0.0 {
                return Err(BleuError::Method6NeedsTrigrams);
            }
            for i in 2..4 {
                let m = p[i].num;
                let prior = if p[i - 2].value() == 0.0 {
                    0.0
                } else {
                    p[i - 1].value().powi(2) / p[i - 2].value()
                };
                let l = ngram_total(c, i + 1) as f64;
                p[i] = Prec::float((m + 5.0 * prior) / (l + 5.0));
            }
        }
        NltkSmoothing::Method7 => {
            nltk_method4(&mut p, c);
            nltk_method5(&mut p, p5);
        }
    }
    let s: f64 = p
        .iter()
        .map(|x| x.value())
        .filter(|&v| v > 0.0)
        .map(|v| 0.25 * v.ln())
        .sum();
    Ok(bp * s.exp())
}

/// sacrebleu's smoothing methods.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SacreSmoothing {
    /// `exp` (default): the k-th zero-match order gets `100 / (2^k · l)`.
    Exp,
    /// `floor`: zero-match orders get `100 · value / l` (default value 0.1).
    Floor(f64),
    /// `add-k`: add `k` (default 1) to matches and totals for n > 1.
    AddK(f64),
    /// `none`: zero precision (log floored to −9999999999).
    None,
}

/// sacrebleu `sentence_bleu` on pre-tokenised input (tokenize='none'), 0–100 scale.
pub fn sacrebleu_sentence_bleu_tokens<T: Eq + Hash, R: AsRef<[T]>>(
    hyp: &[T],
    refs: &[R],
    smoothing: SacreSmoothing,
    effective_order: bool,
) -> f64 {
    let st = BleuStats::new(hyp, refs, 4);
    let mut correct: Vec<f64> = st.matches.iter().map(|&m| m as f64).collect();
    let mut total: Vec<f64> = st.totals.iter().map(|&t| t as f64).collect();
    let sys_len = st.hyp_len as f64;
    let ref_len = st.closest_ref_len() as f64;
    let mut precisions = [0.0f64; 4];
    if correct.iter().all(|&c| c == 0.0) {
        return 0.0;
    }
    let bp = if sys_len < ref_len {
        if sys_len > 0.0 {
            (1.0 - ref_len / sys_len).exp()
        } else {
            0.0
        }
    } else {
        1.0
    };
    let mut smooth_mteval = 1.0;
    let mut eff_order = 4;
    for n in 1..=4 {
        if let SacreSmoothing::AddK(k) = smoothing {
            if n > 1 {
                correct[n - 1] += k;
                total[n - 1] += k;
            }
        }
        if total[n - 1] == 0.0 {
            break;
        }
        if effective_order {
            eff_order = n;
        }
        if correct[n - 1] == 0.0 {
            match smoothing {
                SacreSmoothing::Exp => {
                    smooth_mteval *= 2.0;
                    precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1]);
                }
                SacreSmoothing::Floor(v) => precisions[n - 1] = 100.0 * v / total[n - 1],
                _ => {}
            }
        } else {
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1];
        }
    }
    let my_log = |x: f64| if x == 0.0 { -9_999_999_999.0 } else { x.ln() };
    let s: f64 = precisions[..eff_order].iter().map(|&p| my_log(p)).sum();
    bp * (s / eff_order as f64).exp()
}

/// sacrebleu 2.6 `sentence_bleu(hyp, refs)` defaults: `13a`, `exp`, effective order, 0–100.
pub fn sacrebleu_sentence_bleu(hyp: &str, refs: &[&str]) -> f64 {
    // sacrebleu's `_preprocess_segment` right-strips every segment before tokenising.
    let prep = |s: &str| tokenize_13a(s.trim_end_matches(is_python_space));
    let h = prep(hyp);
    let r: Vec<Vec<String>> = refs.iter().map(|r| prep(r)).collect();
    sacrebleu_sentence_bleu_tokens(&h, &r, SacreSmoothing::Exp, true)
}

/// tensorflow-nmt `compute_bleu` on one segment (CodeXGLUE `_bleu`, HF `evaluate` "bleu"), 0–1.
pub fn nmt_bleu<T: Eq + Hash, R: AsRef<[T]>>(
    hyp: &[T],
    refs: &[R],
    smooth: bool,
) -> Result<f64, BleuError> {
    if refs.is_empty() {
        return Err(BleuError::NoReference);
    }
    let st = BleuStats::new(hyp, refs, 4);
    // nmt merges references with `|=` (max count), exactly the clipping of BleuStats.
    let precisions: Vec<f64> = (0..4)
        .map(|k| {
            if smooth {
                (st.matches[k] as f64 + 1.0) / (st.totals[k] as f64 + 1.0)
            } else if st.totals[k] > 0 {
                st.matches[k] as f64 / st.totals[k] as f64
            } else {
                0.0
            }
        })
        .collect();
    let geo = if precisions.iter().cloned().fold(f64::INFINITY, f64::min) > 0.0 {
        precisions.iter().map(|p| 0.25 * p.ln()).sum::<f64>().exp()
    } else {
        0.0
    };
    let r = st.shortest_ref_len();
    let c = st.hyp_len;
    if r == 0 || c == 0 {
        return Err(BleuError::EmptySegment);
    }
    let ratio = c as f64 / r as f64;
    let bp = if ratio > 1.0 {
        1.0
    } else {
        (1.0 - 1.0 / ratio).exp()
    };
    Ok(geo * bp)
}

/// How text becomes BLEU tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BleuTokenizer {
    /// [`historian_tokens`] (Historian).
    Historian,
    /// [`nist_tokens`] (CodeXGLUE's MOSES/NIST normalisation).
    Nist,
    /// [`tokenize_13a`] (sacrebleu's default, HF evaluate).
    Thirteen,
    /// [`wordpunct_tokens`] (NLTK's `wordpunct_tokenize`).
    Wordpunct,
    /// Python's `str.split()`: the text is already tokenised.
    Whitespace,
}

impl BleuTokenizer {
    /// The tokenizer's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Historian => "historian",
            Self::Nist => "nist",
            Self::Thirteen => "13a",
            Self::Wordpunct => "wordpunct",
            Self::Whitespace => "whitespace",
        }
    }

    /// The tokens of `text`.
    pub fn tokens(self, text: &str) -> Vec<String> {
        match self {
            Self::Historian => historian_tokens(text),
            Self::Nist => nist_tokens(text),
            Self::Thirteen => tokenize_13a(text),
            Self::Wordpunct => wordpunct_tokens(text),
            Self::Whitespace => python_split(text),
        }
    }
}

/// One BLEU formula of a reference implementation, with its smoothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BleuFormula {
    /// CodeXGLUE/MOSES smoothed BLEU-4 ([`smooth_bleu`]), 0–100.
    Smooth,
    /// NLTK `sentence_bleu` with a smoothing method, 0–1.
    Nltk(NltkSmoothing),
    /// sacrebleu `sentence_bleu` with a smoothing and effective order on or off, 0–100.
    Sacrebleu {
        /// Smoothing method.
        smoothing: SacreSmoothing,
        /// `use_effective_order` (sacrebleu's sentence default: on).
        effective_order: bool,
    },
    /// tensorflow-nmt `compute_bleu`, add-one smoothed or not, 0–1.
    Nmt {
        /// `smooth=True`.
        smooth: bool,
    },
}

impl BleuFormula {
    /// The scale of this formula's scores (1 or 100), as its reference prints them.
    pub fn scale(self) -> u32 {
        match self {
            Self::Smooth | Self::Sacrebleu { .. } => 100,
            Self::Nltk(_) | Self::Nmt { .. } => 1,
        }
    }
}

/// A fully specified sentence BLEU: tokenizer and formula.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BleuSpec {
    /// How hypothesis and references are tokenised.
    pub tokenizer: BleuTokenizer,
    /// The formula and its smoothing.
    pub formula: BleuFormula,
}

impl BleuSpec {
    /// BLEU of `hypothesis` against every reference in `references` (multi-reference
    /// clipping and reference length as the formula's reference implementation does).
    pub fn score(&self, hypothesis: &str, references: &[&str]) -> Result<f64, BleuError> {
        if references.is_empty() {
            return Err(BleuError::NoReference);
        }
        // sacrebleu right-strips every segment before tokenising (`_preprocess_segment`).
        let prep = |s: &str| match self.formula {
            BleuFormula::Sacrebleu { .. } => {
                self.tokenizer.tokens(s.trim_end_matches(is_python_space))
            }
            _ => self.tokenizer.tokens(s),
        };
        let hyp = prep(hypothesis);
        let refs: Vec<Vec<String>> = references.iter().map(|r| prep(r)).collect();
        match self.formula {
            BleuFormula::Smooth => Ok(smooth_bleu(&hyp, &refs)),
            BleuFormula::Nltk(method) => nltk_sentence_bleu(&hyp, &refs, method),
            BleuFormula::Sacrebleu {
                smoothing,
                effective_order,
            } => Ok(sacrebleu_sentence_bleu_tokens(
                &hyp,
                &refs,
                smoothing,
                effective_order,
            )),
            BleuFormula::Nmt { smooth } => nmt_bleu(&hyp, &refs, smooth),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn historian_tokenisation_splits_underscore_and_folds_case() {
        assert_eq!(
            historian_tokens("Foo_Bar(a,b)"),
            ["foo", "_", "bar", "(", "a", ",", "b", ")"]
        );
        assert_eq!(historian_tokens("  x=1\n"), ["x", "=", "1"]);
        // Python's \w covers letters of every script; pinned so a table change shows up.
        assert_eq!(historian_tokens("é日本x"), ["é日本x"]);
    }

    #[test]
    fn historian_measured_values() {
        assert_eq!(historian_bleu("", ""), 100.0);
        assert!((historian_bleu("a b", "a c") - 70.71067811865476).abs() < 1e-9);
        assert!((historian_bleu("&amp;", "&") - 48.55).abs() < 0.01);
    }

    #[test]
    fn wordpunct_and_13a() {
        assert_eq!(wordpunct_tokens("x = a+b;"), ["x", "=", "a", "+", "b", ";"]);
        assert_eq!(wordpunct_tokens("a->b"), ["a", "->", "b"]);
        assert_eq!(
            tokenize_13a("Hello, world. 3.5"),
            ["Hello", ",", "world", ".", "3.5"]
        );
    }
}
