//! The recording proxy between an editor and a language server.
