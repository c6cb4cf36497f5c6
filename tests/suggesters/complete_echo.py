"""A suggester that answers `complete` from its context, for tests/it/suggester_complete.rs.

The answer is the first context chunk's text (empty without context), with the chunks as
its reads; before answering it checks the protocol's promise that the worktree's file holds
exactly prefix + suffix (else it answers an error). COMPLETE_MODE picks how it misbehaves on
`complete`: good (default), crash, hang, garbage, bad-shape (a text that is not a string).
Requests it does not know get JSON-RPC's "method not found" (-32601)."""
import json
import os
import sys
import time

MODE = os.environ.get("COMPLETE_MODE", "good")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def complete(params):
    with open(os.path.join(params["worktree"], params["file"]), encoding="utf-8") as f:
        if f.read() != params["prefix"] + params["suffix"]:
            return None
    context = params.get("context", [])
    reads = [{"file": c["file"], "start_line": c["start_line"], "end_line": c["end_line"]} for c in context]
    return {"text": context[0]["text"] if context else "", "reads": reads}


for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg_id, "result": {"name": "complete_echo", "version": "1"}})
    elif method == "complete":
        if MODE == "crash":
            sys.stderr.write("complete_echo: no idea how to fill this\n")
            sys.stderr.flush()
            sys.exit(5)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "garbage":
            sys.stdout.write("completion: return 42\n")
            sys.stdout.flush()
            continue
        if MODE == "bad-shape":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"text": 42}})
            continue
        result = complete(message["params"])
        if result is None:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32000, "message": "the file is not prefix + suffix"}})
        else:
            send({"jsonrpc": "2.0", "id": msg_id, "result": result})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg_id, "result": None})
        break
    elif msg_id is not None:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "method not found: %s" % method}})
