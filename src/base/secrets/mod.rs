//! The one way nextedit prints or stores a text it did not write (an error message, a
//! server's answer, a test's output): secrets masked and the length capped.
//!
//! Masking ([`mask`]) covers the secret patterns of recordings ([`patterns`]), what
//! messages carry besides (a URL's credentials, a bearer token, an `api_key=` value)
//! and the literal secrets this process holds: the values of its environment variables
//! whose names say they are secret (`OPENAI_API_KEY`, `GITHUB_TOKEN`, …) and every key a
//! suggester read ([`remember`]), so a server that reflects its key in an error, or a
//! test that prints the environment, gets it masked even when it does not look like a
//! key. Masks are `*` of the same length. [`mask_known`] masks only the literals (for
//! model answers, which a cache must replay as they were). [`scrub`] also cuts a text
//! longer than [`MAX_MESSAGE`] bytes (4 KiB), keeping its head and tail around a
//! `… (N bytes cut) …` marker, so a 100 MB input echoed in an error is never printed
//! or stored whole.
//!
//! Applied where errors are made (`CallFailure`), stored (`store::{runs, cache,
//! tasks}`), read back (a database made elsewhere) and printed (the CLI's error line,
//! replay's notes, skipped items).

pub mod patterns;

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use regex::Regex;

/// Most bytes of a message printed or stored.
pub const MAX_MESSAGE: usize = 4096;
/// Of those, the bytes kept from the message's end (its last lines say most).
const TAIL: usize = 1024;
/// Shortest value taken as a literal secret (shorter ones would mask common words).
const MIN_SECRET: usize = 6;

/// Secrets in messages besides privacy's patterns: group 1 is the secret.
static MESSAGE_SECRETS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // A URL's user information: `http://user:KEY@host`, `https://KEY@host`.
        r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s@]+)@",
        // `Authorization: Bearer KEY`, `"Bearer KEY"` (8 characters or more, so prose
        // that names a parameter is left alone).
        r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})",
        // `api_key=KEY`, `"api-key": "KEY"`, `access_token: KEY`, `password=KEY` (not a
        // bare `token:`, which parse errors say of source code).
        r#"(?i)(?:api[_-]?key|(?:access|auth|api)[_-]?token|client[_-]?secret|passw(?:or)?d)["']?\s*[:=]\s*["']?([^\s"',;&}]{8,})"#,
    ]
    .iter()
    .map(|re| Regex::new(re).expect("valid secret regex"))
    .collect()
});

/// Environment variables whose value is a secret, by name.
static SECRET_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(key|token|secret|passw|credential)").expect("valid name regex")
});

/// The literal secrets this process holds: its secret-named environment variables'
/// values, then every key [`remember`] was given.
static LITERALS: LazyLock<RwLock<Vec<String>>> = LazyLock::new(|| {
    let mut literals: Vec<String> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, value)| SECRET_NAME.is_match(name) && looks_like_a_secret(value))
        .map(|(_, value)| value)
        .collect();
    literals.sort();
    literals.dedup();
    RwLock::new(literals)
});

/// Whether an environment variable's value may be a secret: long enough, one word,
/// not a path (`SSH_AUTH_SOCK`-like names hold sockets, not keys).
fn looks_like_a_secret(value: &str) -> bool {
    value.len() >= MIN_SECRET && !value.starts_with('/') && !value.contains(char::is_whitespace)
}

/// Adds `secret` (a key read from the environment or a file) to the literals every
/// later [`mask`] hides; a value shorter than 6 bytes is not kept.
pub fn remember(secret: &str) {
    if secret.len() < MIN_SECRET {
        return;
    }
    let mut literals = LITERALS.write().expect("secrets lock");
    if !literals.iter().any(|s| s == secret) {
        literals.push(secret.to_string());
    }
}

/// `text` with every secret it holds replaced by `*` of the same length.
pub fn mask(text: &str) -> Cow<'_, str> {
    let spans = MESSAGE_SECRETS.iter().flat_map(|regex| {
        regex
            .captures_iter(text)
            .filter_map(|c| c.get(1))
            .map(|m| (m.start(), m.end()))
    });
    let masked = star(text, spans.chain(literal_spans(text)).collect());
    match masked {
        Cow::Borrowed(_) => patterns::mask(text),
        Cow::Owned(masked) => Cow::Owned(patterns::mask(&masked).into_owned()),
    }
}

