//! Prompt templates for model suggesters (`openai:`): how a step's state is shown to a
//! language model, and how its answer becomes ranked edits.
//!
//! Pure: text in, text out. No network, no files; [`super::openai`] does the I/O.
//! Every template shows one *editable region* (lines around the cursor of the last
//! applied edit, or around the location `generate` asks for) and asks the model to
//! rewrite it; the rewritten region is diffed against the original, line by line, and
//! each changed hunk is one suggested edit, nearest to the cursor first. The named
//! templates are `zeta` and `nes`; the `complete` template marks the hole in the file
//! and takes its answer's code block as the text.

use similar::{Algorithm, capture_diff_slices, group_diff_ops};

use super::protocol::{AppliedEdit, CompleteParams, FileContent, SuggestedEdit};

/// Marks where the editable region starts (Zeta's marker).
pub const REGION_START: &str = "<|editable_region_start|>";
/// Marks where the editable region ends (Zeta's marker).
pub const REGION_END: &str = "<|editable_region_end|>";
/// Marks the cursor inside the editable region (Zeta's marker).
pub const CURSOR: &str = "<|user_cursor_is_here|>";
/// Opens the code to rewrite in the NES template.
pub const CODE_TO_EDIT_START: &str = "<|code_to_edit|>";
/// Closes the code to rewrite in the NES template.
pub const CODE_TO_EDIT_END: &str = "<|/code_to_edit|>";

/// Marks the hole in the `complete` template.
pub const FILL_HERE: &str = "<|fill_here|>";
/// The name of the template of `complete` calls (whatever `template=` the spec names:
/// that one is for `suggest` and `generate`).
pub const COMPLETE_TEMPLATE: &str = "complete";
/// Lines of the prefix the `complete` template shows (the nearest ones).
pub const COMPLETE_PREFIX_LINES: usize = 120;
/// Lines of the suffix the `complete` template shows.
pub const COMPLETE_SUFFIX_LINES: usize = 60;
/// Context chunks the `complete` template shows (the best ones).
pub const COMPLETE_CONTEXT_CHUNKS: usize = 4;

/// Lines shown each side of the cursor in the editable region.
pub const REGION_RADIUS: usize = 8;
/// Applied edits shown in the edit history (the most recent ones).
pub const HISTORY_EDITS: usize = 8;
/// Other files shown as "recently viewed" by the NES template.
pub const VIEWED_FILES: usize = 3;
/// Lines of each recently viewed file the NES template shows (its start).
pub const VIEWED_LINES: usize = 40;

/// A named prompt format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// Zed's Zeta: a raw completion prompt with the edit history as a diff and the
    /// editable region marked inside the excerpt.
    Zeta,
    /// Copilot's next-edit suggestions: a chat prompt with recently viewed files, the edit
    /// history, the current file and the code to edit.
    Nes,
}

impl Template {
    /// The template named `name` (`zeta`, `nes`).
    pub fn from_name(name: &str) -> Option<Template> {
        match name {
            "zeta" => Some(Template::Zeta),
            "nes" => Some(Template::Nes),
            _ => None,
        }
    }

    /// Its name in a spec.
    pub fn name(self) -> &'static str {
        match self {
            Template::Zeta => "zeta",
            Template::Nes => "nes",
        }
    }
}

/// A rendered prompt: a raw completion prompt, or a chat's system and user messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Sent to `/completions` as `prompt`.
    Completion(String),
    /// Sent to `/chat/completions` as a system and a user message.
    Chat {
        /// The system message (the task).
        system: String,
        /// The user message (the state).
        user: String,
    },
}

/// The lines a model may rewrite: `[start_line, end_line)` of `file`, with the cursor
/// before line `cursor_line`'s column `cursor_column` (bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// Path relative to the worktree.
    pub file: String,
    /// First line (0-based).
    pub start_line: usize,
    /// End (exclusive).
    pub end_line: usize,
    /// Line holding the cursor.
    pub cursor_line: usize,
    /// Byte column of the cursor in that line.
    pub cursor_column: usize,
}

/// What a template shows: the step's edits and files, and the region to rewrite.
#[derive(Debug, Clone, Copy)]
pub struct PromptInput<'a> {
    /// Applied edits in application order.
    pub prior_edits: &'a [AppliedEdit],
    /// Current content of the step's files.
    pub files: &'a [FileContent],
    /// The region to rewrite (its file is one of `files`).
    pub region: &'a Region,
}

