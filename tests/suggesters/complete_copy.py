"""A `complete` suggester that copies: the body of the top context chunk (its lines
after the `def` line and its docstring), re-indented to the hole's indentation, its parameters renamed
to the hole function's (the last `def` of the prefix). With COMPLETE_COPY_ALTERNATE=1 every second answer is empty
(samples that differ, for pass@k). It has no idea whether
the chunk existed when the task was cut; that is what the evolution test measures."""
import json
import os
import re
import sys


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def body(chunk):
    lines = chunk.splitlines()[1:]
    lines = [l for l in lines if l.strip()]
    # The hole's function has its own docstring in the prefix (added-function tasks).
    first = lines[0].strip() if lines else ""
    if first[:3] in ('"""', "'" * 3):
        quote = first[:3]
        end = 0
        if not (len(first) > 3 and first.endswith(quote)):
            end = next((i for i, l in enumerate(lines[1:], 1) if quote in l), len(lines) - 1)
        lines = lines[end + 1:]
    if not lines:
        return []
    cut = min(len(l) - len(l.lstrip()) for l in lines)
    return [l[cut:] for l in lines]


def parameters(def_line):
    found = re.search(r"\((.*)\)", def_line)
    names = found.group(1).split(",") if found else []
    return [n.split("=")[0].split(":")[0].strip() for n in names if n.strip()]


def answer(params):
    if not params.get("context"):
        return ""
    prefix = params["prefix"]
    defs = [l for l in prefix.splitlines() if l.lstrip().startswith("def ")]
    if not defs:
        return ""
    last_def = defs[-1]
    indent = last_def[: len(last_def) - len(last_def.lstrip())] + "    "
    chunk = params["context"][0]["text"]
    text = "".join(indent + l + "\n" for l in body(chunk))
    renames = zip(parameters(chunk.splitlines()[0]), parameters(last_def))
    for old, new in renames:
        text = re.sub(r"\b%s\b" % re.escape(old), new, text)
    return text


ALTERNATE = os.environ.get("COMPLETE_COPY_ALTERNATE") == "1"
calls = 0
for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        continue
    if method == "initialize":
        reply(msg_id, {"name": "complete_copy", "version": "1"})
    elif method == "complete":
        calls += 1
        text = "" if ALTERNATE and calls % 2 == 0 else answer(message["params"])
        reply(msg_id, {"text": text})
    elif method == "shutdown":
        reply(msg_id, None)
        break
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no " + str(method)}}) + "\n")
        sys.stdout.flush()
