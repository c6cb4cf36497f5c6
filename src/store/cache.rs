//! The response cache's table (`response_cache`, schema v4), behind
//! `suggest::cache::ResponseStore`: answers by suggester spec, repetition, call and
//! request hash, each with the run that stored it (deleted with that run) and the
//! suggester's own latency. The spec is kept masked
//! ([`crate::base::secrets::stored_spec`]), looked up masked too.

use rusqlite::{OptionalExtension, params};

use super::{Database, StoreError, sqlite};
use crate::engine::suggest::cache::{CacheKey, CachedAnswer, ResponseStore, ResponseStoreError};
use crate::engine::suggest::{CallFailure, FailureKind};

/// A database's response cache, writing entries on behalf of one run.
pub struct ResponseCache {
    db: Database,
    run: i64,
}

impl ResponseCache {
    /// The cache in `db`; entries stored through it belong to run `run`.
    pub fn new(db: Database, run: i64) -> ResponseCache {
        ResponseCache { db, run }
    }
}

/// The response cache's rows: answers looked up and stored by key.
pub trait AnswerCache {
    /// The answer cached under `key`, if any.
    fn cached_answer(&self, key: &CacheKey) -> Result<Option<CachedAnswer>, StoreError>;

    /// Stores (or replaces) the answer under `key`, on behalf of run `run`.
    fn cache_answer(
        &mut self,
        key: &CacheKey,
        answer: &CachedAnswer,
        run: i64,
    ) -> Result<(), StoreError>;
}

impl AnswerCache for Database {
    fn cached_answer(&self, key: &CacheKey) -> Result<Option<CachedAnswer>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT result, failure_kind, failure_message, latency_ms FROM response_cache
                  WHERE suggester = ?1 AND repetition = ?2 AND call = ?3 AND request = ?4",
                params![
                    crate::base::secrets::stored_spec(&key.suggester),
                    key.repetition,
                    key.call.key(),
                    key.request
                ],
                |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, f64>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(row.and_then(|(result, kind, message, latency_ms)| {
            let result = match (result, kind) {
                (Some(json), _) => Ok(serde_json::from_str(&json).ok()?),
                // A kind this build does not know is no answer it can reproduce.
                (None, Some(kind)) => Err(CallFailure {
                    kind: FailureKind::from_key(&kind)?,
                    message: crate::base::secrets::scrub(&message.unwrap_or_default()).into_owned(),
                }),
                (None, None) => return None,
            };
            Some(CachedAnswer { result, latency_ms })
        }))
    }

    fn cache_answer(
        &mut self,
        key: &CacheKey,
        answer: &CachedAnswer,
        run: i64,
    ) -> Result<(), StoreError> {
        let (result, kind, message) = match &answer.result {
            Ok(json) => (
                Some(crate::base::secrets::mask_known(&json.to_string()).into_owned()),
                None,
                None,
            ),
            Err(f) => (
                None,
                Some(f.kind.key()),
                Some(crate::base::secrets::scrub(&f.message).into_owned()),
            ),
        };
        self.conn
            .execute(
                "INSERT OR REPLACE INTO response_cache (suggester, repetition, call, request, result,
                        failure_kind, failure_message, latency_ms, run_id, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    crate::base::secrets::stored_spec(&key.suggester),
                    key.repetition,
                    key.call.key(),
                    key.request,
                    result,
                    kind,
                    message,
                    answer.latency_ms,
                    run,
                    super::runs::now()
                ],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }
}

impl ResponseStore for ResponseCache {
    fn cached(&self, key: &CacheKey) -> Result<Option<CachedAnswer>, ResponseStoreError> {
        (self.db.cached_answer(key)).map_err(|e| ResponseStoreError(Box::new(e)))
    }

    fn store(&mut self, key: &CacheKey, answer: &CachedAnswer) -> Result<(), ResponseStoreError> {
        (self.db.cache_answer(key, answer, self.run)).map_err(|e| ResponseStoreError(Box::new(e)))
    }
}