/// The region around the cursor of the last applied edit (the end of its text), or
/// `None` when the step has no file to show.
pub fn region_at_last_edit(prior_edits: &[AppliedEdit], files: &[FileContent]) -> Option<Region> {
    let last = prior_edits.last();
    let file = last
        .and_then(|edit| files.iter().find(|f| f.path == edit.file))
        .or_else(|| files.first())?;
    let lines = lines_of(&file.text);
    let (cursor_line, cursor_column) = match last.filter(|edit| edit.file == file.path) {
        // After the last line the edit inserted, before its line break.
        Some(edit) if edit.end_line > edit.start_line && edit.end_line <= lines.len() => {
            let line = lines[edit.end_line - 1];
            (edit.end_line - 1, line.trim_end_matches(['\n', '\r']).len())
        }
        Some(edit) => (edit.start_line.min(lines.len()), 0),
        None => (0, 0),
    };
    let start_line = cursor_line.saturating_sub(REGION_RADIUS);
    let end_line = (cursor_line + REGION_RADIUS + 1).min(lines.len());
    Some(Region {
        file: file.path.clone(),
        start_line,
        end_line: end_line.max(start_line),
        cursor_line,
        cursor_column,
    })
}

/// The region around lines `[start_line, end_line)` of `file` (the location `generate`
/// asks for), with the cursor at its start.
pub fn region_around(file: &FileContent, start_line: usize, end_line: usize) -> Region {
    let n_lines = lines_of(&file.text).len();
    let start = start_line.min(n_lines);
    Region {
        file: file.path.clone(),
        start_line: start.saturating_sub(REGION_RADIUS),
        end_line: (end_line.max(start) + REGION_RADIUS).min(n_lines),
        cursor_line: start,
        cursor_column: 0,
    }
}

/// Renders `input` in `template`.
pub fn render(template: Template, input: &PromptInput) -> Prompt {
    match template {
        Template::Zeta => Prompt::Completion(render_zeta(input)),
        Template::Nes => render_nes(input),
    }
}

/// The Zeta prompt: instruction, the edit history as a unified diff, the excerpt with
/// the editable region and the cursor marked, and an open response section.
fn render_zeta(input: &PromptInput) -> String {
    let region = input.region;
    let mut out = String::new();
    out.push_str("### Instruction:\n");
    out.push_str(
        "You are a code completion assistant. Study the user's recent edits, then rewrite \
         the part of the excerpt between <|editable_region_start|> and \
         <|editable_region_end|> the way the user is about to edit it next. \
         <|user_cursor_is_here|> marks the cursor. Answer with the rewritten part only, \
         between the same two markers.\n\n",
    );
    out.push_str("### User Edits:\n\n");
    out.push_str(&edit_history(input.prior_edits));
    out.push_str("\n### User Excerpt:\n\n");
    out.push_str(&format!("```{}\n", region.file));
    out.push_str(&marked_region(
        input.files,
        region,
        REGION_START,
        REGION_END,
    ));
    out.push_str("```\n\n### Response:\n");
    out
}

/// The NES prompt: a system message with the task, and a user message with recently
/// viewed files, the edit history, the current file and the code to edit.
fn render_nes(input: &PromptInput) -> Prompt {
    let region = input.region;
    let system = format!(
        "You predict a developer's next edit. You see files they viewed recently, their \
         recent edits as diffs, the current file, and the code to edit. Rewrite the code \
         between {CODE_TO_EDIT_START} and {CODE_TO_EDIT_END} as it will be after their \
         next edit ({CURSOR} marks the cursor; leave it out of your answer). Answer with \
         the rewritten code only, between the same two markers."
    );
    let mut user = String::from("<|recently_viewed_code_snippets|>\n");
    for file in input
        .files
        .iter()
        .filter(|f| f.path != region.file)
        .take(VIEWED_FILES)
    {
        user.push_str("<|recently_viewed_code_snippet|>\n");
        user.push_str(&format!("code_snippet_file_path: {}\n", file.path));
        for line in lines_of(&file.text).iter().take(VIEWED_LINES) {
            push_line(&mut user, line);
        }
        user.push_str("<|/recently_viewed_code_snippet|>\n");
    }
    user.push_str("<|/recently_viewed_code_snippets|>\n\n");
    user.push_str("<|current_file_content|>\n");
    user.push_str(&format!("current_file_path: {}\n", region.file));
    if let Some(file) = input.files.iter().find(|f| f.path == region.file) {
        for line in lines_of(&file.text) {
            push_line(&mut user, line);
        }
    }
    user.push_str("<|/current_file_content|>\n\n");
    user.push_str("<|edit_diff_history|>\n");
    user.push_str(&edit_history(input.prior_edits));
    user.push_str("<|/edit_diff_history|>\n\n");
    user.push_str(&marked_region(
        input.files,
        region,
        CODE_TO_EDIT_START,
        CODE_TO_EDIT_END,
    ));
    Prompt::Chat { system, user }
}

