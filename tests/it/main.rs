//! The integration tests: one binary (one link) with a module per area, each driving
//! the real `nextedit` binary, real servers, real git repositories and real SQLite files.

mod common;
mod derive_support;

mod cli_snapshots;
mod context_cli;
mod context_recorded;
mod context_replay;
mod derive_cli;
mod derive_edges;
mod derive_editflow;
mod derive_files;
mod derive_lsp;
mod doctor;
mod editor_nvim;
mod editor_vscode;
mod git_corrupt;
mod import_cli;
mod input_checks;
mod metrics_cli;
mod metrics_contextbench;
mod metrics_properties;
mod metrics_vectors;
mod path_safety;
mod proxy_exit;
mod proxy_faults;
mod proxy_origins;
mod proxy_privacy;
mod proxy_real_servers;
mod recorder_transcripts;
mod replay_commits;
mod replay_engine;
mod replay_processes;
mod replay_recorded;
mod replay_sandbox;
mod replay_scoring;
mod sessions_cli;
mod sessions_link;
mod suggester_openai;
mod suggester_process;
mod suggester_retrieve;
mod tidy;
