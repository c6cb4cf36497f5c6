"""A fake language server for fault-injection tests of the nextedit proxy.

Answers `initialize`, echoes every other request's params back as its result
(or, for a method named in FAKE_RESULTS, a JSON object method -> result, answers
with that result at once: a fast server for the causality tests), handles
shutdown/exit, and misbehaves on demand (FAKE_MODE):
  crash:N    exit with code 3 after the N-th message
  crash-once:N  the same, once per working directory: the first server started in a
             directory crashes, the next ones behave (FAKE_CRASH_DIR holds a marker
             named after the directory; a server kept across commits is restarted)
  garbage    write a non-frame line before every response
  stdout-log write a plain log line to stdout first
With FAKE_DIAGNOSTICS=1 it publishes empty diagnostics for each opened document, as
real servers do once they have checked it.
"""
import json
import os
import sys

MODE = os.environ.get("FAKE_MODE", "")
# Pre-encoded, so an answer costs a write.
RESULTS = {method: json.dumps(result)
           for method, result in json.loads(os.environ.get("FAKE_RESULTS", "{}")).items()}
out = sys.stdout.buffer
inp = sys.stdin.buffer


def send(obj):
    body = json.dumps(obj).encode()
    if MODE == "garbage":
        out.write(b"garbage from the server\r\n\r\n")
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def read_message():
    length = None
    while True:
        line = inp.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is None:
                continue
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
                if length < 0:
                    length = None
            except ValueError:
                length = None
    body = inp.read(length)
    try:
        message = json.loads(body)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def main():
    if MODE == "stdout-log":
        out.write(b"server starting\n")
        out.flush()
    crash_after = int(MODE.split(":")[1]) if MODE.startswith(("crash:", "crash-once:")) else None
    if MODE.startswith("crash-once:"):
        marker = os.path.join(os.environ["FAKE_CRASH_DIR"], os.path.basename(os.getcwd()))
        if os.path.exists(marker):
            crash_after = None
        else:
            open(marker, "w").close()
    seen = 0
    shutdown = False
    while True:
        message = read_message()
        if message is None:
            return 0
        seen += 1
        if crash_after is not None and seen >= crash_after:
            return 3
        method = message.get("method")
        if "id" in message and method:
            if method == "initialize":
                send({"jsonrpc": "2.0", "id": message["id"],
                      "result": {"capabilities": {"textDocumentSync": 2, "hoverProvider": True}}})
            elif method in RESULTS:
                body = ('{"jsonrpc":"2.0","id":%s,"result":%s}'
                        % (json.dumps(message["id"]), RESULTS[method])).encode()
                out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                out.flush()
            elif method == "shutdown":
                shutdown = True
                send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            else:
                send({"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message.get("params")}})
        elif method == "exit":
            return 0 if shutdown else 1
        elif method == "textDocument/didOpen" and os.environ.get("FAKE_DIAGNOSTICS") == "1":
            document = message.get("params", {}).get("textDocument", {})
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                  "params": {"uri": document.get("uri"), "version": document.get("version"),
                             "diagnostics": []}})


if __name__ == "__main__":
    sys.exit(main())
