//! Old-file line numbers touched by a unified diff, for EditLoc.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

static HUNK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@").expect("valid regex")
});

/// Lines of the old file per path.
pub type LinesByFile = BTreeMap<String, Vec<i64>>;

/// The reference evaluator's `parse_diff_lines(patch, deletions_only=True)`, quirks kept.
///
/// The file comes from `+++ b/<path>` only (a `+++ /dev/null` keeps the previous file);
/// a hunk body ends at a line starting with `@@`, `diff ` or `---` (so a deleted line
/// whose text starts with `--` ends it).
pub fn deleted_lines_compat(patch: &str) -> LinesByFile {
    let mut out: LinesByFile = BTreeMap::new();
    let lines: Vec<&str> = patch.lines().collect();
    let mut file: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(p) = line.strip_prefix("+++ b/") {
            file = Some(p.trim_end().to_owned());
            i += 1;
            continue;
        }
        if let Some(c) = HUNK.captures(line) {
            let mut old: i64 = c[1].parse().unwrap_or(0);
            i += 1;
            while i < lines.len() {
                let l = lines[i];
                if l.starts_with("@@") || l.starts_with("diff ") || l.starts_with("---") {
                    break;
                }
                if l.starts_with('-') {
                    if let Some(f) = &file {
                        out.entry(f.clone()).or_default().push(old);
                    }
                    old += 1;
                } else if l.starts_with('+') {
                } else {
                    old += 1;
                }
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    out
}

/// Old-file lines a patch deletes or replaces, parsed properly (fixed mode).
///
/// The path is the `+++` path, or the `---` path for deleted files; hunk bodies are
/// delimited by the header counts; a pure insertion localises to the old line it
/// follows (line 1 at the top of the file).
pub fn edited_lines(patch: &str) -> LinesByFile {
    let mut out: LinesByFile = BTreeMap::new();
    let lines: Vec<&str> = patch.lines().collect();
    let mut minus_path: Option<String> = None;
    let mut file: Option<String> = None;
    let strip = |p: &str| -> Option<String> {
        let p = p.split('\t').next().unwrap_or(p).trim_end();
        if p == "/dev/null" {
            return None;
        }
        Some(
            p.strip_prefix("a/")
                .or_else(|| p.strip_prefix("b/"))
                .unwrap_or(p)
                .to_owned(),
        )
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(p) = line.strip_prefix("--- ") {
            minus_path = strip(p);
            i += 1;
            continue;
        }
        if let Some(p) = line.strip_prefix("+++ ") {
            file = strip(p).or_else(|| minus_path.clone());
            i += 1;
            continue;
        }
        if let Some(c) = HUNK.captures(line) {
            let mut old: i64 = c[1].parse().unwrap_or(0);
            let mut old_left: i64 = c.get(2).map_or(Ok(1), |m| m.as_str().parse()).unwrap_or(1);
            let mut new_left: i64 = c.get(4).map_or(Ok(1), |m| m.as_str().parse()).unwrap_or(1);
            if old_left == 0 {
                // `-a,0`: the hunk inserts after line a.
                old += 1;
            }
            i += 1;
            let mut prev_minus = false;
            while i < lines.len() && (old_left > 0 || new_left > 0) {
                let l = lines[i];
                let target = file.clone();
                if l.starts_with('-') {
                    if let Some(f) = target {
                        out.entry(f).or_default().push(old);
                    }
                    old += 1;
                    old_left -= 1;
                    prev_minus = true;
                } else if l.starts_with('+') {
                    if !prev_minus {
                        if let Some(f) = target {
                            out.entry(f).or_default().push((old - 1).max(1));
                        }
                    }
                    new_left -= 1;
                } else if l.starts_with('\\') {
                    // "\ No newline at end of file"
                } else {
                    old += 1;
                    old_left -= 1;
                    new_left -= 1;
                    prev_minus = false;
                }
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    for v in out.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compat_keeps_dev_null_quirk() {
        let patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n--- a/y.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-c\n-d\n";
        let compat = deleted_lines_compat(patch);
        assert_eq!(compat["x.py"], vec![1, 1, 2]);
        let fixed = edited_lines(patch);
        assert_eq!(fixed["x.py"], vec![1]);
        assert_eq!(fixed["y.py"], vec![1, 2]);
    }

    #[test]
    fn fixed_counts_insertions_and_dash_lines() {
        let patch =
            "--- a/x.py\n+++ b/x.py\n@@ -3,0 +4,1 @@\n+new\n@@ -7,2 +8,1 @@\n---x\n-y\n+z\n";
        assert_eq!(edited_lines(patch)["x.py"], vec![3, 7, 8]);
        assert_eq!(deleted_lines_compat(patch).get("x.py"), None);
    }
}
