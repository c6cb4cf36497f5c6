//! Content-Length framing, incremental and lossless.
//!
//! [`FrameDecoder`] is fed bytes as they arrive and hands back [`Chunk`]s. The
//! invariant the proxy relies on: **the concatenation of every chunk's bytes equals
//! the input, byte for byte**, whatever the input is. Frames that parse are
//! [`Chunk::Frame`]; bytes that do not form a frame come out as
//! [`Chunk::Garbage`] (or [`Chunk::Truncated`] at end of stream) so they can still
//! be forwarded unchanged. Frames larger than [`FrameDecoder::max_buffered`] are
//! streamed through as [`Chunk::Passthrough`] pieces instead of being held in memory.
//!
//! Header rules: lines end in `\r\n` (a bare `\n` is tolerated); header names are
//! matched case-insensitively; only `Content-Length` is interpreted, every other
//! line is kept verbatim. A header block must hold exactly one valid decimal
//! `Content-Length`.

use memchr::memmem;

/// Longest header block accepted before the bytes are declared garbage.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Default largest frame held whole in memory (bigger ones stream through).
pub const DEFAULT_MAX_BUFFERED: usize = 256 * 1024 * 1024;

/// A piece of the byte stream, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// A complete frame: `bytes[..header_len]` is the header block (including the
    /// blank line), the rest is the body.
    Frame {
        /// The frame's exact bytes.
        bytes: Vec<u8>,
        /// Length of the header block.
        header_len: usize,
    },
    /// Bytes that do not form a frame.
    Garbage {
        /// The bytes, unchanged.
        bytes: Vec<u8>,
        /// What was wrong.
        error: FrameError,
    },
    /// A piece of a frame too large to buffer; forwarded as it arrives.
    Passthrough {
        /// The bytes, unchanged.
        bytes: Vec<u8>,
        /// Declared body length of the frame this piece belongs to.
        content_length: u64,
    },
    /// The stream ended in the middle of a frame or header.
    Truncated {
        /// The incomplete bytes, unchanged.
        bytes: Vec<u8>,
        /// Body bytes that were still expected (0 when the header was incomplete).
        missing: u64,
    },
}

impl Chunk {
    /// The chunk's bytes, exactly as they appeared in the stream.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Frame { bytes, .. }
            | Chunk::Garbage { bytes, .. }
            | Chunk::Passthrough { bytes, .. }
            | Chunk::Truncated { bytes, .. } => bytes,
        }
    }

    /// The body of a complete frame.
    pub fn body(&self) -> Option<&[u8]> {
        match self {
            Chunk::Frame { bytes, header_len } => Some(&bytes[*header_len..]),
            _ => None,
        }
    }
}

/// Why a header block was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// No `Content-Length` header in the block.
    #[error("header block has no Content-Length")]
    MissingContentLength,
    /// `Content-Length` is not a non-negative decimal integer that fits in 64 bits.
    #[error("invalid Content-Length value {0:?}")]
    InvalidContentLength(String),
    /// Two `Content-Length` headers in one block.
    #[error("duplicate Content-Length headers")]
    DuplicateContentLength,
    /// The header block grew past [`MAX_HEADER_BYTES`] without ending.
    #[error("header block longer than {MAX_HEADER_BYTES} bytes")]
    HeaderTooLong,
    /// A header line is not valid ASCII `Name: value`.
    #[error("malformed header line {0:?}")]
    MalformedHeader(String),
}

/// Incremental decoder: `feed` bytes, then drain with `next_chunk`; call `finish` at EOF.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    pos: usize,
    /// Body bytes of an oversized frame still to pass through.
    passthrough_left: u64,
    passthrough_len: u64,
    max_buffered: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new()
    }
}

impl FrameDecoder {
    /// A decoder that buffers frames up to [`DEFAULT_MAX_BUFFERED`].
    pub fn new() -> FrameDecoder {
        FrameDecoder::with_max_buffered(DEFAULT_MAX_BUFFERED)
    }

