//! Erasing files from a trajectory (`nextedit sessions purge`): every trace of a file's
//! text goes (its events and edits), and what refers to the removed edits goes with it
//! (order edges, gold), so the rest stays a valid trajectory.

use std::collections::BTreeSet;

use super::Trajectory;

/// `trajectory` without the files `doomed` selects (their entries, events, edits, order
/// edges and gold), or `None` when it has none of them.
pub fn without_files(trajectory: &Trajectory, doomed: impl Fn(&str) -> bool) -> Option<Trajectory> {
    if !trajectory.files.iter().any(|f| doomed(&f.path))
        && !trajectory
            .events
            .iter()
            .any(|e| e.file().is_some_and(&doomed))
        && !trajectory.edits.iter().any(|e| doomed(&e.file))
    {
        return None;
    }
    let mut t = trajectory.clone();
    let gone: BTreeSet<String> = t
        .edits
        .iter()
        .filter(|e| doomed(&e.file))
        .map(|e| e.id.clone())
        .collect();
    t.files.retain(|f| !doomed(&f.path));
    t.events.retain(|e| !e.file().is_some_and(&doomed));
    t.edits.retain(|e| !gone.contains(&e.id));
    t.order
        .edges
        .retain(|e| !gone.contains(&e.from) && !gone.contains(&e.to));
    t.order.initial.retain(|id| !gone.contains(id));
    t.order.natural.retain(|id| !gone.contains(id));
    t.gold.next_edits.retain(|id| !gone.contains(id));
    t.gold.applied.retain(|id| !gone.contains(id));
    t.gold.alternatives.retain(|a| !gone.contains(&a.of));
    t.gold.context.retain(|c| !doomed(&c.file));
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_and_everything_that_points_at_it_go() {
        let change = |seq: u64, file: &str| {
            serde_json::json!({"seq": seq, "t_ms": 0.0, "type": "change", "file": file,
                "version": 2, "start_byte": 0, "end_byte": 0, "start_line": 0, "end_line": 0,
                "new_end_line": 0, "before": "", "after": format!("{file} typed\n")})
        };
        let edit = |id: &str, file: &str| {
            serde_json::json!({"id": id, "file": file, "kind": "insert",
                "before_lines": {"start": 0, "end": 0}, "after_lines": {"start": 0, "end": 1},
                "before_text": "", "after_text": format!("{file} typed\n")})
        };
        let t: Trajectory = serde_json::from_value(serde_json::json!({
            "format": "nextedit-trajectory", "version": 1,
            "session": {"id": "1", "kind": "recorded"},
            "files": [{"path": "keep.py", "base_text": "k\n"}, {"path": "secret.py", "base_text": "s\n"}],
            "events": [change(0, "keep.py"), change(1, "secret.py")],
            "edits": [edit("e0", "keep.py"), edit("e1", "secret.py")],
            "order": {"edges": [{"from": "e0", "to": "e1", "kind": "before", "reasons": []}],
                      "initial": ["e0"], "natural": ["e0", "e1"]},
            "gold": {"next_edits": ["e1"], "context": [{"file": "secret.py", "lines": {"start": 0, "end": 1}}]}
        }))
        .unwrap();
        let erased = without_files(&t, |f| f == "secret.py").unwrap();
        let json = serde_json::to_string(&erased).unwrap();
        assert!(!json.contains("secret"), "{json}");
        assert_eq!(
            (erased.files.len(), erased.events.len(), erased.edits.len()),
            (1, 1, 1)
        );
        assert_eq!(erased.order.natural, ["e0"]);
        assert!(erased.order.edges.is_empty() && erased.gold.next_edits.is_empty());
        assert!(without_files(&t, |f| f == "other.py").is_none());
    }
}
