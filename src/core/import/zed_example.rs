//! Zed's edit-prediction eval examples (`crates/edit_prediction_cli/src/evals/*.md` of
//! zed-industries/zed) read into typed values: the repository and revision (TOML front
//! matter between `+++` lines), the edit history (a fenced `diff`), the cursor (a fenced
//! block named by the file's path, with a comment line `^[CURSOR_POSITION]` whose caret
//! points into the line above) and the expected patch's alternatives (fenced `diff`s whose
//! comment lines `^[SELECTION]` and `^[CURSOR]` annotate the diff line above).
//!
//! The edit history may be split over several fenced `diff` blocks (Zed's examples put
//! text such as `// User accepted prediction:` between them): they are read as one diff.
//! [`render`] writes an example back in the same form. `zed_session` turns an example
//! into a trajectory; `zed_patch` reads and writes its diffs.

use serde::Deserialize;

/// One eval example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZedExample {
    /// The `# name` heading.
    pub name: String,
    /// `repository_url` of the front matter.
    pub repository_url: String,
    /// `revision` of the front matter (the commit the example starts from).
    pub revision: String,
    /// The unified diff of what the user already typed (may be empty).
    pub edit_history: String,
    /// Where the cursor is.
    pub cursor: CursorPosition,
    /// The expected patch's alternatives, in order (a prediction matching any is right).
    pub expected: Vec<ExpectedPatch>,
}

/// The cursor: an excerpt of a file, and a place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPosition {
    /// The file, relative to the repository root.
    pub path: String,
    /// The excerpt, the marker line left out.
    pub excerpt: String,
    /// 0-based line of the excerpt the cursor is on.
    pub line: usize,
    /// Byte column in that line.
    pub column: usize,
}

/// One alternative of the expected patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedPatch {
    /// The unified diff, marker lines left out.
    pub diff: String,
    /// Selected ranges, each on the diff line above its marker.
    pub selections: Vec<Marker>,
    /// Where the cursor ends, if marked.
    pub cursor: Option<Marker>,
}

/// A marked range of one line of a diff: `line` (0-based, of the diff without marker
/// lines), columns `start..end` in bytes of that line, its `+`/`-`/` ` prefix included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The annotated line.
    pub line: usize,
    /// First column (the first `-` of the marker, else the caret's).
    pub start: usize,
    /// The caret's column (the end of a selection; the place of a cursor).
    pub end: usize,
}

/// Why an example could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ZedExampleError {
    /// The text does not start with `+++` front matter.
    #[error("no TOML front matter between `+++` lines at the top")]
    NoFrontMatter,
    /// The front matter is not the TOML expected.
    #[error("front matter: {0}")]
    FrontMatter(#[from] toml::de::Error),
    /// A section is missing or has no fenced block.
    #[error("no `## {0}` section with a fenced block")]
    Missing(&'static str),
    /// The cursor block has no `^[CURSOR_POSITION]` marker under a line.
    #[error("the cursor block has no `^[CURSOR_POSITION]` marker under a line")]
    NoCursor,
    /// A marker line is not under a line of its block.
    #[error("a `{0}` marker is not under a line of its block")]
    StrayMarker(String),
}

#[derive(Deserialize)]
struct FrontMatter {
    repository_url: String,
    revision: String,
}

/// Reads one example's markdown.
pub fn parse(text: &str) -> Result<ZedExample, ZedExampleError> {
    let rest = text
        .strip_prefix("+++\n")
        .ok_or(ZedExampleError::NoFrontMatter)?;
    let (front, body) = rest
        .split_once("\n+++\n")
        .ok_or(ZedExampleError::NoFrontMatter)?;
    let front: FrontMatter = toml::from_str(front)?;
    let name = body
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or_default()
        .trim()
        .to_string();
    let history = blocks(section(body, "Edit History"));
    let cursor = blocks(section(body, "Cursor Position"));
    let expected = blocks(section(body, "Expected Patch"));
    let (path, excerpt) = cursor
        .into_iter()
        .next()
        .ok_or(ZedExampleError::Missing("Cursor Position"))?;
    if expected.is_empty() {
        return Err(ZedExampleError::Missing("Expected Patch"));
    }
    let (excerpt, markers) = strip_markers(&excerpt)?;
    let at = markers
        .iter()
        .find(|(kind, _)| kind == "CURSOR_POSITION")
        .map(|(_, m)| *m)
        .ok_or(ZedExampleError::NoCursor)?;
    let expected = expected
        .into_iter()
        .map(|(_, diff)| {
            let (diff, markers) = strip_markers(&diff)?;
            Ok(ExpectedPatch {
                diff,
                selections: (markers.iter())
                    .filter(|(k, _)| k == "SELECTION")
                    .map(|(_, m)| *m)
                    .collect(),
                cursor: (markers.iter())
                    .find(|(k, _)| k == "CURSOR")
                    .map(|(_, m)| *m),
            })
        })
        .collect::<Result<_, ZedExampleError>>()?;
    Ok(ZedExample {
        name,
        repository_url: front.repository_url,
        revision: front.revision,
        edit_history: history.into_iter().map(|(_, d)| d).collect(),
        cursor: CursorPosition {
            path: path.to_string(),
            excerpt,
            line: at.line,
            column: at.end,
        },
        expected,
    })
}

/// The markdown of `example`, in the form [`parse`] reads: front matter, the `# name`
/// heading, the edit history (one block), the cursor block with its marker line, and
/// each alternative in its own block (selection and cursor markers are not written).
pub fn render(example: &ZedExample) -> String {
    // A JSON string is a TOML basic string (the same escapes).
    let toml_string = |s: &str| serde_json::Value::from(s).to_string();
    let cursor = &example.cursor;
    let mut excerpt = String::new();
    for (i, line) in cursor.excerpt.split_inclusive('\n').enumerate() {
        excerpt.push_str(line);
        if i == cursor.line {
            excerpt.push_str(&format!(
                "#{}^[CURSOR_POSITION]\n",
                " ".repeat(cursor.column.saturating_sub(1))
            ));
        }
    }
    let heading = match example.name.as_str() {
        "" => String::new(),
        name => format!("# {name}\n\n"),
    };
    let mut out = format!(
        "+++\nrepository_url = {}\nrevision = {}\n+++\n\n{heading}## Edit History\n\n```diff\n{}```\n\n## Cursor Position\n\n```{}\n{excerpt}```\n\n## Expected Patch\n",
        toml_string(&example.repository_url),
        toml_string(&example.revision),
        example.edit_history,
        cursor.path,
    );
    for patch in &example.expected {
        out.push_str(&format!("\n```diff\n{}```\n", patch.diff));
    }
    out
}

/// The text of section `## title` (up to the next `## `), empty when absent.
fn section<'t>(body: &'t str, title: &str) -> &'t str {
    let head = format!("## {title}\n");
    let Some(start) = body.find(&head).map(|i| i + head.len()) else {
        return "";
    };
    let end = body[start..]
        .find("\n## ")
        .map_or(body.len(), |i| start + i + 1);
    &body[start..end]
}