    /// A decoder that streams frames larger than `max_buffered` bytes through.
    pub fn with_max_buffered(max_buffered: usize) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::with_capacity(64 * 1024),
            pos: 0,
            passthrough_left: 0,
            passthrough_len: 0,
            max_buffered,
        }
    }

    /// Largest frame held whole.
    pub fn max_buffered(&self) -> usize {
        self.max_buffered
    }

    /// Appends bytes read from the stream.
    pub fn feed(&mut self, data: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes fed but not yet returned in a chunk.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        out
    }

    /// The next complete chunk, or `None` if more bytes are needed.
    pub fn next_chunk(&mut self) -> Option<Chunk> {
        let avail = self.pending();
        if self.passthrough_left > 0 {
            if avail == 0 {
                return None;
            }
            let n = avail.min(usize::try_from(self.passthrough_left).unwrap_or(usize::MAX));
            self.passthrough_left -= n as u64;
            let bytes = self.take(n);
            return Some(Chunk::Passthrough {
                bytes,
                content_length: self.passthrough_len,
            });
        }
        if avail == 0 {
            return None;
        }
        let rest = &self.buf[self.pos..];
        match parse_header(rest) {
            HeaderScan::Incomplete => {
                if rest.len() > MAX_HEADER_BYTES {
                    let n = garbage_len(rest);
                    let bytes = self.take(n);
                    return Some(Chunk::Garbage {
                        bytes,
                        error: FrameError::HeaderTooLong,
                    });
                }
                // A stream that cannot start a header (e.g. a log line without any
                // colon followed by a newline) is garbage up to the next candidate.
                if let Some(error) = hopeless_prefix(rest) {
                    let n = garbage_len(rest);
                    if n > 0 {
                        let bytes = self.take(n);
                        return Some(Chunk::Garbage { bytes, error });
                    }
                }
                None
            }
            HeaderScan::Invalid { error, .. } => {
                let n = garbage_len(rest);
                let bytes = self.take(n);
                Some(Chunk::Garbage { bytes, error })
            }
            HeaderScan::Complete {
                header_len,
                content_length,
            } => {
                let total = (header_len as u64).saturating_add(content_length);
                if content_length > self.max_buffered as u64 {
                    self.passthrough_left = total;
                    self.passthrough_len = content_length;
                    return self.next_chunk();
                }
                let total = total as usize;
                if rest.len() < total {
                    return None;
                }
                let bytes = self.take(total);
                Some(Chunk::Frame { bytes, header_len })
            }
        }
    }

    /// Called at end of stream: whatever is left, as one [`Chunk::Truncated`].
    pub fn finish(&mut self) -> Option<Chunk> {
        let avail = self.pending();
        if avail == 0 {
            return None;
        }
        let missing = if self.passthrough_left > 0 {
            self.passthrough_left - avail as u64
        } else {
            match parse_header(&self.buf[self.pos..]) {
                HeaderScan::Complete {
                    header_len,
                    content_length,
                } => (header_len as u64 + content_length).saturating_sub(avail as u64),
                _ => 0,
            }
        };
        self.passthrough_left = 0;
        let bytes = self.take(avail);
        Some(Chunk::Truncated { bytes, missing })
    }
}

enum HeaderScan {
    Incomplete,
    Invalid {
        error: FrameError,
    },
    Complete {
        header_len: usize,
        content_length: u64,
    },
}