/// `text` with the literal secrets this process holds masked, and nothing else: for
/// the texts a model answered (code may say `password=` legitimately, and a cached
/// answer must replay as it was), where only a known key is surely a leak.
pub fn mask_known(text: &str) -> Cow<'_, str> {
    star(text, literal_spans(text))
}

/// Where the literal secrets occur in `text`.
fn literal_spans(text: &str) -> Vec<(usize, usize)> {
    let literals = LITERALS.read().expect("secrets lock");
    literals
        .iter()
        .flat_map(|literal| {
            text.match_indices(literal.as_str())
                .map(|(at, _)| (at, at + literal.len()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `text` with the byte spans replaced by `*` (a multi-byte character inside one
/// becomes several stars: still UTF-8).
fn star(text: &str, spans: Vec<(usize, usize)>) -> Cow<'_, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    for (start, end) in spans {
        bytes[start..end].fill(b'*');
    }
    Cow::Owned(String::from_utf8(bytes).expect("spans cover whole characters"))
}

/// [`mask`], then cut to at most [`MAX_MESSAGE`] bytes: the head and the tail with
/// `… (N bytes cut) …` between them.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let masked = mask(text);
    if masked.len() <= MAX_MESSAGE {
        return masked;
    }
    // The marker's digits count too: reserve room for the longest.
    let marker_room = "\n… ( bytes cut) …\n".len() + 20;
    let head_end = floor_char_boundary(&masked, MAX_MESSAGE - TAIL - marker_room);
    let tail_start = ceil_char_boundary(&masked, masked.len() - TAIL);
    let cut = tail_start - head_end;
    Cow::Owned(format!(
        "{}\n… ({cut} bytes cut) …\n{}",
        &masked[..head_end],
        &masked[tail_start..]
    ))
}

/// A suggester's or retriever's spec as a database keeps it, and as a resume compares
/// the one given again with it: [`mask`]ed, so a spec that carries a key
/// (`openai:…?api_key=…`, `cmd:… --token …`) never leaves it in a database or a
/// task file. Masks keep the length: the same spec given again compares equal.
pub fn stored_spec(spec: &str) -> String {
    mask(spec).into_owned()
}

/// [`scrub`] of an optional text, as an owned one.
pub fn scrub_option(text: Option<&str>) -> Option<String> {
    text.map(|t| scrub(t).into_owned())
}

/// The largest character boundary of `text` at or before `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// The smallest character boundary of `text` at or after `at`.
fn ceil_char_boundary(text: &str, at: usize) -> usize {
    (at..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_remembered_keys_credentials_and_bearer_tokens() {
        remember("plain-words-key-1234");
        let text = "401 for Bearer abc.def-123: key plain-words-key-1234 refused; see http://me:pw@host/v1 and api_key=zzzzzzzz";
        assert_eq!(
            mask(text),
            "401 for Bearer ***********: key ******************** refused; see http://*****@host/v1 and api_key=********"
        );
        // A message that only names the parameter keeps its words.
        let named = "parameter \"api_key\": a key in the spec would be stored";
        assert_eq!(mask(named), named);
        assert_eq!(mask("nothing here"), "nothing here");
        // Privacy's own patterns still apply.
        let github = format!("token ghp_{}", "a".repeat(36));
        assert!(!mask(&github).contains("ghp_"));
    }

    #[test]
    fn long_texts_keep_head_and_tail_within_the_cap() {
        let text = format!("{}é{}", "a".repeat(10_000), "z".repeat(3_000));
        let cut = scrub(&text);
        assert!(cut.len() <= MAX_MESSAGE, "{}", cut.len());
        assert!(cut.starts_with("aaaa") && cut.ends_with("zzzz"));
        assert!(cut.contains(" bytes cut) …"), "{cut}");
        // Scrubbing again changes nothing.
        assert_eq!(scrub(&cut), cut);
        assert_eq!(scrub("short"), "short");
    }
}