/// The fenced blocks of a section: (info string, text with a final newline per line).
fn blocks(section: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    let mut open: Option<(&str, String)> = None;
    for line in section.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim(), String::new())),
            (Some(_), Some("")) => out.extend(open.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The block without its marker lines, and each marker (kind, place) with its line
/// counted in the block without them.
fn strip_markers(block: &str) -> Result<(String, Vec<(String, Marker)>), ZedExampleError> {
    let marker = regex::Regex::new(r"^(\s*#\s*?)(-*)\^\[([A-Z_]+)\]\s*$").expect("valid");
    let (mut kept, mut markers) = (String::new(), Vec::new());
    let mut lines = 0;
    for line in block.lines() {
        let Some(c) = marker.captures(line) else {
            kept.push_str(line);
            kept.push('\n');
            lines += 1;
            continue;
        };
        let kind = c[3].to_string();
        if lines == 0 {
            return Err(ZedExampleError::StrayMarker(kind));
        }
        let dashes = c.get(2).expect("group 2 always matches");
        markers.push((
            kind,
            Marker {
                line: lines - 1,
                start: dashes.start(),
                end: dashes.end(),
            },
        ));
    }
    Ok((kept, markers))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "+++\nrepository_url = \"https://example.com/o/r\"\nrevision = \"abc123\"\n+++\n\n# r--add-loop\n\n## Edit History\n\n```diff\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n def f(xs):\n+    for\n     pass\n```\n\n## Cursor Position\n\n```m.py\ndef f(xs):\n    for\n    #  ^[CURSOR_POSITION]\n    pass\n```\n\n## Expected Patch\n\n```diff\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f(xs):\n-    for\n+    for x in xs:\n#        -^[SELECTION]\n#             --^[SELECTION]\n     pass\n```\n\n```diff\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,4 @@\n def f(xs):\n-    for\n+    for x in xs:\n+        print(x)\n#                ^[CURSOR]\n     pass\n```\n";

    #[test]
    fn an_example_reads_into_its_parts() {
        let e = parse(EXAMPLE).unwrap();
        assert_eq!(e.name, "r--add-loop");
        assert_eq!(
            (e.repository_url.as_str(), e.revision.as_str()),
            ("https://example.com/o/r", "abc123")
        );
        assert!(e.edit_history.contains("+    for\n"));
        let c = &e.cursor;
        assert_eq!((c.path.as_str(), c.line, c.column), ("m.py", 1, 7));
        assert_eq!(c.excerpt, "def f(xs):\n    for\n    pass\n");
        assert_eq!(e.expected.len(), 2);
        let first = &e.expected[0];
        assert!(!first.diff.contains("SELECTION"));
        // "+    for x in xs:": `x` at 9..10, `xs` at 14..16, the prefix counted.
        assert_eq!(
            first.selections,
            [
                Marker {
                    line: 5,
                    start: 9,
                    end: 10
                },
                Marker {
                    line: 5,
                    start: 14,
                    end: 16
                }
            ]
        );
        assert_eq!(
            e.expected[1].cursor,
            Some(Marker {
                line: 6,
                start: 17,
                end: 17
            })
        );
    }

    #[test]
    fn missing_parts_are_named() {
        assert!(matches!(
            parse("# x\n"),
            Err(ZedExampleError::NoFrontMatter)
        ));
        let no_patch = EXAMPLE.split("## Expected Patch").next().unwrap();
        assert!(matches!(
            parse(no_patch),
            Err(ZedExampleError::Missing("Expected Patch"))
        ));
        let bad = EXAMPLE.replace("revision = \"abc123\"\n", "");
        assert!(matches!(parse(&bad), Err(ZedExampleError::FrontMatter(_))));
    }
}
