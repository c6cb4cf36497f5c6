#!/usr/bin/env python3
"""Run an unmodified Historian SUT as a nextedit suggester.

Usage (as a nextedit suggester):
    nextedit replay ... --suggester 'cmd:python3 replay/historian_sut.py [--env NAME=VALUE]... path/to/sut_main.py'

--env sets an environment variable for the SUT before it is loaded (a sandboxed suggester
gets only an allow-listed environment; a file it names must be readable there too, e.g.
with `--sandbox-ro FILE`).

The SUT module must define `main(json_input)` (plain or async) as Historian's
`systemUnderTest/<SUT>/main.py` does. This shim speaks nextedit's suggester protocol
(docs/suggesters.md) on stdin/stdout and translates:

  initialize             -> main({"status": "init", ...})
  suggest                -> main({"status": "suggestion(location+content)", ...})
                            prediction snapshots -> ranked edits (confidence descending,
                            missing confidences last, file order within ties)
  generate               -> main({"status": "suggestion(content)", "target_edit": ...})
                            the target edit carries `before` and its location, and an
                            EMPTY `after`: Historian leaked the gold text here, nextedit
                            never does.

`edit_description` and `changed_files` are passed only when the run reveals them
(`--reveal message,files`); otherwise they are "" and []. The SUT's stdout is
redirected to stderr so prints cannot corrupt the protocol stream.
"""
import asyncio
import importlib.util
import inspect
import json
import os
import sys

PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr  # the SUT's prints go to stderr


def load_sut(path):
    spec = importlib.util.spec_from_file_location("historian_sut_main", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    if not hasattr(module, "main"):
        raise SystemExit(f"{path} has no main(json_input)")
    return module.main


def call(main, payload):
    result = main(payload)
    if inspect.isawaitable(result):
        result = asyncio.run(result)
    return result


def lines_of(text):
    return text.splitlines(keepends=True)


def historian_edit(edit, idx):
    """A prior edit in Historian's edit shape (current coordinates)."""
    before, after = lines_of(edit["before"]), lines_of(edit["after"])
    kind = "insert" if not before else ("delete" if not after else "replace")
    return {
        "type": kind,
        "before": before,
        "after": after,
        "file_path": edit["file"],
        "idx": idx,
        "simulated": True,
        "allowed_as_next": False,
        "currently_start_at_line": edit["start_line"],
        "child_version_range": {"start": edit["start_line"], "end": edit["end_line"]},
        "structural_path": [],
        "prefix": [],
        "suffix": [],
    }


def snapshot_to_edits(snapshot):
    """Prediction snapshots -> (file, start, end, text, confidence) in file order."""
    out = []
    if not isinstance(snapshot, dict):
        return out
    for path, windows in snapshot.items():
        line = 0
        for window in windows or []:
            if isinstance(window, list):
                line += len(window)
            elif isinstance(window, dict):
                before = window.get("before") or []
                after = window.get("after") or []
                out.append((path, line, line + len(before), "".join(after), window.get("confidence")))
                line += len(before)
    return out


def rank(edits):
    # Confidence descending; missing confidences last (Historian crashed on mixed lists).
    indexed = list(enumerate(edits))
    indexed.sort(key=lambda ie: (ie[1][4] is None, -(ie[1][4] or 0.0), ie[0]))
    return [e for _, e in indexed]


class Shim:
    def __init__(self, main):
        self.main = main
        self.init = {}

    def base(self, status, params):
        revealed = self.init.get("revealed") or {}
        trajectory = self.init.get("trajectory", "")
        return {
            "id": trajectory[:10],
            "language": params.get("language") or self.init.get("language") or "",
            "project_name": self.init.get("project") or "",
            "status": status,
            "repo_dir": params.get("worktree") or self.init.get("worktree"),
            "prior_edits": [historian_edit(e, i) for i, e in enumerate(params.get("prior_edits", []))],
            "edit_description": revealed.get("commit_message") or "",
            "changed_files": revealed.get("changed_files") or [],
        }

    def initialize(self, params):
        self.init = params
        call(self.main, self.base("init", params))
        return {"name": "historian-sut", "version": None}

    def suggest(self, params):
        answer = call(self.main, self.base("suggestion(location+content)", params))
        edits = rank(snapshot_to_edits(answer or {}))
        return {"edits": [
            {"file": f, "start_line": s, "end_line": e, "text": t, **({"confidence": c} if c is not None else {})}
            for f, s, e, t, c in edits
        ]}

    def generate(self, params):
        files = {f["path"]: f["text"] for f in params.get("files", [])}
        lines = lines_of(files.get(params["file"], ""))
        start, end = params["start_line"], params["end_line"]
        before = lines[start:end]
        target = {
            "type": "insert" if not before else "replace",
            "before": before,
            "after": [],  # never the gold text
            "file_path": params["file"],
            "currently_start_at_line": start,
            "prefix": lines[max(0, start - 3):start],
            "suffix": lines[end:end + 3],
            "structural_path": [],
        }
        payload = self.base("suggestion(content)", params)
        payload["target_edit"] = target
        answer = call(self.main, payload) or {}
        for _, _, _, text, _ in snapshot_to_edits(answer):
            return {"text": text}
        return {"text": ""}


def main():
    args = sys.argv[1:]
    while len(args) > 1 and args[0] == "--env":
        name, _, value = args[1].partition("=")
        os.environ[name] = value
        args = args[2:]
    if len(args) != 1:
        raise SystemExit("usage: historian_sut.py [--env NAME=VALUE]... path/to/sut/main.py")
    shim = Shim(load_sut(args[0]))
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, msg_id = message.get("method"), message.get("id")
        try:
            if method == "shutdown":
                result = None
            else:
                result = getattr(shim, method)(message.get("params") or {})
            reply = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        except Exception as error:  # the SUT failed: report it, keep serving
            reply = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32000, "message": f"{type(error).__name__}: {error}"}}
        PROTOCOL_OUT.write(json.dumps(reply) + "\n")
        PROTOCOL_OUT.flush()
        if method == "shutdown":
            break


if __name__ == "__main__":
    main()