/// The region's lines between `open` and `close` (each on its own line), the cursor
/// marked.
fn marked_region(files: &[FileContent], region: &Region, open: &str, close: &str) -> String {
    let text = files
        .iter()
        .find(|f| f.path == region.file)
        .map(|f| f.text.as_str())
        .unwrap_or("");
    let lines = lines_of(text);
    let mut out = format!("{open}\n");
    for (n, line) in lines
        .iter()
        .enumerate()
        .take(region.end_line)
        .skip(region.start_line)
    {
        if n == region.cursor_line {
            let column = floor_char_boundary(line, region.cursor_column);
            let marked = format!("{}{CURSOR}{}", &line[..column], &line[column..]);
            push_line(&mut out, &marked);
        } else {
            push_line(&mut out, line);
        }
    }
    // A cursor after the last line (an edit at the end of the file).
    if region.cursor_line >= region.end_line.max(lines.len()) {
        out.push_str(CURSOR);
        out.push('\n');
    }
    out.push_str(close);
    out.push('\n');
    out
}

/// The most recent applied edits as a unified diff, oldest first (each edit's lines in
/// current coordinates, 1-based in the hunk header).
pub fn edit_history(prior_edits: &[AppliedEdit]) -> String {
    let mut out = String::new();
    let skip = prior_edits.len().saturating_sub(HISTORY_EDITS);
    for edit in &prior_edits[skip..] {
        let before = lines_of(&edit.before);
        let after = lines_of(&edit.after);
        out.push_str(&format!("--- a/{}\n+++ b/{}\n", edit.file, edit.file));
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            edit.start_line + 1,
            before.len(),
            edit.start_line + 1,
            after.len()
        ));
        for line in before {
            push_line(&mut out, &format!("-{line}"));
        }
        for line in after {
            push_line(&mut out, &format!("+{line}"));
        }
    }
    out
}

/// The rewritten region in a model's answer: the text between the template's markers
/// when it kept them (the end marker may be cut off by `max_tokens`), else the answer
/// without a surrounding code fence; cursor markers removed.
pub fn parse_answer(answer: &str) -> String {
    let mut text = answer;
    let mut marked = false;
    for (open, close) in [
        (REGION_START, REGION_END),
        (CODE_TO_EDIT_START, CODE_TO_EDIT_END),
    ] {
        if let Some(at) = text.find(open) {
            text = &text[at + open.len()..];
            text = text.strip_prefix('\n').unwrap_or(text);
            if let Some(end) = text.find(close) {
                text = &text[..end];
            }
            marked = true;
            break;
        }
    }
    if !marked {
        let trimmed = text.trim_matches('\n');
        if let Some(rest) = trimmed.strip_prefix("```") {
            // The fence's first line names a language or a path.
            text = rest.split_once('\n').map(|(_, body)| body).unwrap_or("");
            if let Some(body) = text.trim_end().strip_suffix("```") {
                text = body;
            }
        }
    }
    text.replace(CURSOR, "")
}

/// The edits that turn the region's current lines into `rewritten`: one per changed
/// hunk of a line diff, nearest to the cursor first.
pub fn region_edits(text: &str, region: &Region, rewritten: &str) -> Vec<SuggestedEdit> {
    let lines = lines_of(text);
    let old: Vec<&str> =
        lines[region.start_line.min(lines.len())..region.end_line.min(lines.len())].to_vec();
    let rewritten = with_final_break(rewritten, &old);
    let new: Vec<&str> = lines_of(&rewritten);
    let ops = capture_diff_slices(Algorithm::Myers, &old, &new);
    let mut edits: Vec<SuggestedEdit> = group_diff_ops(ops, 0)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            Some(SuggestedEdit {
                file: region.file.clone(),
                start_line: region.start_line + old_range.start,
                end_line: region.start_line + old_range.end,
                text: new[new_range].concat(),
                confidence: None,
            })
        })
        .collect();
    edits.sort_by_key(|edit| distance(edit, region.cursor_line));
    edits
}

/// The new text of lines `[start_line, end_line)` in `rewritten`, the rewrite of
/// `region` (which holds them): what is left after the unchanged lines before and after
/// the location are taken off.
pub fn location_text(
    text: &str,
    region: &Region,
    start_line: usize,
    end_line: usize,
    rewritten: &str,
) -> String {
    let lines = lines_of(text);
    let old = &lines[region.start_line.min(lines.len())..region.end_line.min(lines.len())];
    let rewritten = with_final_break(rewritten, old);
    let new = lines_of(&rewritten);
    let before = &old[..start_line.saturating_sub(region.start_line).min(old.len())];
    let after = &old[end_line.saturating_sub(region.start_line).min(old.len())..];
    let head = before.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = after
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    new[head..new.len() - tail].concat()
}

