//! Fuzzes the recorder with arbitrary frames in both directions: it must never
//! panic, whatever positions, encodings or shapes the messages claim.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nextedit::lsp::Direction;
use nextedit::lsp::framing::encode_frame;
use nextedit::record::privacy::PrivacyFilter;
use nextedit::record::{RecorderConfig, SessionRecorder};

fuzz_target!(|data: &[u8]| {
    let mut recorder = SessionRecorder::new(RecorderConfig {
        record_raw: true,
        record_server_raw: true,
        privacy: PrivacyFilter::with_defaults(),
        workspace: Some("/ws".into()),
    });
    // A fixed opening so the interesting paths (open documents) are reachable.
    let open = br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.py","languageId":"python","version":1,"text":"h\u00e9llo\r\n\ud83d\ude00 world\nx"}}}"#;
    let frame = encode_frame(open);
    recorder.observe_frame(Direction::ClientToServer, 0, &frame, frame.len() - open.len(), false);
    for (i, body) in data.split(|&b| b == 0xff).enumerate() {
        let dir = if i % 3 == 2 { Direction::ServerToClient } else { Direction::ClientToServer };
        let frame = encode_frame(body);
        recorder.observe_frame(dir, i as u64, &frame, frame.len() - body.len(), false);
    }
});
