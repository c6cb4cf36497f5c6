//! The services the CLI calls: replay runs, stored sessions, the recording proxy,
//! datasets, task runs, the setup check, and the inputs they read from disk. They use
//! every layer below (`store`, `engine`, `core`, `base`).

pub mod contextbench_io;
pub mod dataset;
pub mod git_fetch;
pub mod import_io;
pub mod proxy;
pub mod resume;
pub mod run;
pub mod sessions;
pub mod setup_check;
pub mod tasks;
pub mod text_inputs;
pub mod zed_examples;
