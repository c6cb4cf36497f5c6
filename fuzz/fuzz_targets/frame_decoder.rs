//! Fuzzes the frame decoder: any bytes, split anywhere, must come back out
//! unchanged and in order, without panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nextedit::lsp::framing::FrameDecoder;

fuzz_target!(|data: &[u8]| {
    // The first byte picks split points and the buffering limit.
    let Some((&seed, input)) = data.split_first() else { return };
    let max = if seed & 1 == 0 { usize::MAX } else { 1 + (seed as usize) * 7 };
    let mut decoder = FrameDecoder::with_max_buffered(max);
    let step = 1 + (seed as usize % 13);
    let mut out = Vec::with_capacity(input.len());
    for piece in input.chunks(step) {
        decoder.feed(piece);
        while let Some(chunk) = decoder.next_chunk() {
            out.extend_from_slice(chunk.bytes());
        }
    }
    if let Some(rest) = decoder.finish() {
        out.extend_from_slice(rest.bytes());
    }
    assert_eq!(out, input);
});
