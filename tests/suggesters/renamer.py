"""A suggester for scoring tests: at every step it proposes, in every Python file of the
worktree, `total_price` -> `subtotal` on each line that still has it; with
RENAMER_README=1 it also proposes one extra edit to README.md (a file the commit does
not change)."""
import json
import os
import sys


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        reply(msg_id, {"name": "renamer", "version": "1"})
    elif method == "suggest":
        root = params["worktree"]
        edits = []
        for directory, _, names in sorted(os.walk(root)):
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(directory, name)
                with open(path) as f:
                    lines = f.read().splitlines(keepends=True)
                for i, text in enumerate(lines):
                    if "total_price" in text:
                        edits.append({"file": os.path.relpath(path, root), "start_line": i, "end_line": i + 1,
                                      "text": text.replace("total_price", "subtotal"), "confidence": 0.9})
        if os.environ.get("RENAMER_README") == "1":
            edits.append({"file": "README.md", "start_line": 0, "end_line": 1,
                          "text": "# demo (renamed)\n", "confidence": 0.1})
        reply(msg_id, {"edits": edits})
    elif method == "generate":
        reply(msg_id, {"text": ""})
    elif method == "shutdown":
        reply(msg_id, None)
        break