/// The `complete` template: a system message with the task, and a user message with
/// the context chunks, the scenario and the file around the hole, the hole marked
/// with [`FILL_HERE`] (the nearest [`COMPLETE_PREFIX_LINES`] and
/// [`COMPLETE_SUFFIX_LINES`] lines). The answer is asked for in one code block.
pub fn render_complete(params: &CompleteParams) -> Prompt {
    let system = format!(
        "You complete code. You see code from the developer's repository and one file \
         with a hole marked {FILL_HERE}. Write the code that fills the hole, so that the \
         file reads correctly from the text before the hole to the text after it. Answer \
         with that code only, in one fenced code block, indented as it will be in the file."
    );
    let mut user = String::new();
    if !params.context.is_empty() {
        user.push_str("<|context|>\n");
        for chunk in params.context.iter().take(COMPLETE_CONTEXT_CHUNKS) {
            user.push_str(&format!(
                "{} (lines {}-{}):\n```\n",
                chunk.file,
                chunk.start_line + 1,
                chunk.end_line
            ));
            push_line(&mut user, &chunk.text);
            user.push_str("```\n");
        }
        user.push_str("<|/context|>\n\n");
    }
    user.push_str(&format!("Task: {}\n", params.scenario.replace('_', " ")));
    user.push_str(&format!("<|file|> {}\n", params.file));
    let prefix = lines_of(&params.prefix);
    user.push_str(&prefix[prefix.len().saturating_sub(COMPLETE_PREFIX_LINES)..].concat());
    user.push_str(FILL_HERE);
    let suffix: String = lines_of(&params.suffix)
        .into_iter()
        .take(COMPLETE_SUFFIX_LINES)
        .collect();
    push_line(&mut user, &suffix);
    user.push_str("<|/file|>\n");
    Prompt::Chat { system, user }
}

/// The hole's text in a model's answer to the `complete` template: the body of its
/// first fenced code block (to its end, or to the end of an answer cut off by
/// `max_tokens`), else the whole answer; hole markers removed.
pub fn parse_complete_answer(answer: &str) -> String {
    let text = match answer.find("```") {
        Some(at) => {
            let rest = &answer[at + 3..];
            // The fence's first line may name a language.
            let body = rest.split_once('\n').map_or("", |(_, body)| body);
            match body.find("```") {
                Some(end) => &body[..end],
                None => body,
            }
        }
        None => answer,
    };
    text.replace(FILL_HERE, "")
}

/// How far an edit is from the cursor line (0 when it covers it).
fn distance(edit: &SuggestedEdit, cursor_line: usize) -> usize {
    if cursor_line < edit.start_line {
        edit.start_line - cursor_line
    } else if cursor_line >= edit.end_line.max(edit.start_line + 1) {
        cursor_line + 1 - edit.end_line.max(edit.start_line + 1)
    } else {
        0
    }
}

/// `rewritten` ending in a line break when the lines it replaces do (a model's answer
/// often drops the last one).
fn with_final_break(rewritten: &str, old: &[&str]) -> String {
    let old_ends = old.last().is_some_and(|l| l.ends_with('\n'));
    if old_ends && !rewritten.is_empty() && !rewritten.ends_with('\n') {
        format!("{rewritten}\n")
    } else {
        rewritten.to_string()
    }
}

/// The lines of `text`, each with its line break.
fn lines_of(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Appends `line`, adding a line break if it has none.
fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push('\n');
    }
}

