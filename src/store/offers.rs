//! The `offers` table (schema v7): what language servers offered in recorded
//! sessions, one row per item, written with the session's other records
//! ([`super::sessions`]) and read back typed ([`super::OfferRead::offers`]). An offer's edits
//! are one JSON text column; its form is converted only here.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Database, StoreError};
use crate::core::lsp::OfferKind;
use crate::core::record::document::{LspPosition, LspRange};
use crate::core::record::{OfferEdit, OfferRecord, OfferSpan};

/// One stored offer with what the session knows of its document.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredOffer {
    /// The offer as recorded (texts masked).
    pub offer: OfferRecord,
    /// The request's document path (workspace-relative when inside it), if known.
    pub path: Option<String>,
    /// The privacy rules excluded that document (the offer keeps no text then).
    pub excluded: bool,
}

/// An edit in the `edits` column: byte offsets, or an LSP range for a document
/// that was not open at the answer.
#[derive(Serialize, Deserialize)]
struct EditRow<S> {
    uri: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_byte: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_byte: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<PositionRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end: Option<PositionRow>,
    text: S,
}

#[derive(Serialize, Deserialize)]
struct PositionRow {
    line: u32,
    character: u32,
}

/// The `edits` column of an offer.
pub(super) fn edits_json(edits: &[OfferEdit]) -> String {
    // Borrowed: written for every offer, a hundred per completion answer.
    let rows: Vec<EditRow<&str>> = edits
        .iter()
        .map(|e| {
            let (start_byte, end_byte, start, end) = match e.at {
                OfferSpan::Bytes(s, end) => (Some(s), Some(end), None, None),
                OfferSpan::Lsp(r) => (
                    None,
                    None,
                    Some(PositionRow {
                        line: r.start.line,
                        character: r.start.character,
                    }),
                    Some(PositionRow {
                        line: r.end.line,
                        character: r.end.character,
                    }),
                ),
            };
            EditRow {
                uri: e.uri.as_str(),
                start_byte,
                end_byte,
                start,
                end,
                text: e.text.as_str(),
            }
        })
        .collect();
    serde_json::to_string(&rows).expect("edits serialise")
}

fn parse_edits(json: &str) -> Option<Vec<OfferEdit>> {
    let rows: Vec<EditRow<String>> = serde_json::from_str(json).ok()?;
    rows.into_iter()
        .map(|r| {
            let at = match (r.start_byte, r.end_byte, r.start, r.end) {
                (Some(s), Some(e), _, _) => OfferSpan::Bytes(s, e),
                (_, _, Some(s), Some(e)) => OfferSpan::Lsp(LspRange {
                    start: LspPosition {
                        line: s.line,
                        character: s.character,
                    },
                    end: LspPosition {
                        line: e.line,
                        character: e.character,
                    },
                }),
                _ => return None,
            };
            Some(OfferEdit {
                uri: r.uri,
                at,
                text: r.text,
            })
        })
        .collect()
}

/// A column that does not hold what the schema says.
fn bad_column(column: usize, what: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        rusqlite::types::Type::Text,
        format!("offers: {what}").into(),
    )
}

/// Reading the offers (completion items, code actions, …) a session recorded.
pub trait OfferRead {
    /// Every offer of a recorded session, in answer order then rank.
    fn offers(&self, session: i64) -> Result<Vec<StoredOffer>, StoreError>;
}

impl OfferRead for Database {
    fn offers(&self, session: i64) -> Result<Vec<StoredOffer>, StoreError> {
        let known = self.rows(
            "SELECT 1 FROM sessions WHERE id = ?1",
            [session],
            |_| Ok(()),
        )?;
        if known.is_empty() {
            return Err(StoreError::NoSession(session));
        }
        self.rows(
            "SELECT o.seq, o.rank, o.request_seq, o.t_ns, o.latency_ns, o.kind, o.method, o.uri,
                    o.line, o.col_byte, o.label, o.text, o.edits, o.list_size, o.incomplete,
                    d.path, d.excluded
               FROM offers o LEFT JOIN documents d ON d.session_id = o.session_id AND d.uri = o.uri
              WHERE o.session_id = ?1 ORDER BY o.seq, o.rank",
            params![session],
            |r| {
                let kind: String = r.get(5)?;
                let edits: String = r.get(12)?;
                let line: Option<i64> = r.get(8)?;
                let col: Option<i64> = r.get(9)?;
                Ok(StoredOffer {
                    offer: OfferRecord {
                        seq: r.get::<_, i64>(0)? as u64,
                        rank: r.get::<_, i64>(1)? as usize,
                        request_seq: r.get::<_, i64>(2)? as u64,
                        t_ns: r.get::<_, i64>(3)? as u64,
                        latency_ns: r.get::<_, i64>(4)? as u64,
                        kind: OfferKind::parse(&kind)
                            .ok_or_else(|| bad_column(5, &format!("unknown kind {kind:?}")))?,
                        method: r.get(6)?,
                        uri: r.get(7)?,
                        position: line.zip(col).map(|(l, c)| (l as usize, c as usize)),
                        label: r.get(10)?,
                        text: r.get(11)?,
                        edits: parse_edits(&edits)
                            .ok_or_else(|| bad_column(12, "edits are not a list of edits"))?,
                        list_size: r.get::<_, i64>(13)? as usize,
                        incomplete: r.get(14)?,
                    },
                    path: r.get(15)?,
                    excluded: r.get::<_, Option<bool>>(16)?.unwrap_or(false),
                })
            },
        )
    }
}
