"""A suggester that answers every `suggest` with the edits given as a JSON list in its
first argument, and every `generate` with an empty text (for replays whose answer is known)."""
import json
import sys

EDITS = json.loads(sys.argv[1])


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    if method == "initialize":
        reply(msg_id, {"name": "fixed", "version": "1"})
    elif method == "suggest":
        reply(msg_id, {"edits": EDITS})
    elif method == "generate":
        reply(msg_id, {"text": ""})
    elif method == "shutdown":
        reply(msg_id, None)
        break
    elif msg_id is not None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "unknown method"}}) + "\n")
        sys.stdout.flush()