/// Scans a header block at the start of `data`.
fn parse_header(data: &[u8]) -> HeaderScan {
    let mut line_start = 0;
    let mut content_length: Option<u64> = None;
    let mut first_error: Option<FrameError> = None;
    loop {
        let Some(nl) = memchr::memchr(b'\n', &data[line_start..]) else {
            return HeaderScan::Incomplete;
        };
        let line_end = line_start + nl;
        let mut line = &data[line_start..line_end];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        let next = line_end + 1;
        if line.is_empty() {
            if line_start == 0 {
                // A blank line before any header: not a frame start.
                return HeaderScan::Invalid {
                    error: FrameError::MissingContentLength,
                };
            }
            return match (content_length, first_error) {
                (_, Some(error)) => HeaderScan::Invalid { error },
                (None, None) => HeaderScan::Invalid {
                    error: FrameError::MissingContentLength,
                },
                (Some(content_length), None) => HeaderScan::Complete {
                    header_len: next,
                    content_length,
                },
            };
        }
        match split_header_line(line) {
            Some((name, value)) if name.eq_ignore_ascii_case(b"content-length") => {
                match parse_length(value) {
                    Some(n) if content_length.is_none() => content_length = Some(n),
                    Some(_) => {
                        first_error.get_or_insert(FrameError::DuplicateContentLength);
                    }
                    None => {
                        first_error.get_or_insert(FrameError::InvalidContentLength(
                            String::from_utf8_lossy(value).trim().to_string(),
                        ));
                    }
                }
            }
            Some(_) => {}
            None => {
                first_error.get_or_insert(FrameError::MalformedHeader(
                    String::from_utf8_lossy(line).into_owned(),
                ));
            }
        }
        line_start = next;
        if line_start > MAX_HEADER_BYTES {
            return HeaderScan::Invalid {
                error: FrameError::HeaderTooLong,
            };
        }
    }
}

fn split_header_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = memchr::memchr(b':', line)?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    Some((name, &line[colon + 1..]))
}

fn parse_length(value: &[u8]) -> Option<u64> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Whether the bytes seen so far can no longer become a valid header block.
fn hopeless_prefix(data: &[u8]) -> Option<FrameError> {
    // Every complete line seen so far must look like a header line.
    let mut start = 0;
    while let Some(nl) = memchr::memchr(b'\n', &data[start..]) {
        let mut line = &data[start..start + nl];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        if !line.is_empty() && split_header_line(line).is_none() {
            return Some(FrameError::MalformedHeader(
                String::from_utf8_lossy(line).into_owned(),
            ));
        }
        start += nl + 1;
    }
    None
}

/// How many bytes at the start of `data` to skip as garbage: up to the next
/// plausible frame start (a `Content-Length` header name), at least one byte.
fn garbage_len(data: &[u8]) -> usize {
    const NEEDLE: &[u8] = b"content-length";
    let lower: Vec<u8> = data.iter().map(u8::to_ascii_lowercase).collect();
    if let Some(off) = memmem::find(&lower[1..], NEEDLE) {
        return off + 1;
    }
    // No candidate: keep the longest tail that could still grow into one.
    let max_keep = (NEEDLE.len() - 1).min(data.len() - 1);
    let keep = (1..=max_keep)
        .rev()
        .find(|&k| lower[data.len() - k..] == NEEDLE[..k])
        .unwrap_or(0);
    data.len() - keep
}

