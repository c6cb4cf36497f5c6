"""A suggester that reads through a real language server behind `nextedit proxy`.

At `initialize` it starts `$NEXTEDIT_BIN proxy --db $NEXTEDIT_REPLAY_DB --workspace <worktree>
-- $PYRIGHT --stdio`. At the start of every call it sends `$/nextedit/replayStep {step, call}`,
opens (or re-syncs from disk) the files its plan names, and makes the plan's requests:
LSP_PLAN names a JSON file {"<step>": {"suggest"|"generate": [[method, file, line, character]]}}.
It never suggests an edit and reports no reads itself: replay attributes the proxy's reads."""
import json
import os
import subprocess
import sys

with open(os.environ["LSP_PLAN"]) as f:
    PLAN = json.load(f)


class Server:
    def __init__(self, worktree):
        self.root = worktree
        self.proc = subprocess.Popen(
            [os.environ["NEXTEDIT_BIN"], "proxy", "--db", os.environ["NEXTEDIT_REPLAY_DB"],
             "--workspace", worktree, "--", os.environ["PYRIGHT"], "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.versions = {}
        uri = "file://" + worktree
        self.request("initialize", {"processId": os.getpid(), "rootUri": uri,
                                    "workspaceFolders": [{"uri": uri, "name": "ws"}], "capabilities": {}})
        self.notify("initialized", {})

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self):
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("server closed")
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        my_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if "method" in message and "id" in message:
                # A request of the server's own: answer it so it does not wait.
                items = message.get("params", {}).get("items", [])
                result = [None] * len(items) if message["method"] == "workspace/configuration" else None
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif message.get("id") == my_id:
                return message.get("result")

    def sync(self, path):
        uri = "file://" + os.path.join(self.root, path)
        with open(os.path.join(self.root, path)) as f:
            text = f.read()
        if uri not in self.versions:
            self.versions[uri] = 1
            self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                 "version": 1, "text": text}})
        else:
            self.versions[uri] += 1
            self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                                   "contentChanges": [{"text": text}]})
        return uri

    def close(self):
        self.request("shutdown", None)
        self.notify("exit", None)
        self.proc.wait(timeout=60)


def call(server, step, method):
    server.notify("$/nextedit/replayStep", {"step": step, "call": method})
    actions = PLAN.get(str(step), {}).get(method, [])
    for path in sorted({a[1] for a in actions}):
        server.sync(path)
    for lsp_method, path, line, character in actions:
        uri = "file://" + os.path.join(server.root, path)
        server.request(lsp_method, {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


server = None
for line in sys.stdin:
    message = json.loads(line)
    method, msg_id, params = message.get("method"), message.get("id"), message.get("params")
    if method == "initialize":
        if server:
            server.close()
        server = Server(params["worktree"])
        reply(msg_id, {"name": "lsp-reader", "version": "1"})
    elif method == "suggest":
        call(server, params["step"], "suggest")
        reply(msg_id, {"edits": []})
    elif method == "generate":
        call(server, params["step"], "generate")
        reply(msg_id, {"text": ""})
    elif method == "shutdown":
        if server:
            server.close()
        reply(msg_id, None)
        break
