"""Runs llama-cpp-python's real OpenAI-compatible server on a free loopback port,
with a log of every request it receives (for tests/it/suggester_openai.rs).

usage: llama_server.py MODEL.gguf ALIAS API_KEY REQUEST_LOG.jsonl

The server is `llama_cpp.server`'s own app (what `python -m llama_cpp.server` runs),
serving MODEL under the name ALIAS and requiring `Authorization: Bearer API_KEY`. One
thread, so answers at temperature 0 are the same every run. Once the model is loaded
and the socket listens, the port is printed on stdout. Each request is appended to
REQUEST_LOG as one JSON line: method, path, the Authorization header and the JSON body.
"""

import json
import socket
import sys

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings


class RequestLog:
    """ASGI middleware appending each HTTP request (with its whole body) to a file."""

    def __init__(self, app, path):
        self.app = app
        self.path = path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks = []

        async def logged_receive():
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    self.write(scope, b"".join(chunks))
            return message

        if scope["method"] == "GET":
            self.write(scope, b"")
        return await self.app(scope, logged_receive, send)

    def write(self, scope, body):
        headers = dict(scope["headers"])
        auth = headers.get(b"authorization")
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        entry = {
            "method": scope["method"],
            "path": scope["path"],
            "authorization": auth.decode() if auth is not None else None,
            "body": parsed,
        }
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")


def main(model, alias, api_key, log_path):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(
        server_settings=ServerSettings(host="127.0.0.1", port=port, api_key=api_key),
        model_settings=[
            ModelSettings(
                model=model,
                model_alias=alias,
                n_ctx=4096,
                n_threads=1,
                n_threads_batch=1,
                seed=0,
                verbose=False,
            )
        ],
    )
    app = RequestLog(app, log_path)
    # Connections wait in the backlog until uvicorn accepts them.
    sock.listen(16)
    print(port, flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: llama_server.py MODEL.gguf ALIAS API_KEY REQUEST_LOG.jsonl")
    main(*sys.argv[1:])
