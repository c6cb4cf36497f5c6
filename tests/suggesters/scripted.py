"""A suggester for protocol tests; SUGGESTER_MODE picks how it (mis)behaves on `suggest`:
good, crash-once, hang, hang-once-at-3, garbage, huge, error, flood (valid lines that answer
nothing, forever), no-read (never reads stdin again), orphan (starts `sleep ORPHAN_TAG` in the
background, one in its process group and one in a session of its own, then crashes);
hang-init hangs on `initialize`. Other requests (`complete`) get "method not found".
SUGGESTER_STATE is a file counting initialize calls and crashes, so a test can see
restarts."""
import json
import os
import subprocess
import sys
import time

MODE = os.environ.get("SUGGESTER_MODE", "good")
STATE = os.environ.get("SUGGESTER_STATE")


def bump(key):
    state = {}
    if STATE and os.path.exists(STATE):
        with open(STATE) as f:
            state = json.load(f)
    state[key] = state.get(key, 0) + 1
    if STATE:
        with open(STATE, "w") as f:
            json.dump(state, f)
    return state[key]


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


bump("start")
for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    if method == "initialize":
        bump("initialize")
        if MODE == "hang-init":
            time.sleep(3600)
        reply(msg_id, {"name": "scripted", "version": "1"})
    elif method == "suggest":
        # A stray notification first: clients must skip it.
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "log", "params": "thinking"}) + "\n")
        if MODE == "crash-once" and bump("crash") == 1:
            sys.stderr.write("boom: out of ideas\n")
            sys.stderr.flush()
            sys.exit(7)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "flood":
            stray = json.dumps({"jsonrpc": "2.0", "id": 999999, "result": {"edits": []}}) + "\n"
            while True:
                sys.stdout.write(stray * 64)
        if MODE == "no-read":
            reply(msg_id, {"edits": []})
            time.sleep(3600)
        if MODE == "orphan":
            tag = os.environ["ORPHAN_TAG"]
            subprocess.Popen(["sleep", tag])
            subprocess.Popen(["sleep", tag], start_new_session=True)
            sys.exit(3)
        if MODE == "hang-once-at-3" and message["params"]["step"] == 3 and bump("hang") == 1:
            time.sleep(3600)
        if MODE == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            continue
        if MODE == "huge":
            sys.stdout.write("x" * (17 * 1024 * 1024) + "\n")
            sys.stdout.flush()
            continue
        if MODE == "error":
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32000, "message": "no model"}}) + "\n")
            sys.stdout.flush()
            continue
        step = message["params"]["step"]
        reply(msg_id, {"edits": [{"file": "a.py", "start_line": 0, "end_line": 1, "text": "x = %d\n" % step, "confidence": 0.5}],
                       "reads": [{"file": "a.py", "start_line": 0, "end_line": 1}]})
    elif method == "generate":
        reply(msg_id, {"text": "y = 1\n"})
    elif method == "shutdown":
        reply(msg_id, None)
        break
    elif msg_id is not None:
        # A suggester written before `complete`: JSON-RPC's "method not found".
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "unknown method"}}) + "\n")
        sys.stdout.flush()
