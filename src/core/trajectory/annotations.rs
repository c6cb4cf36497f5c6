//! What analysis found about one edit (`edits[].annotations`), one typed field per
//! finding.
//!
//! The JSON form is an object with only the findings made, in the order of the fields
//! here (the order their producers wrote them in: derive writes `hunk`,
//! `identifiers`, `structure`, then `--lsp` adds `lsp_refuted`; coalescing writes
//! `reverts`; the Copilot import adds `next_user_edit` and `original_op_idx`). A key
//! this build does not know (a trajectory written by another tool) is kept, after
//! them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ReasonKind;

/// The analysis results of one edit.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Annotations {
    /// The edit's index among its commit's hunks (commit-derived edits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunk: Option<usize>,
    /// The identifiers defined, used and imported around the edit in the parent and
    /// the child, and those it adds, removes and renames (commit-derived edits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifiers: Option<Value>,
    /// The constructs around the edit (`type`, `name`, `signature`, `at_line`),
    /// outermost first, when there are any (commit-derived edits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structure: Option<Vec<Value>>,
    /// The reasons linking another edit to this one that `derive --lsp` refuted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lsp_refuted: Vec<RefutedReason>,
    /// The id of the edit this one undoes (recorded edits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverts: Option<String>,
    /// The edit is the next edit a Copilot-dataset session asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_user_edit: Option<bool>,
    /// The dataset's `originalOpIdx` of that next edit, as it wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_op_idx: Option<Value>,
    /// Keys this build does not know, kept as written.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Annotations {
    /// True when nothing was found (the edit's JSON then has no `annotations`).
    pub fn is_empty(&self) -> bool {
        *self == Annotations::default()
    }
}

/// A reason `derive --lsp` refuted: the language server resolved the use elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefutedReason {
    /// The edit the reason said this one depends on.
    pub from: String,
    /// The reason's kind.
    pub kind: ReasonKind,
    /// The symbol or short description of the reason.
    pub detail: String,
    /// Where the server resolved the use instead (`path:line`, or a place outside the
    /// tree).
    pub resolved: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_has_the_findings_made_in_order_and_keeps_unknown_keys() {
        let text = r#"{"hunk":2,"identifiers":{"added":["x"]},"lsp_refuted":[{"from":"e0","kind":"def_use","detail":"x","resolved":"a.py:3"}],"later":[1]}"#;
        let read: Annotations = serde_json::from_str(text).unwrap();
        assert_eq!(read.hunk, Some(2));
        assert_eq!(
            read.lsp_refuted[0].kind,
            ReasonKind::Dependency(super::super::DependencyKind::DefUse)
        );
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        assert_eq!(
            serde_json::to_string(&Annotations::default()).unwrap(),
            "{}"
        );
        assert!(Annotations::default().is_empty());
        let reverts = Annotations {
            reverts: Some("e5".into()),
            ..Annotations::default()
        };
        assert_eq!(
            serde_json::to_string(&reverts).unwrap(),
            r#"{"reverts":"e5"}"#
        );
    }
}
