//! Recorder transcripts as data: LSP frames in, records out, as insta snapshots.
//!
//! Each case is a literal transcript, one line per frame:
//!
//! - `> {json}`: a frame from the editor (client to server); `< {json}`: from the server.
//!   The body is sent as written, so a line that is not JSON is a frame that is not
//!   a message. Editor `$/nextedit/` notifications are marked consumed, as the proxy does.
//! - `~> reason`: bytes from the editor that did not form a frame (`observe_invalid`).
//! - `@seconds`: the time of the frames that follow (default 0).
//! - blank lines and `#` comments are skipped.
//!
//! The snapshot shows each input frame's method and id, then the records it produced,
//! one line each, every field included. `INSTA_UPDATE=always cargo test --test it
//! recorder_transcripts` writes new snapshots; review them before committing.

use std::fmt::Write as _;

use nextedit::core::lsp::Direction;
use nextedit::core::lsp::framing::encode_frame;
use nextedit::core::record::privacy::PrivacyFilter;
use nextedit::core::record::{OfferSpan, Record, RecorderConfig, SIGNAL_PREFIX, SessionRecorder};
use serde_json::Value;

/// Which messages keep their bytes; where the workspace is.
struct Setup {
    record_raw: bool,
    record_server_raw: bool,
    workspace: Option<&'static str>,
}

/// Raw editor messages kept, server messages not, workspace `/ws`: the proxy's `--raw`.
const RAW: Setup = Setup {
    record_raw: true,
    record_server_raw: false,
    workspace: Some("/ws"),
};

/// Feeds a transcript to a new recorder; returns the rendered records.
fn check(setup: Setup, transcript: &str) -> String {
    let mut recorder = SessionRecorder::new(RecorderConfig {
        record_raw: setup.record_raw,
        record_server_raw: setup.record_server_raw,
        privacy: PrivacyFilter::with_defaults(),
        workspace: setup.workspace.map(str::to_string),
    });
    let mut t_ns = 0u64;
    let mut out = String::new();
    for line in transcript.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(seconds) = line.strip_prefix('@') {
            let seconds: f64 = seconds.parse().expect("@seconds");
            t_ns = (seconds * 1e9).round() as u64;
            continue;
        }
        if let Some(why) = line.strip_prefix("~> ") {
            writeln!(out, "~> {why}").unwrap();
            let record =
                recorder.observe_invalid(Direction::ClientToServer, t_ns, b"Content-Lx", why);
            writeln!(out, "    {}", render(&record, b"")).unwrap();
            continue;
        }
        let (dir, body) = match (line.strip_prefix("> "), line.strip_prefix("< ")) {
            (Some(body), _) => (Direction::ClientToServer, body),
            (None, Some(body)) => (Direction::ServerToClient, body),
            _ => panic!("not a transcript line: {line}"),
        };
        let message: Option<Value> = serde_json::from_str(body).ok();
        let method = message
            .as_ref()
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str);
        let consumed = dir == Direction::ClientToServer
            && message.as_ref().is_some_and(|m| m.get("id").is_none())
            && method.is_some_and(|m| m.starts_with(SIGNAL_PREFIX));
        let id = message.as_ref().and_then(|m| m.get("id"));
        writeln!(
            out,
            "{} {}{}",
            if dir == Direction::ClientToServer {
                ">"
            } else {
                "<"
            },
            method.unwrap_or(if message.is_some() {
                "(answer)"
            } else {
                "(not json)"
            }),
            id.map(|id| format!(" id={id}")).unwrap_or_default()
        )
        .unwrap();
        let frame = encode_frame(body.as_bytes());
        let records = recorder.observe_frame(dir, t_ns, &frame, frame.len() - body.len(), consumed);
        for record in &records {
            writeln!(out, "    {}", render(record, &frame)).unwrap();
        }
    }
    out
}

