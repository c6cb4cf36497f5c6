//! `nextedit replay --session`'s slicing arguments: which part of a stored session to
//! replay (`--from`, `--to`, `--file`), and how its changes coalesce into edits
//! (`--pause-ms`).

use clap::Args;
use nextedit::core::trajectory::SliceBound;

/// The part of each `--session` to replay.
#[derive(Debug, Args)]
pub struct SessionSliceArgs {
    /// With --session: replay only the part from this event seq or time (90s, 5m, 1500ms)
    #[arg(long, value_name = "SEQ|TIME", requires = "session")]
    pub(super) from: Option<SliceBound>,

    /// With --session: replay only the part up to this event seq or time
    #[arg(long, value_name = "SEQ|TIME", requires = "session")]
    pub(super) to: Option<SliceBound>,

    /// With --session: replay only the edits of this file (can be repeated)
    #[arg(long = "file", value_name = "PATH", requires = "session")]
    pub(super) files: Vec<String>,

    /// With --session: a pause longer than this ends an edit when coalescing a recorded
    /// session's changes [default: 2000]
    #[arg(long, value_name = "MS", requires = "session", allow_negative_numbers = true, value_parser = nextedit::base::ranges::pause_ms)]
    pub(super) pause_ms: Option<f64>,
}
