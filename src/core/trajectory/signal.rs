//! Editor signals (`$/nextedit/*`, `schemas/signals.schema.json`) as a trajectory holds
//! them: the kind as a [`SignalKind`], and the payloads readers use as typed values.
//!
//! The payload itself is kept as the editor sent it (a trajectory's JSON is the
//! recording's, byte for byte, whatever the editor added); the typed readers here are
//! the one place that looks into it, and they read it as leniently as a recording of
//! another editor or version needs: a field that is missing or mistyped is absent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a signal is about, stored as its snake_case name (`visibleRanges` →
/// `visible_ranges`); a name this build does not know is kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum SignalKind {
    /// `cursor`: the primary cursor moved.
    Cursor,
    /// `selection`: the selections changed.
    Selection,
    /// `visible_ranges`: the lines shown in the editor.
    VisibleRanges,
    /// `focus`: a document gained or lost focus.
    Focus,
    /// `suggestion`: what the editor did with an inline suggestion.
    Suggestion,
    /// `replay_step`: a replay suggester's step and call starts.
    ReplayStep,
    /// Another name, kept as written.
    Other(String),
}

impl SignalKind {
    /// The name stored in trajectories and the database.
    pub fn as_str(&self) -> &str {
        match self {
            SignalKind::Cursor => "cursor",
            SignalKind::Selection => "selection",
            SignalKind::VisibleRanges => "visible_ranges",
            SignalKind::Focus => "focus",
            SignalKind::Suggestion => "suggestion",
            SignalKind::ReplayStep => "replay_step",
            SignalKind::Other(name) => name,
        }
    }
}

impl From<String> for SignalKind {
    fn from(name: String) -> SignalKind {
        match name.as_str() {
            "cursor" => SignalKind::Cursor,
            "selection" => SignalKind::Selection,
            "visible_ranges" => SignalKind::VisibleRanges,
            "focus" => SignalKind::Focus,
            "suggestion" => SignalKind::Suggestion,
            "replay_step" => SignalKind::ReplayStep,
            _ => SignalKind::Other(name),
        }
    }
}

impl From<&str> for SignalKind {
    fn from(name: &str) -> SignalKind {
        SignalKind::from(name.to_string())
    }
}

impl From<SignalKind> for String {
    fn from(kind: SignalKind) -> String {
        kind.as_str().to_string()
    }
}

impl std::fmt::Display for SignalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An LSP range a `selection` or `visible_ranges` signal names (0-based lines and
/// characters in the session's position encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignalRange {
    /// First line.
    pub start_line: u64,
    /// Last line (or one past it, when `end_character` is 0).
    pub end_line: u64,
    /// The end's character on `end_line`.
    pub end_character: u64,
}

impl SignalRange {
    /// The ranges of a `selection` (`selections`) or `visible_ranges` (`ranges`)
    /// payload, those that are ranges; none for another kind.
    pub fn read_all(kind: &SignalKind, payload: &Value) -> Vec<SignalRange> {
        let key = match kind {
            SignalKind::Selection => "selections",
            SignalKind::VisibleRanges => "ranges",
            _ => return Vec::new(),
        };
        (payload[key].as_array().into_iter().flatten())
            .filter_map(SignalRange::read)
            .collect()
    }

    fn read(range: &Value) -> Option<SignalRange> {
        let num = |p: &str| range.pointer(p).and_then(Value::as_u64);
        Some(SignalRange {
            start_line: num("/start/line")?,
            end_line: num("/end/line")?,
            end_character: num("/end/character")?,
        })
    }
}

/// What the editor did with an inline suggestion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuggestionEvent {
    /// Shown.
    Shown,
    /// Dismissed without taking it.
    Hidden,
    /// Taken in full.
    Accepted,
    /// A prefix of it taken.
    AcceptedPart,
    /// Another event name, kept as sent.
    Other(String),
}

