"""A suggester that reports nothing and looks around: at every call it lists the
worktree's files and checks whether SPY_SENTINEL appears anywhere in them or in the
message it got. It appends one JSON line per call to SPY_LOG."""
import json
import os
import sys

SENTINEL = os.environ["SPY_SENTINEL"]
LOG = os.environ["SPY_LOG"]


def scan(root):
    files, leaked = [], False
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            files.append(os.path.relpath(path, root))
            with open(path, "rb") as f:
                leaked |= SENTINEL.encode() in f.read()
    return sorted(files), leaked


worktree = None
for line in sys.stdin:
    message = json.loads(line)
    method, params = message["method"], message.get("params") or {}
    worktree = params.get("worktree", worktree)
    files, leaked = scan(worktree) if worktree else ([], False)
    with open(LOG, "a") as f:
        f.write(json.dumps({"method": method, "files": files, "leaked": leaked or SENTINEL in line}) + "\n")
    result = {"initialize": {"name": "spy"}, "suggest": {"edits": []}, "generate": {"text": ""}, "shutdown": None}[method]
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    if method == "shutdown":
        break
