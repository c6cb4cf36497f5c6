//! A check of a repository's loose objects before libgit2 reads them.
//!
//! The bundled libgit2 (1.9.7, the newest `libgit2-sys` on crates.io) loops forever,
//! burning a core, when it inflates a truncated loose object (libgit2 issue 7342,
//! fixed upstream by PR 7346 after that release). Until a release carries the fix,
//! every repository nextedit opens for reading has its loose objects inflated here
//! first, with flate2: a stream that ends before zlib's end marker, or whose length
//! differs from its `<type> <size>\0` header, is reported as corrupt instead of ever
//! reaching libgit2. Packed objects are not affected (a pack's index and trailer
//! bound it). The cost is one inflate of every loose object, once per process
//! (figures in docs/derive.md); repositories keep most objects packed.
//! `GitRepository::open` and `GitRepository::discover` call it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use flate2::{Decompress, FlushDecompress, Status};

/// A loose object that libgit2 must not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("git object {object} ({path}) is corrupt: {what}")]
pub struct CorruptObject {
    /// The object id (hex), from its file name.
    pub object: String,
    /// Its file.
    pub path: PathBuf,
    /// What is wrong (truncated stream, length mismatch, unreadable…).
    pub what: String,
}

/// Loose object files (path, length) found whole by this process.
static CHECKED: Mutex<BTreeSet<(PathBuf, u64)>> = Mutex::new(BTreeSet::new());

/// Checks every loose object under `objects_dir` (`.git/objects`) not yet checked by
/// this process; the first corrupt one is the error, else the number inflated. A
/// missing directory is fine (nothing to check).
pub fn check_loose_objects(objects_dir: &Path) -> Result<usize, CorruptObject> {
    let Ok(fanout) = std::fs::read_dir(objects_dir) else {
        return Ok(0);
    };
    let mut checked = 0;
    let mut buf = vec![0u8; 64 * 1024];
    for dir in fanout.flatten() {
        let name = dir.file_name();
        let Some(prefix) = name.to_str().filter(|n| is_hex(n, 2)) else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let rest = entry.file_name();
            let Some(rest) = rest.to_str().filter(|n| is_hex(n, 38) || is_hex(n, 62)) else {
                continue;
            };
            let path = entry.path();
            // Loose objects are named by their content, so a file already found whole
            // with the same length needs no second inflate in this process (replay opens
            // one repository once per trajectory).
            let key = (path.clone(), entry.metadata().map(|m| m.len()).unwrap_or(0));
            if CHECKED.lock().is_ok_and(|seen| seen.contains(&key)) {
                continue;
            }
            check_file(&path, &format!("{prefix}{rest}"), &mut buf)?;
            if let Ok(mut seen) = CHECKED.lock() {
                seen.insert(key);
            }
            checked += 1;
        }
    }
    Ok(checked)
}

fn is_hex(name: &str, len: usize) -> bool {
    name.len() == len && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Inflates one loose object file completely, checking its header's length.
fn check_file(path: &Path, object: &str, buf: &mut [u8]) -> Result<(), CorruptObject> {
    let corrupt = |what: String| CorruptObject {
        object: object.to_owned(),
        path: path.to_owned(),
        what,
    };
    let data = std::fs::read(path).map_err(|e| corrupt(format!("cannot read it: {e}")))?;
    let mut z = Decompress::new(true);
    let mut header: Vec<u8> = Vec::new();
    let mut body_len: Option<u64> = None;
    loop {
        let (in_before, out_before) = (z.total_in(), z.total_out());
        let status = z
            .decompress(&data[in_before as usize..], buf, FlushDecompress::None)
            .map_err(|e| corrupt(format!("zlib: {e}")))?;
        let produced = (z.total_out() - out_before) as usize;
        if body_len.is_none() {
            header.extend_from_slice(&buf[..produced]);
            if let Some(nul) = header.iter().position(|&b| b == 0) {
                let text = std::str::from_utf8(&header[..nul]).unwrap_or("");
                let size = text
                    .split_once(' ')
                    .and_then(|(_, n)| n.parse::<u64>().ok())
                    .ok_or_else(|| corrupt("no `<type> <size>` header".into()))?;
                body_len = Some(size + nul as u64 + 1);
            } else if header.len() > 64 {
                return Err(corrupt("no `<type> <size>` header".into()));
            }
        }
        match status {
            Status::StreamEnd => break,
            _ if z.total_in() as usize == data.len() && produced < buf.len() => {
                return Err(corrupt(format!(
                    "the zlib stream is truncated ({} bytes, no end marker)",
                    data.len()
                )));
            }
            _ if z.total_in() == in_before && produced == 0 => {
                return Err(corrupt("zlib makes no progress".into()));
            }
            _ => {}
        }
    }
    match body_len {
        Some(want) if want == z.total_out() => Ok(()),
        Some(want) => Err(corrupt(format!(
            "it inflates to {} bytes, its header says {want}",
            z.total_out()
        ))),
        None => Err(corrupt("no `<type> <size>` header".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn loose(body: &[u8]) -> Vec<u8> {
        let mut raw = format!("blob {}\0", body.len()).into_bytes();
        raw.extend_from_slice(body);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&raw).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn whole_objects_pass_and_truncated_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let fan = dir.path().join("ab");
        std::fs::create_dir(&fan).unwrap();
        let body: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let good = loose(&body);
        std::fs::write(fan.join("c".repeat(38)), &good).unwrap();
        assert_eq!(check_loose_objects(dir.path()), Ok(1));
        assert_eq!(
            check_loose_objects(dir.path()),
            Ok(0),
            "checked once per process"
        );

        let bad = fan.join("d".repeat(38));
        std::fs::write(&bad, &good[..good.len() / 2]).unwrap();
        let err = check_loose_objects(dir.path()).unwrap_err();
        assert_eq!(err.object, format!("ab{}", "d".repeat(38)));
        assert!(
            err.what.starts_with("the zlib stream is truncated"),
            "{err}"
        );
        std::fs::write(&bad, &good[..good.len() - 4]).unwrap();
        assert!(check_loose_objects(dir.path()).is_err());
        std::fs::write(&bad, &good[..3]).unwrap();
        assert!(check_loose_objects(dir.path()).is_err());

        let mut wrong = b"blob 5\0abc".to_vec();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&wrong).unwrap();
        wrong = z.finish().unwrap();
        std::fs::write(&bad, wrong).unwrap();
        let err = check_loose_objects(dir.path()).unwrap_err();
        assert_eq!(err.what, "it inflates to 10 bytes, its header says 12");
        assert_eq!(check_loose_objects(&dir.path().join("missing")), Ok(0));
    }
}