impl SuggestionEvent {
    /// The name the editor sends.
    pub fn as_str(&self) -> &str {
        match self {
            SuggestionEvent::Shown => "shown",
            SuggestionEvent::Hidden => "hidden",
            SuggestionEvent::Accepted => "accepted",
            SuggestionEvent::AcceptedPart => "accepted_part",
            SuggestionEvent::Other(name) => name,
        }
    }

    fn parse(name: &str) -> SuggestionEvent {
        match name {
            "shown" => SuggestionEvent::Shown,
            "hidden" => SuggestionEvent::Hidden,
            "accepted" => SuggestionEvent::Accepted,
            "accepted_part" => SuggestionEvent::AcceptedPart,
            other => SuggestionEvent::Other(other.to_string()),
        }
    }
}

/// A `suggestion` signal's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestionSignal {
    /// What happened.
    pub event: SuggestionEvent,
    /// The item's full text, naming which item it was.
    pub text: Option<String>,
    /// How much of the text was taken (`acceptedLength`).
    pub accepted_length: Option<u64>,
}

impl SuggestionSignal {
    /// The payload read as a `suggestion`'s; `None` without an `event` string.
    pub fn read(payload: &Value) -> Option<SuggestionSignal> {
        Some(SuggestionSignal {
            event: SuggestionEvent::parse(payload.get("event")?.as_str()?),
            text: (payload.get("text").and_then(Value::as_str)).map(str::to_string),
            accepted_length: payload.get("acceptedLength").and_then(Value::as_u64),
        })
    }
}

/// Which call of a replay step a `replay_step` signal starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepCall {
    /// `suggest` (also what a missing or unknown call means).
    Suggest,
    /// `generate`.
    Generate,
}

/// A `replay_step` signal's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayStepSignal {
    /// The step; `None` when the payload names none (the reads after it belong to no step).
    pub step: Option<usize>,
    /// The call.
    pub call: StepCall,
}

impl ReplayStepSignal {
    /// The payload read as a `replay_step`'s.
    pub fn read(payload: &Value) -> ReplayStepSignal {
        ReplayStepSignal {
            step: payload["step"].as_u64().map(|n| n as usize),
            call: match payload["call"].as_str() {
                Some("generate") => StepCall::Generate,
                _ => StepCall::Suggest,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_read_back_as_written_and_payloads_leniently() {
        for name in [
            "cursor",
            "selection",
            "visible_ranges",
            "focus",
            "suggestion",
            "replay_step",
            "later",
        ] {
            let kind: SignalKind = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
            assert_eq!(kind == SignalKind::Other(name.into()), name == "later");
        }
        assert_eq!(
            SuggestionSignal::read(
                &json!({"event": "accepted_part", "text": "x", "acceptedLength": 3})
            ),
            Some(SuggestionSignal {
                event: SuggestionEvent::AcceptedPart,
                text: Some("x".into()),
                accepted_length: Some(3),
            })
        );
        assert_eq!(SuggestionSignal::read(&json!({"text": "x"})), None);
        let range = |l, c| json!({"start": {"line": 1, "character": 0}, "end": {"line": l, "character": c}});
        assert_eq!(
            SignalRange::read_all(
                &SignalKind::Selection,
                &json!({"selections": [range(2, 4), {"start": 1}]})
            ),
            [SignalRange {
                start_line: 1,
                end_line: 2,
                end_character: 4
            }]
        );
        assert!(
            SignalRange::read_all(&SignalKind::Focus, &json!({"ranges": [range(2, 0)]})).is_empty()
        );
        assert_eq!(
            ReplayStepSignal::read(&json!({"step": 2, "call": "generate"})),
            ReplayStepSignal {
                step: Some(2),
                call: StepCall::Generate
            }
        );
        assert_eq!(
            ReplayStepSignal::read(&Value::Null),
            ReplayStepSignal {
                step: None,
                call: StepCall::Suggest
            }
        );
    }
}