/// The largest char boundary of `line` at or before `column`.
fn floor_char_boundary(line: &str, column: usize) -> usize {
    let mut column = column.min(line.len());
    while !line.is_char_boundary(column) {
        column -= 1;
    }
    column
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> FileContent {
        FileContent {
            path: path.to_string(),
            text: text.to_string(),
        }
    }

    fn edit(file: &str, start: usize, end: usize, before: &str, after: &str) -> AppliedEdit {
        AppliedEdit {
            file: file.to_string(),
            start_line: start,
            end_line: end,
            before: before.to_string(),
            after: after.to_string(),
            step: 0,
        }
    }

    #[test]
    fn the_zeta_prompt_marks_the_region_and_the_cursor_after_the_last_edit() {
        let files = [file("a.py", "def f(x):\n    return x\n\nprint(f(1))\n")];
        let edits = [edit("a.py", 0, 1, "def g(x):\n", "def f(x):\n")];
        let region = region_at_last_edit(&edits, &files).unwrap();
        assert_eq!(
            region,
            Region {
                file: "a.py".into(),
                start_line: 0,
                end_line: 4,
                cursor_line: 0,
                cursor_column: 9
            }
        );
        let input = PromptInput {
            prior_edits: &edits,
            files: &files,
            region: &region,
        };
        let Prompt::Completion(prompt) = render(Template::Zeta, &input) else {
            panic!("zeta is a completion prompt")
        };
        let tail = prompt.split_once("### User Edits:\n\n").unwrap().1;
        assert_eq!(
            tail,
            "--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-def g(x):\n+def f(x):\n\n\
             ### User Excerpt:\n\n```a.py\n<|editable_region_start|>\n\
             def f(x):<|user_cursor_is_here|>\n    return x\n\nprint(f(1))\n\
             <|editable_region_end|>\n```\n\n### Response:\n"
        );
    }

    #[test]
    fn the_complete_prompt_marks_the_hole_and_its_answer_is_the_code_block() {
        let params = CompleteParams {
            task: "t1".into(),
            worktree: "/w".into(),
            language: Some("python".into()),
            file: "a.py".into(),
            line: 1,
            column: 4,
            prefix: "def f(x):\n    ".into(),
            suffix: "\n\nprint(f(1))\n".into(),
            scenario: "full_block".into(),
            context: vec![crate::engine::suggest::protocol::CompleteContext {
                file: "b.py".into(),
                start_line: 2,
                end_line: 4,
                text: "def g(x):\n    return x + 1".into(),
            }],
        };
        let Prompt::Chat { user, .. } = render_complete(&params) else {
            panic!("complete is a chat prompt")
        };
        assert_eq!(
            user,
            "<|context|>\nb.py (lines 3-4):\n```\ndef g(x):\n    return x + 1\n```\n<|/context|>\n\n\
             Task: full block\n<|file|> a.py\ndef f(x):\n    <|fill_here|>\n\nprint(f(1))\n<|/file|>\n"
        );
        assert_eq!(
            parse_complete_answer("Sure:\n```python\nreturn x * 2\n```\nDone."),
            "return x * 2\n"
        );
        assert_eq!(parse_complete_answer("```\ncut off"), "cut off");
        assert_eq!(parse_complete_answer("x<|fill_here|>"), "x");
    }

    #[test]
    fn answers_lose_their_markers_and_fences() {
        assert_eq!(
            parse_answer(
                "<|editable_region_start|>\na<|user_cursor_is_here|>\nb\n<|editable_region_end|>\nmore"
            ),
            "a\nb\n"
        );
        assert_eq!(parse_answer("```python\nx = 1\n```\n"), "x = 1\n");
        assert_eq!(
            parse_answer("<|code_to_edit|>\ny\n<|/code_to_edit|>"),
            "y\n"
        );
        assert_eq!(
            parse_answer("<|editable_region_start|>\ncut off"),
            "cut off"
        );
        assert_eq!(parse_answer("plain"), "plain");
    }

    #[test]
    fn a_rewritten_region_becomes_minimal_edits_nearest_first() {
        let text = "a\nb\nc\nd\ne\nf\n";
        let region = Region {
            file: "x".into(),
            start_line: 1,
            end_line: 6,
            cursor_line: 4,
            cursor_column: 0,
        };
        let edits = region_edits(text, &region, "B\nc\nd\nE\nnew\nf");
        let got: Vec<(usize, usize, &str)> = edits
            .iter()
            .map(|e| (e.start_line, e.end_line, e.text.as_str()))
            .collect();
        assert_eq!(got, [(4, 5, "E\nnew\n"), (1, 2, "B\n")]);
        assert!(region_edits(text, &region, "b\nc\nd\ne\nf\n").is_empty());
    }

    #[test]
    fn the_location_text_is_the_rewrite_without_its_unchanged_surroundings() {
        let text = "a\nb\nc\nd\n";
        let region = Region {
            file: "x".into(),
            start_line: 0,
            end_line: 4,
            cursor_line: 1,
            cursor_column: 0,
        };
        assert_eq!(
            location_text(text, &region, 1, 3, "a\nB\nC\nD2\nd\n"),
            "B\nC\nD2\n"
        );
        assert_eq!(
            location_text(text, &region, 2, 2, "a\nb\nnew\nc\nd"),
            "new\n"
        );
        assert_eq!(location_text(text, &region, 1, 2, "zzz"), "zzz\n");
    }
}
