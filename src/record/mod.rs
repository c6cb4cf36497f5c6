//! Frames → trajectory events: document tracking, reads, signals, privacy filters.
