//! The `nextedit` binary: clap commands only; all logic lives in the library.

#![deny(unsafe_code)]

fn main() {
    std::process::exit(nextedit_cli::run());
}

#[path = "cli/mod.rs"]
mod nextedit_cli;
