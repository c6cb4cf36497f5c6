//! Privacy: which files are never stored, and which secrets are masked in what is.

use std::sync::LazyLock;

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::bytes::Regex;

/// Files whose text is never recorded, unless the user overrides the list.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    ".env*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*secret*",
    "*.p12",
    "*.pfx",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "credentials.json",
    "**/.aws/credentials",
    "**/.aws/config",
    "secrets/",
];

/// Name of the per-workspace ignore file (one glob per line, `#` comments).
pub const IGNORE_FILE: &str = ".nexteditignore";

/// Decides whether a file's text may be recorded.
#[derive(Debug, Clone)]
pub struct PrivacyFilter {
    /// Globs matched against the file name only.
    by_name: GlobSet,
    /// Globs matched against the workspace-relative (or absolute) path.
    by_path: GlobSet,
    patterns: Vec<String>,
}

/// A glob the filter could not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid exclude glob {pattern:?}: {source}")]
pub struct GlobError {
    /// The pattern as written.
    pub pattern: String,
    /// What globset said.
    #[source]
    pub source: globset::Error,
}

impl PrivacyFilter {
    /// A filter from glob patterns. A pattern without `/` matches a file name
    /// anywhere; with `/` it matches the path relative to the workspace
    /// (a leading `/` anchors it there; a trailing `/` means everything below).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<PrivacyFilter, GlobError> {
        let mut by_name = GlobSetBuilder::new();
        let mut by_path = GlobSetBuilder::new();
        let mut kept = Vec::new();
        for pattern in patterns {
            let pattern = pattern.as_ref().trim();
            if pattern.is_empty() || pattern.starts_with('#') {
                continue;
            }
            kept.push(pattern.to_string());
            let compile = |p: &str| {
                Glob::new(p).map_err(|source| GlobError {
                    pattern: pattern.to_string(),
                    source,
                })
            };
            let dir = pattern.strip_suffix('/');
            let body = dir.unwrap_or(pattern);
            if body.contains('/') || dir.is_some() {
                let anchored = body.trim_start_matches('/');
                let mut glob = if body.starts_with('/') || body.contains('/') {
                    anchored.to_string()
                } else {
                    format!("**/{anchored}")
                };
                if dir.is_some() {
                    glob.push_str("/**");
                }
                by_path.add(compile(&glob)?);
            } else {
                by_name.add(compile(body)?);
            }
        }
        Ok(PrivacyFilter {
            by_name: by_name.build().expect("globs were checked one by one"),
            by_path: by_path.build().expect("globs were checked one by one"),
            patterns: kept,
        })
    }

    /// The default filter ([`DEFAULT_EXCLUDES`]).
    pub fn with_defaults() -> PrivacyFilter {
        PrivacyFilter::new(DEFAULT_EXCLUDES).expect("default globs are valid")
    }

    /// Adds the lines of a `.nexteditignore` file to this filter; an invalid line is
    /// skipped (and returned, for a warning) instead of disabling the whole file.
    pub fn extend_with_ignore_file(&self, contents: &str) -> (PrivacyFilter, Vec<GlobError>) {
        let mut patterns = self.patterns.clone();
        let mut errors = Vec::new();
        for line in contents.lines() {
            match PrivacyFilter::new(&[line]) {
                Ok(_) => patterns.push(line.to_string()),
                Err(error) => errors.push(error),
            }
        }
        let filter = PrivacyFilter::new(&patterns).expect("every line was checked on its own");
        (filter, errors)
    }

    /// Adds the ignore file of another workspace folder, whose path as the rules
    /// see it is `prefix`: its anchored lines (with a `/`) are anchored there.
    pub fn extend_with_ignore_file_under(
        &self,
        prefix: &str,
        contents: &str,
    ) -> (PrivacyFilter, Vec<GlobError>) {
        let prefix = prefix.trim_matches('/');
        let lines: Vec<String> = contents
            .lines()
            .map(|line| {
                let line = line.trim();
                let body = line.strip_suffix('/').unwrap_or(line);
                if prefix.is_empty() || line.starts_with('#') || !body.contains('/') {
                    line.to_string()
                } else {
                    format!("/{prefix}/{}", line.trim_start_matches('/'))
                }
            })
            .collect();
        self.extend_with_ignore_file(&lines.join("\n"))
    }

    /// The patterns in force.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether a file (path relative to the workspace, or absolute) is excluded.
    pub fn is_excluded(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.by_name.is_match(name) || self.by_path.is_match(path.trim_start_matches('/'))
    }
}

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

