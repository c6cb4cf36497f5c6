//! The unified diffs of Zed's eval examples, read the way Zed applies them: a hunk is
//! found by its old lines (context and deleted lines) in the text, not by its `@@`
//! numbers, which the examples often get wrong (`@@ -1,21 +1,21 @@` on a hunk in the
//! middle of a file). The old lines must occur exactly once; a hunk without old lines
//! (a bare insertion) cannot be placed and is refused.
//!
//! And written back: [`render_hunk`] makes one hunk with real numbers and three lines
//! of context, so an exported example applies with any tool.

/// One file's part of a diff: its path and hunks, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The path after `+++ b/` (or `--- a/` for a deletion), relative to the repository.
    pub path: String,
    /// The hunks, in order.
    pub hunks: Vec<Hunk>,
}

/// One hunk: its lines without their prefix, each with a final line break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Its 1-based place in the diff (hunks of every file counted), for messages.
    pub number: usize,
    /// Context and deleted lines, in order.
    pub old: Vec<String>,
    /// Context and added lines, in order.
    pub new: Vec<String>,
}

/// Why a diff cannot be read or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// A hunk or a line outside a file's `---`/`+++` header.
    #[error("line {0}: not inside a file's `--- a/…` / `+++ b/…` header")]
    NoFile(usize),
    /// A line of a hunk without a ` `, `-` or `+` prefix.
    #[error("line {line}: `{text}` is no diff line")]
    BadLine {
        /// 1-based line of the diff.
        line: usize,
        /// The line.
        text: String,
    },
    /// The hunk's old lines are not in the text.
    #[error("hunk {hunk} of {path}: its old lines are not in the text")]
    NotFound {
        /// The file.
        path: String,
        /// The hunk's number.
        hunk: usize,
    },
    /// The hunk's old lines are in the text more than once.
    #[error("hunk {hunk} of {path}: its old lines are in the text {count} times")]
    Ambiguous {
        /// The file.
        path: String,
        /// The hunk's number.
        hunk: usize,
        /// How often.
        count: usize,
    },
}

/// Reads a unified diff of one or more files (`\ No newline` lines are ignored, an
/// empty line inside a hunk is an empty context line).
pub fn parse_diff(diff: &str) -> Result<Vec<FilePatch>, PatchError> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut hunks = 0;
    let lines: Vec<&str> = diff.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let (Some(old), Some(new)) = (
            line.strip_prefix("--- "),
            lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")),
        ) {
            let path = match new.trim() {
                "/dev/null" => old.trim(),
                new => new,
            };
            let path = path
                .strip_prefix("a/")
                .or_else(|| path.strip_prefix("b/"))
                .unwrap_or(path);
            files.push(FilePatch {
                path: path.to_string(),
                hunks: Vec::new(),
            });
            i += 2;
            continue;
        }
        let file = files.last_mut().ok_or(PatchError::NoFile(i + 1))?;
        if line.starts_with("@@") {
            hunks += 1;
            file.hunks.push(Hunk {
                number: hunks,
                old: Vec::new(),
                new: Vec::new(),
            });
        } else if !line.starts_with('\\') {
            let hunk = file.hunks.last_mut().ok_or(PatchError::NoFile(i + 1))?;
            let mut chars = line.chars();
            let prefix = chars.next();
            let text = format!("{}\n", chars.as_str());
            match prefix {
                Some(' ') | None => {
                    hunk.old.push(text.clone());
                    hunk.new.push(text);
                }
                Some('-') => hunk.old.push(text),
                Some('+') => hunk.new.push(text),
                _ => {
                    return Err(PatchError::BadLine {
                        line: i + 1,
                        text: line.to_string(),
                    });
                }
            }
        }
        i += 1;
    }
    Ok(files)
}

