//! Content-Length framing, message envelopes and a small LSP client.