/// One record on one line, every field shown.
fn render(record: &Record, frame: &[u8]) -> String {
    match record {
        Record::Message(m) => {
            let raw = match &m.raw {
                None => "none".to_string(),
                Some(raw) if raw == frame => "frame".to_string(),
                Some(raw) => format!("{:?}", String::from_utf8_lossy(raw)),
            };
            format!(
                "#{} t={} message {} {} method={} id={} size={} raw={} redactions={}{}{}",
                m.seq,
                m.t_ns,
                m.dir.as_str(),
                m.kind.map_or("-", |k| k.as_str()),
                m.method.as_deref().unwrap_or("-"),
                m.id.as_deref().unwrap_or("-"),
                m.size,
                raw,
                m.redactions,
                m.invalid
                    .as_ref()
                    .map(|why| format!(" invalid={why:?}"))
                    .unwrap_or_default(),
                if m.consumed { " consumed" } else { "" },
            )
        }
        Record::Session(fact) => format!("session {fact:?}"),
        Record::Document(d) => format!(
            "document {} path={} language={} excluded={} first_seq={}",
            d.uri,
            d.path,
            d.language_id.as_deref().unwrap_or("-"),
            d.excluded,
            d.first_seq
        ),
        Record::Snapshot(s) => format!(
            "#{} t={} snapshot {} {} version={} text={} redactions={}",
            s.seq,
            s.t_ns,
            s.kind.as_str(),
            s.uri,
            s.version,
            s.text
                .as_ref()
                .map_or("none".to_string(), |t| format!("{t:?}")),
            s.redactions
        ),
        Record::Edit(e) => format!(
            "#{} t={} edit {} version={} change={} bytes={}..{} lines={}..{}->{} {:?} -> {:?} redactions={} origin={:?}",
            e.seq,
            e.t_ns,
            e.uri,
            e.version,
            e.change_index,
            e.span.start_byte,
            e.span.end_byte,
            e.span.start_line,
            e.span.end_line,
            e.span.new_end_line,
            e.span.before,
            e.span.after,
            e.redactions,
            e.origin
        ),
        Record::Read(r) => format!(
            "#{} t={} read {} {} lines={}..{} via={} request_id={}",
            r.seq,
            r.t_ns,
            r.uri,
            r.role.as_str(),
            r.lines.start,
            r.lines.end,
            r.via,
            r.request_id.as_deref().unwrap_or("-")
        ),
        Record::Signal(s) => format!(
            "#{} t={} signal {} uri={} payload={}",
            s.seq,
            s.t_ns,
            s.kind,
            s.uri.as_deref().unwrap_or("-"),
            s.payload
        ),
        Record::Offer(o) => format!(
            "#{} t={} offer {} rank={}/{}{} {} request=#{} latency={} method={} position={} label={} text={:?} edits=[{}]",
            o.seq,
            o.t_ns,
            o.kind.as_str(),
            o.rank,
            o.list_size,
            if o.incomplete { " incomplete" } else { "" },
            o.uri,
            o.request_seq,
            o.latency_ns,
            o.method,
            o.position
                .map_or("-".to_string(), |(line, col)| format!("{line}:{col}")),
            o.label
                .as_deref()
                .map_or("-".to_string(), |l| format!("{l:?}")),
            o.text,
            o.edits
                .iter()
                .map(|e| format!(
                    "{} {} {:?}",
                    e.uri,
                    match e.at {
                        OfferSpan::Bytes(start, end) => format!("bytes={start}..{end}"),
                        OfferSpan::Lsp(r) => format!(
                            "lsp={}:{}..{}:{}",
                            r.start.line, r.start.character, r.end.line, r.end.character
                        ),
                    },
                    e.text
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[test]
fn session_lifecycle() {
    // The workspace comes from `initialize`; the server picks UTF-8 positions.
    let out = check(
        Setup {
            record_raw: false,
            record_server_raw: false,
            workspace: None,
        },
        r##"
        > {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"processId":1,"clientInfo":{"name":"nvim","version":"0.10"},"rootUri":"file:///ws","workspaceFolders":[{"uri":"file:///ws","name":"ws"},{"uri":"file:///other","name":"other"},{"uri":"file:///ws/sub","name":"sub"}],"capabilities":{}}}
        < {"jsonrpc":"2.0","id":0,"result":{"capabilities":{"positionEncoding":"utf-8"},"serverInfo":{"name":"srv","version":"1.2"}}}
        > {"jsonrpc":"2.0","method":"initialized","params":{}}
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.py","languageId":"python","version":1,"text":"é = 1\nprint(é)\n"}}}
        @1
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.py","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":2},"end":{"line":0,"character":2}},"text":"x"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.py","version":3},"contentChanges":[{"range":{"start":{"line":1,"character":0},"end":{"line":1,"character":5}},"text":"log"},{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"# head\n"}]}}
        @1.5
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.py","version":4},"contentChanges":[{"text":"# head\néx = 2\nlog(é)\n"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.py"},"contentChanges":[{"range":{"start":{"line":2,"character":99},"end":{"line":2,"character":99}},"text":" # end"}]}}
        @2
        > {"jsonrpc":"2.0","method":"textDocument/didSave","params":{"textDocument":{"uri":"file:///ws/a.py"},"text":"key = 'AKIAABCDEFGHIJKLMNOP'\n"}}
        > {"jsonrpc":"2.0","method":"textDocument/didSave","params":{"textDocument":{"uri":"file:///ws/a.py"}}}
        > {"jsonrpc":"2.0","method":"workspace/didChangeWorkspaceFolders","params":{"event":{"added":[{"uri":"file:///more","name":"more"}],"removed":[]}}}
        < {"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":"hello"}}
        > {"jsonrpc":"2.0","method":"textDocument/didClose","params":{"textDocument":{"uri":"file:///ws/a.py"}}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.py","version":9},"contentChanges":[{"text":"closed"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///elsewhere/b.py","languageId":"python","version":1,"text":"b\r\nc\rd"}}}
        > {"jsonrpc":"2.0","id":1,"method":"shutdown"}
        < {"jsonrpc":"2.0","id":1,"result":null}
        > {"jsonrpc":"2.0","method":"exit"}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn utf16_positions_and_clamping() {
    // No `initialize`: UTF-16 positions; an emoji is two code units.
    let out = check(
        RAW,
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/e.ts","languageId":"typescript","version":1,"text":"let s = \"😀\";\r\nlet t = 1;\n"}}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/e.ts","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":11},"end":{"line":0,"character":12}},"text":"'"},{"range":{"start":{"line":0,"character":8},"end":{"line":0,"character":9}},"text":"'"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/e.ts","version":3},"contentChanges":[{"range":{"start":{"line":1,"character":8},"end":{"line":7,"character":0}},"text":"2;\n"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/e.ts","version":4},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"const tok = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\";\n"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/never-opened.ts","version":2},"contentChanges":[{"text":"x"}]}}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn reads_from_requests_answers_and_streamed_results() {
    let out = check(
        RAW,
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.py","languageId":"python","version":1,"text":"import b\n\ndef f():\n    return b.g()\n"}}}
        @1
        > {"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":3,"character":14}}}
        < {"jsonrpc":"2.0","id":1,"result":{"contents":"g()","range":{"start":{"line":3,"character":13},"end":{"line":3,"character":14}}}}
        > {"jsonrpc":"2.0","id":2,"method":"textDocument/definition","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":3,"character":14}}}
        < {"jsonrpc":"2.0","id":2,"result":[{"targetUri":"file:///ws/b.py","targetRange":{"start":{"line":10,"character":0},"end":{"line":12,"character":0}},"targetSelectionRange":{"start":{"line":10,"character":4},"end":{"line":10,"character":5}}}]}
        > {"jsonrpc":"2.0","id":3,"method":"textDocument/declaration","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":0,"character":7}}}
        < {"jsonrpc":"2.0","id":3,"result":{"uri":"file:///ws/b.py","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}}
        > {"jsonrpc":"2.0","id":4,"method":"textDocument/typeDefinition","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":2,"character":4}}}
        < {"jsonrpc":"2.0","id":4,"result":null}
        > {"jsonrpc":"2.0","id":5,"method":"textDocument/implementation","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":2,"character":4}}}
        < {"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"unsupported"}}
        @2
        > {"jsonrpc":"2.0","id":6,"method":"textDocument/references","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":2,"character":4},"context":{"includeDeclaration":true},"partialResultToken":"p1"}}
        < {"jsonrpc":"2.0","method":"$/progress","params":{"token":"p1","value":[{"uri":"file:///ws/c.py","range":{"start":{"line":7,"character":0},"end":{"line":7,"character":3}}}]}}
        < {"jsonrpc":"2.0","method":"$/progress","params":{"token":"other","value":[{"uri":"file:///ws/d.py","range":{"start":{"line":1,"character":0},"end":{"line":1,"character":3}}}]}}
        < {"jsonrpc":"2.0","id":6,"result":[{"uri":"file:///ws/a.py","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}}}]}
        < {"jsonrpc":"2.0","method":"$/progress","params":{"token":"p1","value":[{"uri":"file:///ws/c.py","range":{"start":{"line":8,"character":0},"end":{"line":8,"character":3}}}]}}
        > {"jsonrpc":"2.0","id":7,"method":"textDocument/documentHighlight","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":0,"character":7}}}
        < {"jsonrpc":"2.0","id":7,"result":[{"range":{"start":{"line":0,"character":7},"end":{"line":0,"character":8}}},{"range":{"start":{"line":3,"character":11},"end":{"line":3,"character":12}},"kind":2}]}
        > {"jsonrpc":"2.0","id":8,"method":"textDocument/documentSymbol","params":{"textDocument":{"uri":"file:///ws/a.py"}}}
        < {"jsonrpc":"2.0","id":8,"result":[{"name":"f","kind":12,"range":{"start":{"line":2,"character":0},"end":{"line":3,"character":16}},"selectionRange":{"start":{"line":2,"character":4},"end":{"line":2,"character":5}}}]}
        > {"jsonrpc":"2.0","id":9,"method":"textDocument/signatureHelp","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":3,"character":15}}}
        > {"jsonrpc":"2.0","id":10,"method":"textDocument/inlayHint","params":{"textDocument":{"uri":"file:///ws/a.py"},"range":{"start":{"line":0,"character":0},"end":{"line":4,"character":0}}}}
        > {"jsonrpc":"2.0","id":11,"method":"textDocument/codeAction","params":{"textDocument":{"uri":"file:///ws/a.py"},"range":{"start":{"line":1,"character":0},"end":{"line":2,"character":3}},"context":{"diagnostics":[]}}}
        > {"jsonrpc":"2.0","id":12,"method":"textDocument/foldingRange","params":{"textDocument":{"uri":"file:///ws/a.py"}}}
        < {"jsonrpc":"2.0","id":12,"result":[]}
        # Pairing is by (direction of the request, raw id): the server's request 9 and
        # the editor's string id "9" are other requests.
        < {"jsonrpc":"2.0","id":9,"method":"workspace/configuration","params":{"items":[{"section":"python"}]}}
        > {"jsonrpc":"2.0","id":"9","method":"textDocument/definition","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":0,"character":7}}}
        > {"jsonrpc":"2.0","id":9,"result":[null]}
        < {"jsonrpc":"2.0","id":"9","result":[{"uri":"file:///ws/b.py","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}]}
        < {"jsonrpc":"2.0","id":9,"result":{"signatures":[]}}
        < {"jsonrpc":"2.0","id":9,"result":{"signatures":[]}}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn completion_and_resolve_edits_are_tagged() {
    let out = check(
        RAW,
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.go","languageId":"go","version":1,"text":"package main\nfunc f() { fmt.Pr }\n"}}}
        @1
        > {"jsonrpc":"2.0","id":1,"method":"textDocument/completion","params":{"textDocument":{"uri":"file:///ws/a.go"},"position":{"line":1,"character":17}}}
        < {"jsonrpc":"2.0","id":1,"result":{"isIncomplete":false,"items":[{"label":"Print","textEdit":{"range":{"start":{"line":1,"character":15},"end":{"line":1,"character":17}},"newText":"Print"}},{"label":"Println","textEdit":{"newText":"Println","insert":{"start":{"line":1,"character":15},"end":{"line":1,"character":17}},"replace":{"start":{"line":1,"character":15},"end":{"line":1,"character":17}}},"additionalTextEdits":[{"range":{"start":{"line":0,"character":12},"end":{"line":0,"character":12}},"newText":"\nimport \"fmt\""}]}]}}
        @2
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":2},"contentChanges":[{"range":{"start":{"line":1,"character":17},"end":{"line":1,"character":17}},"text":"i"}]}}
        @3
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":3},"contentChanges":[{"range":{"start":{"line":1,"character":15},"end":{"line":1,"character":18}},"text":"Println"},{"range":{"start":{"line":0,"character":12},"end":{"line":0,"character":12}},"text":"\nimport \"fmt\""}]}}
        @4
        > {"jsonrpc":"2.0","id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"file:///ws/a.go"},"position":{"line":0,"character":0}}}
        < {"jsonrpc":"2.0","id":2,"result":[{"label":"x"}]}
        > {"jsonrpc":"2.0","id":3,"method":"completionItem/resolve","params":{"label":"x"}}
        < {"jsonrpc":"2.0","id":3,"result":{"label":"x","additionalTextEdits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"newText":"// x\n"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":4},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"// x\n"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":5},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"// x\n"}]}}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn inline_completions_snippets_and_list_defaults_are_offers() {
    // UTF-16 positions after an emoji (two code units, four bytes); an inline list with
    // a ranged item and a snippet item; a completion list whose items take the list's
    // default range and snippet format; an error answer offers nothing.
    let out = check(
        RAW,
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.py","languageId":"python","version":1,"text":"s = '😀'\ndef f(x):\n    ret\n"}}}
        @1
        > {"jsonrpc":"2.0","id":1,"method":"textDocument/inlineCompletion","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":2,"character":7},"context":{"triggerKind":2}}}
        @2
        < {"jsonrpc":"2.0","id":1,"result":{"items":[{"insertText":"return x + 1","range":{"start":{"line":2,"character":4},"end":{"line":2,"character":7}},"filterText":"ret"},{"insertText":{"kind":"snippet","value":"urn ${1:x} * ${2|2,3|}$0"}}]}}
        > {"jsonrpc":"2.0","id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":0,"character":7}}}
        < {"jsonrpc":"2.0","id":2,"result":{"isIncomplete":true,"itemDefaults":{"editRange":{"insert":{"start":{"line":0,"character":6},"end":{"line":0,"character":7}},"replace":{"start":{"line":0,"character":6},"end":{"line":0,"character":8}}},"insertTextFormat":2},"items":[{"label":"upper","textEditText":"upper()$0"},{"label":"strip","insertText":"strip(${1:chars})"}]}}
        > {"jsonrpc":"2.0","id":3,"method":"textDocument/inlineCompletion","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":2,"character":7},"context":{"triggerKind":1}}}
        < {"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"cancelled"}}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn formatting_rename_code_actions_and_apply_edit_are_tagged() {
    let out = check(
        RAW,
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.go","languageId":"go","version":1,"text":"import (\n\t\"os\"\n\t\"fmt\"\n)\nfunc  old() {}\nvar x = old()\n"}}}
        @1
        > {"jsonrpc":"2.0","id":1,"method":"textDocument/formatting","params":{"textDocument":{"uri":"file:///ws/a.go"},"options":{"tabSize":4,"insertSpaces":false}}}
        < {"jsonrpc":"2.0","id":1,"result":[{"range":{"start":{"line":4,"character":4},"end":{"line":4,"character":6}},"newText":" "}]}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":2},"contentChanges":[{"range":{"start":{"line":4,"character":5},"end":{"line":4,"character":6}},"text":""}]}}
        > {"jsonrpc":"2.0","id":2,"method":"textDocument/rangeFormatting","params":{"textDocument":{"uri":"file:///ws/a.go"},"range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"options":{}}}
        < {"jsonrpc":"2.0","id":2,"error":{"code":-32801,"message":"content modified"}}
        @2
        > {"jsonrpc":"2.0","id":3,"method":"textDocument/rename","params":{"textDocument":{"uri":"file:///ws/a.go"},"position":{"line":4,"character":6},"newName":"fresh"}}
        < {"jsonrpc":"2.0","id":3,"result":{"documentChanges":[{"textDocument":{"uri":"file:///ws/a.go","version":2},"edits":[{"range":{"start":{"line":4,"character":5},"end":{"line":4,"character":8}},"newText":"fresh"},{"range":{"start":{"line":5,"character":8},"end":{"line":5,"character":11}},"newText":"fresh"}]},{"textDocument":{"uri":"file:///ws/b.go","version":1},"edits":[{"range":{"start":{"line":0,"character":4},"end":{"line":0,"character":7}},"newText":"fresh"}]}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":3},"contentChanges":[{"range":{"start":{"line":5,"character":8},"end":{"line":5,"character":11}},"text":"fresh"},{"range":{"start":{"line":4,"character":5},"end":{"line":4,"character":8}},"text":"fresh"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/b.go","languageId":"go","version":1,"text":"x = old()\n"}}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/b.go","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":4},"end":{"line":0,"character":7}},"text":"fresh"}]}}
        @3
        < {"jsonrpc":"2.0","id":0,"method":"workspace/applyEdit","params":{"edit":{"changes":{"file:///ws/a.go":[{"range":{"start":{"line":1,"character":0},"end":{"line":2,"character":0}},"newText":""}]}}}}
        > {"jsonrpc":"2.0","id":0,"result":{"applied":true}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":4},"contentChanges":[{"range":{"start":{"line":1,"character":0},"end":{"line":2,"character":0}},"text":""}]}}
        < {"jsonrpc":"2.0","id":1,"method":"workspace/applyEdit","params":{"edit":{"changes":{"file:///ws/a.go":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"newText":"// x\n"}]}}}}
        > {"jsonrpc":"2.0","id":1,"result":{"applied":false,"failureReason":"no"}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":5},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"// x\n"}]}}
        @4
        > {"jsonrpc":"2.0","id":4,"method":"textDocument/codeAction","params":{"textDocument":{"uri":"file:///ws/a.go"},"range":{"start":{"line":2,"character":0},"end":{"line":2,"character":0}},"context":{"diagnostics":[]}}}
        < {"jsonrpc":"2.0","id":4,"result":[{"title":"one","edit":{"changes":{"file:///ws/a.go":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"newText":"// one\n"}]}}},{"title":"cmd","command":{"title":"cmd","command":"x"}},{"title":"two","edit":{"changes":{"file:///ws/a.go":[{"range":{"start":{"line":2,"character":1},"end":{"line":2,"character":6}},"newText":"\"io\""}]}}}]}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":6},"contentChanges":[{"range":{"start":{"line":2,"character":1},"end":{"line":2,"character":6}},"text":"\"io\""}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":7},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"// one\n"}]}}
        > {"jsonrpc":"2.0","id":5,"method":"codeAction/resolve","params":{"title":"three"}}
        < {"jsonrpc":"2.0","id":5,"result":{"title":"three","edit":{"changes":{"file:///ws/a.go":[{"range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"newText":""}]}}}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":8},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"text":""}]}}
        @5
        > {"jsonrpc":"2.0","id":6,"method":"textDocument/willSaveWaitUntil","params":{"textDocument":{"uri":"file:///ws/a.go"},"reason":1}}
        < {"jsonrpc":"2.0","id":6,"result":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"newText":"// saved\n"}]}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":9},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"// saved\n"}]}}
        > {"jsonrpc":"2.0","id":7,"method":"textDocument/onTypeFormatting","params":{"textDocument":{"uri":"file:///ws/a.go"},"position":{"line":4,"character":15},"ch":"}","options":{}}}
        < {"jsonrpc":"2.0","id":7,"result":[{"range":{"start":{"line":4,"character":14},"end":{"line":4,"character":14}},"newText":" "}]}
        @70
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.go","version":10},"contentChanges":[{"range":{"start":{"line":4,"character":14},"end":{"line":4,"character":14}},"text":" "}]}}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn signals_and_excluded_files() {
    let out = check(
        RAW,
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.py","languageId":"python","version":1,"text":"x = 1\n"}}}
        > {"jsonrpc":"2.0","method":"$/nextedit/cursor","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":0,"character":1}}}
        > {"jsonrpc":"2.0","method":"$/nextedit/visibleRanges","params":{"uri":"file:///ws/a.py","ranges":[{"start":{"line":0,"character":0},"end":{"line":1,"character":0}}]}}
        > {"jsonrpc":"2.0","method":"$/nextedit/replayStep","params":{"step":3}}
        > {"jsonrpc":"2.0","id":40,"method":"$/nextedit/notANotification","params":{}}
        @1
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/.env","languageId":"dotenv","version":1,"text":"TOKEN=abc\n"}}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/.env","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":6},"end":{"line":0,"character":9}},"text":"xyz"}]}}
        > {"jsonrpc":"2.0","method":"$/nextedit/selection","params":{"textDocument":{"uri":"file:///ws/.env"},"text":"TOKEN=xyz"}}
        > {"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///ws/.env"},"position":{"line":0,"character":1}}}
        < {"jsonrpc":"2.0","id":1,"result":{"contents":"TOKEN=xyz","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":5}}}}
        > {"jsonrpc":"2.0","id":2,"method":"textDocument/formatting","params":{"textDocument":{"uri":"file:///ws/.env"},"options":{}}}
        < {"jsonrpc":"2.0","id":2,"result":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"newText":"# x\n"}]}
        > {"jsonrpc":"2.0","id":3,"method":"workspace/executeCommand","params":{"command":"open","arguments":["file:///ws/.env"]}}
        > {"jsonrpc":"2.0","method":"textDocument/didSave","params":{"textDocument":{"uri":"file:///ws/.env"},"text":"TOKEN=xyz\n"}}
        > {"jsonrpc":"2.0","method":"textDocument/didClose","params":{"textDocument":{"uri":"file:///ws/.env"}}}
        @2
        > {"jsonrpc":"2.0","method":"notebookDocument/didOpen","params":{"notebookDocument":{"uri":"file:///ws/secrets/nb.ipynb","notebookType":"jupyter-notebook","version":1,"cells":[{"kind":2,"document":"vscode-notebook-cell:/ws/secrets/nb.ipynb#c1"}]},"cellTextDocuments":[{"uri":"vscode-notebook-cell:/ws/secrets/nb.ipynb#c1","languageId":"python","version":1,"text":"key = 1"}]}}
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"vscode-notebook-cell:/ws/secrets/nb.ipynb#c1","languageId":"python","version":1,"text":"key = 1"}}}
        > {"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///ws/a.py","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":4},"end":{"line":0,"character":5}},"text":"open('/ws/.env') # xoxb-1234567890-abcdef"}]}}
        "##,
    );
    insta::assert_snapshot!(out);
}

