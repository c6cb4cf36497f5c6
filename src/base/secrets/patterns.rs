//! The secret patterns (private keys, cloud and chat tokens) masked in everything a
//! recording stores (through `record::privacy`) and everything nextedit prints:
//! byte-length preserving, so stored offsets stay valid.

use std::sync::LazyLock;

use regex::bytes::Regex;

struct SecretPattern {
    regex: Regex,
    /// Capture group holding the secret (0 = whole match).
    group: usize,
}

static SECRET_PATTERNS: LazyLock<Vec<SecretPattern>> = LazyLock::new(|| {
    let p = |re: &str, group| SecretPattern {
        regex: Regex::new(re).expect("valid secret regex"),
        group,
    };
    vec![
        // PGP private key blocks: the armored body between the markers.
        p(
            r"-----BEGIN PGP PRIVATE KEY BLOCK-----((?s:.)+?)-----END PGP PRIVATE KEY BLOCK-----",
            1,
        ),
        // PEM private keys: the body between the markers, in text or JSON-escaped text.
        p(
            r"-----BEGIN[A-Z ]{0,40} PRIVATE KEY-----((?s:.)+?)-----END[A-Z ]{0,40} PRIVATE KEY-----",
            1,
        ),
        p(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", 0),
        p(
            r#"(?i)aws_?secret_?access_?key\W{0,6}([A-Za-z0-9/+=]{40})"#,
            1,
        ),
        p(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", 0),
        p(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", 0),
        p(r"\bxox[abposr]-[A-Za-z0-9-]{10,250}\b", 0),
        p(
            r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,200}",
            0,
        ),
    ]
});

/// One pass over all patterns at once: most stored strings hold no secret, and
/// checking them costs one scan instead of one per pattern.
static ANY_SECRET: LazyLock<regex::bytes::RegexSet> = LazyLock::new(|| {
    regex::bytes::RegexSet::new(SECRET_PATTERNS.iter().map(|p| p.regex.as_str()))
        .expect("valid secret regexes")
});

/// Masks obvious secrets in place with `*`, keeping the byte length (so stored
/// offsets stay valid) and line breaks; returns how many secrets were masked.
pub fn redact_secrets(bytes: &mut [u8]) -> usize {
    let mut count = 0;
    let matched = ANY_SECRET.matches(bytes);
    if !matched.matched_any() {
        return 0;
    }
    for pattern in matched.iter().map(|i| &SECRET_PATTERNS[i]) {
        let spans: Vec<(usize, usize)> = pattern
            .regex
            .captures_iter(bytes)
            .filter_map(|c| c.get(pattern.group))
            .map(|m| (m.start(), m.end()))
            .collect();
        for (start, end) in spans {
            count += 1;
            let mut escaped = false;
            for b in &mut bytes[start..end] {
                // Keep line structure: raw newlines and JSON escapes like `\n`.
                if escaped {
                    escaped = false;
                    continue;
                }
                match *b {
                    b'\n' | b'\r' => {}
                    b'\\' => escaped = true,
                    _ => *b = b'*',
                }
            }
        }
    }
    count
}

/// [`redact_secrets`] on a string (secrets are ASCII, so the result stays UTF-8).
pub fn redact_text(text: &str) -> (String, usize) {
    let mut bytes = text.as_bytes().to_vec();
    let n = redact_secrets(&mut bytes);
    if n == 0 {
        return (text.to_string(), 0);
    }
    // Only ASCII bytes inside ASCII-only matches were replaced by ASCII.
    (String::from_utf8(bytes).expect("masking keeps UTF-8"), n)
}

/// Command-line options whose value is a secret (`--token=x`, `--api-key x`, `-p x` is not guessed).
static SECRET_OPTION: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)^-{1,2}[a-z0-9_-]*(token|secret|passw(or)?d|api[_-]?key|auth|credential|private[_-]?key)[a-z0-9_-]*$")
        .expect("valid option regex")
});

/// A command line as it may be stored: values of secret-looking options
/// (`--token=…`, `--password …`, `API_KEY=…`) become `*` of the same length, and
/// every argument is masked like any stored text.
pub fn mask_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut mask_next = false;
    for arg in argv {
        let (masked, _) = redact_text(arg);
        if std::mem::take(&mut mask_next) {
            out.push(stars(&masked));
            continue;
        }
        if let Some((name, value)) = masked.split_once('=') {
            let bare = name.trim_start_matches('-');
            if SECRET_OPTION.is_match(&format!("--{bare}")) {
                out.push(format!("{name}={}", stars(value)));
                continue;
            }
        } else if masked.starts_with('-') && SECRET_OPTION.is_match(&masked) {
            mask_next = true;
        }
        out.push(masked);
    }
    out
}

fn stars(value: &str) -> String {
    "*".repeat(value.chars().count())
}

/// [`redact_text`] for a value that is stored as is (names, URIs, versions): the
/// masked text only.
pub fn mask(text: &str) -> std::borrow::Cow<'_, str> {
    if !ANY_SECRET.is_match(text.as_bytes()) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(redact_text(text).0)
}
