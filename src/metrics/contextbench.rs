//! ContextBench metrics.
/// Placeholder.
pub trait RepoView {}