/// The same rules for a trajectory from any other ingestion path (`derive`,
/// `import`, stored by [`crate::store::SessionStore::import_trajectory`]): excluded
/// files keep their path and lose their text, their changes, edits and order
/// edges; every other text has its secrets masked. Returns how many files were
/// excluded.
pub fn protect_trajectory(
    filter: &PrivacyFilter,
    trajectory: &mut crate::core::trajectory::Trajectory,
) -> usize {
    use crate::core::trajectory::EventBody;
    let excluded: std::collections::HashSet<String> = trajectory
        .files
        .iter()
        .filter(|f| f.excluded || filter.is_excluded(&f.path))
        .map(|f| f.path.clone())
        .collect();
    let is_excluded = |path: &str| excluded.contains(path) || filter.is_excluded(path);
    for file in &mut trajectory.files {
        if is_excluded(&file.path) {
            file.excluded = true;
            file.base_text = None;
            file.final_text = None;
        } else {
            for text in [&mut file.base_text, &mut file.final_text]
                .into_iter()
                .flatten()
            {
                *text = redact_text(text).0;
            }
        }
    }
    trajectory.events.retain_mut(|event| match &mut event.body {
        EventBody::Change(change) => {
            if is_excluded(&change.file) {
                return false;
            }
            change.before = redact_text(&change.before).0;
            change.after = redact_text(&change.after).0;
            true
        }
        EventBody::Open { file, text, .. } => {
            if is_excluded(file) {
                *text = None;
            } else if let Some(text) = text {
                *text = redact_text(text).0;
            }
            true
        }
        EventBody::Suggestion { file, text, .. } => {
            if is_excluded(file) {
                return false;
            }
            *text = redact_text(text).0;
            true
        }
        EventBody::Signal(signal) => {
            if signal.file.as_deref().is_some_and(is_excluded) {
                signal.payload = serde_json::Value::Null;
            }
            true
        }
        _ => true,
    });
    let dropped: std::collections::HashSet<String> = trajectory
        .edits
        .iter()
        .filter(|e| is_excluded(&e.file))
        .map(|e| e.id.clone())
        .collect();
    trajectory.edits.retain(|e| !dropped.contains(&e.id));
    for edit in &mut trajectory.edits {
        edit.before_text = redact_text(&edit.before_text).0;
        edit.after_text = redact_text(&edit.after_text).0;
        for line in edit
            .context_before
            .iter_mut()
            .chain(edit.context_after.iter_mut())
        {
            *line = redact_text(line).0;
        }
    }
    let order = &mut trajectory.order;
    order
        .edges
        .retain(|e| !dropped.contains(&e.from) && !dropped.contains(&e.to));
    order.initial.retain(|id| !dropped.contains(id));
    order.natural.retain(|id| !dropped.contains(id));
    trajectory
        .gold
        .next_edits
        .retain(|id| !dropped.contains(id));
    excluded.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_workspace_globs() {
        let (filter, errors) = PrivacyFilter::with_defaults().extend_with_ignore_file(
            "# private\nnotes/\n[unclosed\n/build/*.log\ncredentials.json\n",
        );
        // The invalid line is skipped; the lines after it still count.
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].pattern, "[unclosed");
        for path in [
            ".env",
            "app/.env.local",
            "certs/server.pem",
            "id_rsa.pub",
            "config/my_secret_file.py",
            "notes/a.md",
            "build/x.log",
            "deep/credentials.json",
            "id_ed25519",
            "home/.ssh/id_ecdsa.pub",
            "/home/me/.aws/credentials",
            ".aws/config",
            ".npmrc",
            "pkg/.pypirc",
            "app/secrets/db.yaml",
            "secrets/x",
            "/abs/credentials.json",
        ] {
            assert!(filter.is_excluded(path), "{path} should be excluded");
        }
        for path in [
            "main.py",
            "src/keys.py",
            "other/build/x.log",
            "environment.py",
            "aws/credentials.py",
            "my_npmrc.txt",
        ] {
            assert!(!filter.is_excluded(path), "{path} should be kept");
        }
    }

    #[test]
    fn secrets_are_masked_in_place() {
        let text = "key = 'AKIAABCDEFGHIJKLMNOP'\ntoken=ghp_0123456789abcdefghijABCDEFGHIJ012345\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOg\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        let (out, n) = redact_text(text);
        assert_eq!(n, 3);
        assert_eq!(out.len(), text.len());
        assert_eq!(
            out,
            "key = '********************'\ntoken=****************************************\n-----BEGIN RSA PRIVATE KEY-----\n******\n****\n-----END RSA PRIVATE KEY-----\n"
        );
        let json = br#"{"text":"-----BEGIN PRIVATE KEY-----\nAB\n-----END PRIVATE KEY-----"}"#;
        let mut raw = json.to_vec();
        assert_eq!(redact_secrets(&mut raw), 1);
        assert_eq!(
            &raw[..],
            &br#"{"text":"-----BEGIN PRIVATE KEY-----\n**\n-----END PRIVATE KEY-----"}"#[..]
        );
        assert_eq!(
            redact_text("xoxb-1234567890ab"),
            ("*****************".to_string(), 1)
        );
        assert_eq!(redact_text("xoxb-short"), ("xoxb-short".to_string(), 0));
        let pgp = "a\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n=ab\n-----END PGP PRIVATE KEY BLOCK-----\nb";
        assert_eq!(
            redact_text(pgp),
            (
                "a\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n******\n***\n-----END PGP PRIVATE KEY BLOCK-----\nb".to_string(),
                1
            )
        );
    }

    #[test]
    fn secret_options_are_masked_in_command_lines() {
        let argv: Vec<String> = [
            "srv",
            "--token=SECRET123",
            "--api-key",
            "abcdef",
            "--stdio",
            "AKIAABCDEFGHIJKLMNOP",
            "GITHUB_TOKEN=ghx",
            "--log=debug",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            mask_argv(&argv),
            [
                "srv",
                "--token=*********",
                "--api-key",
                "******",
                "--stdio",
                "********************",
                "GITHUB_TOKEN=***",
                "--log=debug"
            ]
        );
        assert_eq!(mask("plain"), "plain");
        assert_eq!(mask("v AKIAABCDEFGHIJKLMNOP"), "v ********************");
    }
}
