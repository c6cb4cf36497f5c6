"""A suggester whose answers vary from call to call, like a sampling model: a counter
kept in VARYING_STATE across runs numbers its calls, and the n-th call's answer
depends on n. Every call is appended to VARYING_LOG (method and step), so a test can
tell how often it was asked."""
import json
import os
import re
import sys

STATE = os.environ["VARYING_STATE"]
LOG = os.environ["VARYING_LOG"]


def next_count():
    count = int(open(STATE).read()) + 1 if os.path.exists(STATE) else 1
    with open(STATE, "w") as f:
        f.write(str(count))
    return count


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    with open(LOG, "a") as f:
        f.write(json.dumps({"method": method, "step": params.get("step")}) + "\n")
    if method == "initialize":
        reply(msg_id, {"name": "varying", "version": "1"})
    elif method == "suggest":
        n = next_count()
        edits = []
        # Every third call abstains; the others add a `scale` argument (its value
        # depends on the call) to each call of compute() that has none.
        if n % 3 != 0:
            for file in params["files"]:
                for i, text in enumerate(file["text"].splitlines(keepends=True)):
                    if "compute(" in text and "scale" not in text and "def " not in text:
                        new = re.sub(r"compute\(([^)]*)\)", r"compute(\1, scale=%d)" % (n % 4), text)
                        edits.append({"file": file["path"], "start_line": i, "end_line": i + 1, "text": new})
        reply(msg_id, {"edits": edits})
    elif method == "generate":
        n = next_count()
        target = next(f for f in params["files"] if f["path"] == params["file"])
        lines = target["text"].splitlines(keepends=True)[params["start_line"]:params["end_line"]]
        reply(msg_id, {"text": "".join(lines) + "    # draft %d\n" % n})
    elif method == "shutdown":
        reply(msg_id, None)
        break
