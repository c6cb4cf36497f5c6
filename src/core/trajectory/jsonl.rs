//! The JSONL form of a trajectory (`nextedit sessions export --format jsonl`).
//!
//! One JSON object per line, each tagged with its `type`: the `session` header
//! (with `format` and `version`), one `file` per file, one `event` per event, one
//! `edit` per edit, the `order`, and the `gold` when there is any. Each line is
//! built from a [`JsonlRecord`] through `serde_json::Value`, so object keys come out
//! as they always have (sorted, unless serde_json keeps insertion order): the
//! format is a wire format and does not change with the Rust types behind it.

use std::io::Write;

use serde::Serialize;

use super::{Edit, Event, FileEntry, Gold, PartialOrder, SessionInfo, Trajectory};

/// One line of a trajectory's JSONL export.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum JsonlRecord<'a> {
    /// The header: format, version and who, where and when.
    Session {
        /// Always the trajectory's `format`.
        format: &'a str,
        /// The trajectory's `version`.
        version: u32,
        /// The session header.
        session: &'a SessionInfo,
    },
    /// A file the session touched, with its base text.
    File {
        /// The file.
        file: &'a FileEntry,
    },
    /// One event, in order.
    Event {
        /// The event.
        event: &'a Event,
    },
    /// One coalesced edit.
    Edit {
        /// The edit.
        edit: &'a Edit,
    },
    /// The partial order over the edits (always written).
    Order {
        /// The order.
        order: &'a PartialOrder,
    },
    /// The gold, only when the trajectory has any.
    Gold {
        /// The gold.
        gold: &'a Gold,
    },
}

/// The records of `trajectory`'s JSONL export, in the order they are written.
pub fn jsonl_records(trajectory: &Trajectory) -> impl Iterator<Item = JsonlRecord<'_>> {
    let header = JsonlRecord::Session {
        format: &trajectory.format,
        version: trajectory.version,
        session: &trajectory.session,
    };
    std::iter::once(header)
        .chain(
            trajectory
                .files
                .iter()
                .map(|file| JsonlRecord::File { file }),
        )
        .chain(
            trajectory
                .events
                .iter()
                .map(|event| JsonlRecord::Event { event }),
        )
        .chain(
            trajectory
                .edits
                .iter()
                .map(|edit| JsonlRecord::Edit { edit }),
        )
        .chain(std::iter::once(JsonlRecord::Order {
            order: &trajectory.order,
        }))
        .chain((!trajectory.gold.is_empty()).then_some(JsonlRecord::Gold {
            gold: &trajectory.gold,
        }))
}

/// Writes `trajectory` as JSONL to `sink`, one record per line.
pub fn write_jsonl(trajectory: &Trajectory, mut sink: impl Write) -> std::io::Result<()> {
    for record in jsonl_records(trajectory) {
        let line = serde_json::to_value(&record).map_err(std::io::Error::other)?;
        writeln!(sink, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged_and_gold_is_left_out_when_empty() {
        let trajectory = Trajectory::new(SessionInfo::new(
            "1",
            crate::core::trajectory::SessionKind::Recorded,
        ));
        let mut out = Vec::new();
        write_jsonl(&trajectory, &mut out).unwrap();
        let types: Vec<String> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
            .collect();
        assert_eq!(types, ["\"session\"", "\"order\""]);
    }
}
