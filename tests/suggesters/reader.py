"""A suggester that never suggests an edit but reports reads: READER_PLAN names a JSON file
{"<step>": {"suggest": [reads], "generate": [reads]}}; each call answers its step's reads."""
import json
import os
import sys

with open(os.environ["READER_PLAN"]) as f:
    PLAN = json.load(f)


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    if method == "initialize":
        reply(msg_id, {"name": "reader", "version": "1"})
    elif method in ("suggest", "generate"):
        reads = PLAN.get(str(message["params"]["step"]), {}).get(method, [])
        if method == "suggest":
            reply(msg_id, {"edits": [], "reads": reads})
        else:
            reply(msg_id, {"text": "", "reads": reads})
    elif method == "shutdown":
        reply(msg_id, None)
        break