#[test]
fn server_raw_messages_and_invalid_frames() {
    let out = check(
        Setup {
            record_raw: true,
            record_server_raw: true,
            workspace: Some("/ws/"),
        },
        r##"
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/a.py","languageId":"python","version":1,"text":"k = 'AKIAABCDEFGHIJKLMNOP'\n"}}}
        > {"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///ws/id_rsa","languageId":"text","version":1,"text":"x"}}}
        > {"jsonrpc":"2.0","id":1,"method":"textDocument/definition","params":{"textDocument":{"uri":"file:///ws/a.py"},"position":{"line":0,"character":0}}}
        < {"jsonrpc":"2.0","id":1,"result":[{"uri":"file:///ws/id_rsa","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}]}
        < {"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///ws/a.py","diagnostics":[]}}
        < {"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///ws/../outside.py","diagnostics":[]}}
        < {"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"untitled:Untitled-1","diagnostics":[]}}
        < {"jsonrpc":"2.0","id":77,"result":{"unpaired":true}}
        < {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}
        > not json at all
        > [{"jsonrpc":"2.0","method":"initialized"}]
        > {"jsonrpc":"2.0"}
        > {"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":"odd"}
        < {"jsonrpc":"2.0","id":2,"result":{"contents":"x","range":"odd"}}
        ~> header without a length
        "##,
    );
    insta::assert_snapshot!(out);
}
