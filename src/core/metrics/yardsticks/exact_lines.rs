//! Zed's exact-lines match: the added and removed lines of two unified diffs compared as
//! bags (order ignored, multiplicity counted), giving TP/FP/FN and precision, recall, F1.
//!
//! A line counts when it starts with `+` or `-` and is not a header (`---`, `+++`, `@@`,
//! `diff `, `index `); its prefix stays part of it, so an addition never matches a
//! removal. Lines are split as Rust's `str::lines` does (`\n`, an optional `\r` before it).
//! Equal to `metrics.rs::exact_lines_match` at the commit named in `docs/metrics.md`.

use std::collections::HashMap;

use super::bag::BagMatch;

/// Agreement of the changed lines of `actual_patch` with those of `expected_patch`.
pub fn exact_lines(expected_patch: &str, actual_patch: &str) -> BagMatch {
    BagMatch::of(&changed_lines(expected_patch), &changed_lines(actual_patch))
}

const HEADERS: [&str; 5] = ["---", "+++", "@@", "diff ", "index "];

/// The bag of `+`/`-` lines of a unified diff, headers left out.
fn changed_lines(patch: &str) -> HashMap<&str, usize> {
    let mut bag = HashMap::new();
    for line in patch.lines() {
        let header = HEADERS.iter().any(|h| line.starts_with(h));
        if !header && (line.starts_with('+') || line.starts_with('-')) {
            *bag.entry(line).or_default() += 1;
        }
    }
    bag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_skipped_and_prefixes_kept() {
        let e = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+x\n+y\n+y\n";
        let m = exact_lines(e, "+x\n+y\n-y\n");
        assert_eq!((m.tp, m.fp, m.fn_), (2, 1, 2));
    }
}
