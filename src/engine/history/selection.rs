//! What a commit range selected, said in one line before any work starts.

use super::Selection;

/// `v1.0..HEAD: 43 commits, 41 merges skipped` (`derive --range`, `replay --range`).
pub fn describe_selection(spec: &str, selection: &Selection) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut line = format!(
        "{spec}: {}",
        plural(selection.commits.len(), "commit", "commits")
    );
    if selection.merges_skipped > 0 {
        line += &format!(
            ", {} skipped",
            plural(selection.merges_skipped, "merge", "merges")
        );
    }
    if selection.commits.is_empty() && selection.merges_skipped == 0 {
        line += " (the range is empty)";
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_spelled_out() {
        let selection = |commits: usize, merges_skipped| Selection {
            commits: (0..commits).map(|i| format!("{i:040}")).collect(),
            merges_skipped,
        };
        assert_eq!(
            describe_selection("A..B", &selection(1, 0)),
            "A..B: 1 commit"
        );
        assert_eq!(
            describe_selection("A..B", &selection(43, 41)),
            "A..B: 43 commits, 41 merges skipped"
        );
        assert_eq!(
            describe_selection("A..B", &selection(0, 1)),
            "A..B: 0 commits, 1 merge skipped"
        );
        assert_eq!(
            describe_selection("A..B", &selection(0, 0)),
            "A..B: 0 commits (the range is empty)"
        );
    }
}