/// Where `hunk` applies in `lines` (the file's lines with their breaks): the first
/// line of its old lines, found by content.
pub fn locate(lines: &[String], path: &str, hunk: &Hunk) -> Result<usize, PatchError> {
    let n = hunk.old.len();
    // A last line without a break matches the hunk's line with one.
    let same = |at: usize| {
        (0..n).all(|k| {
            let line = &lines[at + k];
            line == &hunk.old[k] || (!line.ends_with('\n') && format!("{line}\n") == hunk.old[k])
        })
    };
    let found: Vec<usize> = if n == 0 || n > lines.len() {
        Vec::new()
    } else {
        (0..=lines.len() - n).filter(|&at| same(at)).collect()
    };
    match found[..] {
        [at] => Ok(at),
        [] if n == 0 => Err(PatchError::Ambiguous {
            path: path.to_string(),
            hunk: hunk.number,
            count: lines.len() + 1,
        }),
        [] => Err(PatchError::NotFound {
            path: path.to_string(),
            hunk: hunk.number,
        }),
        _ => Err(PatchError::Ambiguous {
            path: path.to_string(),
            hunk: hunk.number,
            count: found.len(),
        }),
    }
}

/// The change a hunk makes at line `at`, its unchanged lines at both ends trimmed:
/// (first changed line, replaced lines, new lines).
pub fn trimmed(hunk: &Hunk, at: usize) -> (usize, Vec<String>, Vec<String>) {
    let (mut old, mut new) = (hunk.old.clone(), hunk.new.clone());
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    old.drain(..prefix);
    new.drain(..prefix);
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    old.truncate(old.len() - suffix);
    new.truncate(new.len() - suffix);
    (at + prefix, old, new)
}

/// One hunk of `path` replacing `lines[start..end]` by `new`, with up to three lines
/// of context each side and its real `@@` numbers; lines without a final break get
/// one (the examples' diffs are line based).
pub fn render_hunk(lines: &[String], start: usize, end: usize, new: &[String]) -> String {
    let from = start.saturating_sub(3);
    let to = (end + 3).min(lines.len());
    let line = |prefix: char, text: &str| format!("{prefix}{}\n", text.trim_end_matches('\n'));
    let mut out = format!(
        "@@ -{},{} +{},{} @@\n",
        from + 1,
        to - from,
        from + 1,
        to - from - (end - start) + new.len()
    );
    for text in &lines[from..start] {
        out.push_str(&line(' ', text));
    }
    for text in &lines[start..end] {
        out.push_str(&line('-', text));
    }
    for text in new {
        out.push_str(&line('+', text));
    }
    for text in &lines[end..to] {
        out.push_str(&line(' ', text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.split_inclusive('\n').map(str::to_string).collect()
    }

    #[test]
    fn hunks_are_found_by_their_lines_not_their_numbers() {
        let diff = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n b = 2\n-c = 3\n+c = 4\n\n d = 5\n";
        let files = parse_diff(diff).unwrap();
        assert_eq!(files[0].path, "m.py");
        let hunk = &files[0].hunks[0];
        assert_eq!(hunk.old, ["b = 2\n", "c = 3\n", "\n", "d = 5\n"]);
        let text = lines("a = 1\nb = 2\nc = 3\n\nd = 5\n");
        assert_eq!(locate(&text, "m.py", hunk), Ok(1));
        assert_eq!(
            trimmed(hunk, 1),
            (2, vec!["c = 3\n".to_string()], vec!["c = 4\n".to_string()])
        );
        let twice = lines("b = 2\nc = 3\n\nd = 5\nb = 2\nc = 3\n\nd = 5\n");
        assert!(matches!(
            locate(&twice, "m.py", hunk),
            Err(PatchError::Ambiguous { count: 2, .. })
        ));
        assert!(matches!(
            locate(&lines("x\n"), "m.py", hunk),
            Err(PatchError::NotFound { hunk: 1, .. })
        ));
        assert_eq!(
            render_hunk(&text, 2, 3, &["c = 4\n".to_string()]),
            "@@ -1,5 +1,5 @@\n a = 1\n b = 2\n-c = 3\n+c = 4\n \n d = 5\n"
        );
    }
}
