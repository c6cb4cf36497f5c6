//! The values the store keeps as text in a column (statuses), as enums: written with
//! their exact spelling ([`RunStatus::as_str`], …), so old databases open and outputs
//! stay the same; a spelling this build does not know, read from a database, is an
//! error naming the table, the column and the value ([`super::StoreError::UnknownValue`]).

/// An enum stored as text: its variants with their spellings, `as_str`, `parse`,
/// `Display` (padded like a string), `Serialize` as the spelling, and [`StoredText`].
macro_rules! stored_text {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Its spelling in the database.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            /// The value spelled `text`, if this build knows it.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        /// Compared with its spelling (what callers and tests held before it was typed).
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl StoredText for $name {
            fn parse_text(text: &str) -> Option<Self> {
                Self::parse(text)
            }
        }
    };
}

/// A value stored as text (see [`stored_text!`]).
pub(super) trait StoredText: Sized {
    /// The value spelled `text`, if this build knows it.
    fn parse_text(text: &str) -> Option<Self>;
}

/// A value read from a database that this build does not know.
#[derive(Debug, thiserror::Error)]
#[error("table {table}, column {column}: unknown value {value:?}")]
pub(super) struct UnknownValue {
    /// The table.
    pub(super) table: &'static str,
    /// The column.
    pub(super) column: &'static str,
    /// The value, scrubbed of secrets.
    pub(super) value: String,
}

/// Column `index` of `row`, `table.column`, as a `T`; a spelling `T` does not know is
/// an [`UnknownValue`] (the store's error then names it).
pub(super) fn stored<T: StoredText>(
    row: &rusqlite::Row<'_>,
    index: usize,
    table: &'static str,
    column: &'static str,
) -> rusqlite::Result<T> {
    let text: String = row.get(index)?;
    T::parse_text(&text).ok_or_else(|| unknown(index, table, column, &text))
}

stored_text! {
    /// Where a replay run is (`runs.status`).
    RunStatus {
        /// Its process is replaying it (or was killed before it could say otherwise).
        Running = "running",
        /// Every trajectory was replayed (or failed on its own).
        Done = "done",
        /// Its process stopped before it finished; `--resume` goes on from its steps.
        Interrupted = "interrupted",
        /// Merged from shards, some of which were missing.
        Partial = "partial",
    }
}

stored_text! {
    /// Where a trajectory of a replay run is (`run_trajectories.status`).
    TrajectoryStatus {
        /// Not started.
        Pending = "pending",
        /// Being replayed.
        Running = "running",
        /// Replayed to its end.
        Done = "done",
        /// It failed (the reason in `error`).
        Failed = "failed",
        /// Its run's process stopped while it was being replayed.
        Interrupted = "interrupted",
        /// In a merged run, no shard brought it.
        Missing = "missing",
    }
}

stored_text! {
    /// How a recorded session is (`sessions.status`).
    SessionStatus {
        /// Its proxy is recording it (or was killed before it could say otherwise).
        Running = "running",
        /// The server exited or the editor went away.
        Ended = "ended",
        /// The proxy was stopped by a signal.
        Signalled = "signalled",
        /// Frames were lost (`dropped`); its exit code still says how it ended.
        Incomplete = "incomplete",
    }
}

/// The spelling of a value whose serde form is a string (the task enums of
/// [`crate::engine::task`], `snake_case`): what the store writes for it.
pub fn text_of<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        // Only unit variants are stored this way.
        other => unreachable!("a value stored as text serializes as a string, not {other:?}"),
    }
}

/// [`stored`] of a column that may be NULL.
pub(super) fn stored_option<T: StoredText>(
    row: &rusqlite::Row<'_>,
    index: usize,
    table: &'static str,
    column: &'static str,
) -> rusqlite::Result<Option<T>> {
    match row.get::<_, Option<String>>(index)? {
        Some(_) => stored(row, index, table, column).map(Some),
        None => Ok(None),
    }
}

/// [`StoredText`] of enums spelled by their serde form ([`text_of`]).
macro_rules! stored_as_serde {
    ($($name:ty),+) => {
        $(impl StoredText for $name {
            fn parse_text(text: &str) -> Option<Self> {
                serde_json::from_value(serde_json::Value::String(text.to_string())).ok()
            }
        })+
    };
}

stored_as_serde!(
    crate::engine::task::Scenario,
    crate::engine::task::DependencyLevel,
    crate::engine::task::ContextFrom
);

/// The error of a column holding `text`, a value this build does not know.
fn unknown(index: usize, table: &'static str, column: &'static str, text: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        index,
        rusqlite::types::Type::Text,
        Box::new(UnknownValue {
            table,
            column,
            value: crate::base::secrets::scrub(text).into_owned(),
        }),
    )
}
