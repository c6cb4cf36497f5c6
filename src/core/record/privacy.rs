//! Privacy: which files are never stored, and which secrets are masked in what is (the
//! patterns themselves are `base::secrets::patterns`, shared with every printed message).
//! The rules of every ingestion path: the exclude globs (ignore files with per-line
//! errors and per-root anchoring), the secret masks (`redact_text`, `mask`, and
//! `mask_argv` for a server's command line) and [`protect_trajectory`] for derived and
//! imported trajectories (applied by `store::SessionStore::import_trajectory`).

use globset::{Glob, GlobSet, GlobSetBuilder};

pub use crate::base::secrets::patterns::{mask, mask_argv, redact_secrets, redact_text};

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
    let gold = &mut trajectory.gold;
    gold.next_edits.retain(|id| !dropped.contains(id));
    gold.applied.retain(|id| !dropped.contains(id));
    gold.alternatives.retain(|a| !dropped.contains(&a.of));
    for alternative in &mut gold.alternatives {
        alternative.before_text = redact_text(&alternative.before_text).0;
        alternative.after_text = redact_text(&alternative.after_text).0;
    }
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