/// Encodes one frame with a plain `Content-Length` header (used by clients and tests).
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(input: &[u8], splits: &[usize], max: usize) -> Vec<Chunk> {
        let mut decoder = FrameDecoder::with_max_buffered(max);
        let mut out = Vec::new();
        let mut last = 0;
        let mut cuts: Vec<usize> = splits.iter().map(|s| s % (input.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(input.len());
        for cut in cuts {
            decoder.feed(&input[last..cut]);
            last = cut;
            while let Some(chunk) = decoder.next_chunk() {
                out.push(chunk);
            }
        }
        out.extend(decoder.finish());
        out
    }

    fn concat(chunks: &[Chunk]) -> Vec<u8> {
        chunks.iter().flat_map(|c| c.bytes().to_vec()).collect()
    }

    #[test]
    fn two_frames_in_one_read() {
        let mut input = encode_frame(br#"{"a":1}"#);
        input.extend(b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
        let chunks = decode_all(&input, &[], DEFAULT_MAX_BUFFERED);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].body(), Some(&br#"{"a":1}"#[..]));
        assert_eq!(chunks[1].body(), Some(&b"{}"[..]));
        assert_eq!(concat(&chunks), input);
    }

    #[test]
    fn bare_newlines_are_tolerated() {
        let input = b"Content-Length: 2\n\n{}".to_vec();
        let chunks = decode_all(&input, &[], DEFAULT_MAX_BUFFERED);
        assert_eq!(
            chunks,
            vec![Chunk::Frame {
                bytes: input.clone(),
                header_len: 19
            }]
        );
    }

    #[test]
    fn bad_lengths_are_garbage_then_resync() {
        for bad in ["-5", "abc", "99999999999999999999999", ""] {
            let mut input = format!("Content-Length: {bad}\r\n\r\n{{}}").into_bytes();
            let good = encode_frame(b"{}");
            input.extend(&good);
            let chunks = decode_all(&input, &[], DEFAULT_MAX_BUFFERED);
            assert!(
                matches!(
                    &chunks[0],
                    Chunk::Garbage {
                        error: FrameError::InvalidContentLength(_),
                        ..
                    }
                ),
                "{bad}: {chunks:?}"
            );
            assert_eq!(
                chunks.last().unwrap(),
                &Chunk::Frame {
                    bytes: good,
                    header_len: 21
                }
            );
            assert_eq!(concat(&chunks), input);
        }
    }

    #[test]
    fn missing_length_and_log_lines() {
        let mut input = b"Content-Type: x\r\n\r\nhello server log\n".to_vec();
        input.extend(encode_frame(b"[]"));
        let chunks = decode_all(&input, &[], DEFAULT_MAX_BUFFERED);
        assert!(matches!(
            chunks[0],
            Chunk::Garbage {
                error: FrameError::MissingContentLength,
                ..
            }
        ));
        assert_eq!(chunks.last().unwrap().body(), Some(&b"[]"[..]));
        assert_eq!(concat(&chunks), input);
    }

    #[test]
    fn truncated_stream_reports_missing_bytes() {
        let input = b"Content-Length: 10\r\n\r\n{\"a\"".to_vec();
        let chunks = decode_all(&input, &[3], DEFAULT_MAX_BUFFERED);
        assert_eq!(
            chunks,
            vec![Chunk::Truncated {
                bytes: input.clone(),
                missing: 6
            }]
        );
    }

    #[test]
    fn huge_frames_stream_through() {
        let body = vec![b'x'; 1000];
        let input = encode_frame(&body);
        let chunks = decode_all(&input, &[10, 500], 100);
        assert!(chunks.iter().all(|c| matches!(
            c,
            Chunk::Passthrough {
                content_length: 1000,
                ..
            }
        )));
        assert_eq!(concat(&chunks), input);
    }

    #[test]
    fn endless_header_is_garbage() {
        let input = vec![b'a'; MAX_HEADER_BYTES + 10];
        let chunks = decode_all(&input, &[], DEFAULT_MAX_BUFFERED);
        assert!(matches!(
            chunks[0],
            Chunk::Garbage {
                error: FrameError::HeaderTooLong,
                ..
            }
        ));
        assert_eq!(concat(&chunks), input);
    }

    fn frame_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(|b| encode_frame(&b)),
            1 => proptest::collection::vec(any::<u8>(), 0..40),
            1 => (0u64..500, proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(n, b)| {
                let mut v = format!("cOnTeNt-LeNgTh:{n}\n\n").into_bytes();
                v.extend(b);
                v
            }),
        ]
    }

    proptest! {
        #[test]
        fn output_bytes_equal_input_bytes(
            frames in proptest::collection::vec(frame_strategy(), 0..8),
            splits in proptest::collection::vec(any::<usize>(), 0..10),
            max in prop_oneof![Just(DEFAULT_MAX_BUFFERED), 1usize..200],
        ) {
            let input: Vec<u8> = frames.concat();
            let chunks = decode_all(&input, &splits, max);
            prop_assert_eq!(concat(&chunks), input);
        }

        #[test]
        fn valid_frames_survive_any_split(
            bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..500), 1..8),
            splits in proptest::collection::vec(any::<usize>(), 0..20),
        ) {
            let input: Vec<u8> = bodies.iter().flat_map(|b| encode_frame(b)).collect();
            let chunks = decode_all(&input, &splits, DEFAULT_MAX_BUFFERED);
            let got: Vec<&[u8]> = chunks.iter().map(|c| c.body().expect("all frames valid")).collect();
            let want: Vec<&[u8]> = bodies.iter().map(|b| b.as_slice()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
