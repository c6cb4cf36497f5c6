"""A suggester that attacks the machine it runs on, for tests/it/sandbox_holds.rs and
tests/it/sandbox_limits.rs.

It answers `initialize` and `shutdown` like any suggester; at its first `suggest` (or
`complete`) it does what HOSTILE_ACTION names, appends one JSON line with what it
found to HOSTILE_LOG (when set), then answers with nothing, or `complete` with that
JSON line as its text (if it is still alive):

- escape: what root inside the sandbox can do: its effective capabilities and seccomp
  filters (from /proc/self/status), remounting
  read-write a read-only bind (HOSTILE_RO, then writing HOSTILE_RO/planted), /usr and
  /etc, unmounting the mask over /etc/shadow and reading it, listing /etc/ssl/private,
  a new user namespace. Each system call is made through libc, and its errno kept.
- env: the names in its environment, and whether OPENAI_API_KEY is among them.
- fork: 5,000 `sleep HOSTILE_TAG` children, one after the other.
- disk: a 4 GiB file in its working directory.
- files: 1 MiB files in its working directory, up to 4,096 of them.
- tmp: 1 MiB files in /tmp until it is full (or 4,096 of them), then sleep HOSTILE_TAG
  seconds.
- memory: 4 children that each write 700 MB of memory, then sleep HOSTILE_TAG seconds.
- daemon: a `sleep HOSTILE_TAG` that leaves its process group (setsid, double fork).

Imported (a test copies it into a task's repository), its functions are a model answer's
attack, run by the task's tests.
"""
import ctypes
import errno
import json
import os
import subprocess
import sys
import time

ACTION = os.environ.get("HOSTILE_ACTION", "")
LOG = os.environ.get("HOSTILE_LOG")
TAG = os.environ.get("HOSTILE_TAG", "600")
LIBC = ctypes.CDLL(None, use_errno=True)
MS_BIND, MS_REMOUNT = 4096, 32
CLONE_NEWUSER = 0x10000000


def call(result):
    """`ok` when the libc call returned 0, else the errno's name."""
    if result == 0:
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def remount_rw(path):
    return call(LIBC.mount(b"none", path.encode(), None, MS_REMOUNT | MS_BIND, None))


def read(path):
    """How many bytes `path` holds, or the errno's name."""
    try:
        with open(path, "rb") as f:
            return len(f.read())
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def escape():
    found = {}
    with open("/proc/self/status") as f:
        status = dict(l.split(":", 1) for l in f if ":" in l)
    for field in ("CapEff", "Seccomp", "Seccomp_filters"):
        found[field] = status.get(field, "").strip()
    ro = os.environ.get("HOSTILE_RO")
    if ro:
        found["remount read-only path"] = remount_rw(ro)
        try:
            with open(os.path.join(ro, "planted"), "w") as f:
                f.write("escaped")
            found["planted"] = True
        except OSError:
            found["planted"] = False
    found["remount /usr"] = remount_rw("/usr")
    found["remount /etc"] = remount_rw("/etc")
    found["umount /etc/shadow"] = call(LIBC.umount2(b"/etc/shadow", 0))
    found["/etc/shadow"] = read("/etc/shadow")
    try:
        found["/etc/ssl/private"] = sorted(os.listdir("/etc/ssl/private"))
    except OSError as e:
        found["/etc/ssl/private"] = errno.errorcode.get(e.errno, str(e.errno))
    found["unshare user"] = call(LIBC.unshare(CLONE_NEWUSER))
    return found


def environment():
    return {"names": sorted(os.environ), "OPENAI_API_KEY": "OPENAI_API_KEY" in os.environ,
            "HOME": os.environ.get("HOME")}


def fork():
    started = 0
    for _ in range(5000):
        try:
            subprocess.Popen(["sleep", TAG])
            started += 1
        except OSError:
            time.sleep(0.01)
    return {"started": started}


def disk():
    with open("big", "wb") as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(4096):
            f.write(chunk)
    return {"written": 4096}


def files():
    chunk = b"x" * (1 << 20)
    for i in range(4096):
        with open(f"file-{i}", "wb") as f:
            f.write(chunk)
        time.sleep(0.002)
    return {"written": 4096}


def tmp():
    chunk = b"x" * (1 << 20)
    written = 0
    try:
        for i in range(4096):
            with open(f"/tmp/file-{i}", "wb") as f:
                f.write(chunk)
            written += 1
    except OSError as e:
        written = errno.errorcode.get(e.errno, str(e.errno))
    time.sleep(float(TAG))
    return {"written": written}


def memory():
    grab = f"x = bytearray(b'\\x01') * (700 * 1000 * 1000); import time; time.sleep({TAG})"
    children = [subprocess.Popen([sys.executable, "-c", grab]) for _ in range(4)]
    for child in children:
        child.wait()
    return {"exits": [c.returncode for c in children]}


def daemon():
    subprocess.run(["setsid", "sh", "-c", f"sleep {TAG} >/dev/null 2>&1 &"], check=True)
    return {"daemon": True}


ACTIONS = {"escape": escape, "env": environment, "fork": fork, "disk": disk, "files": files,
           "tmp": tmp, "memory": memory, "daemon": daemon}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve():
    acted = False
    report = ""
    for line in sys.stdin:
        message = json.loads(line)
        method, msg_id = message.get("method"), message.get("id")
        if method in ("suggest", "complete") and not acted:
            acted = True
            found = ACTIONS[ACTION]() if ACTION else {}
            report = json.dumps({"action": ACTION, "found": found})
            if LOG:
                with open(LOG, "a") as f:
                    f.write(report + "\n")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"name": "hostile", "version": "1"}})
        elif method == "suggest":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"edits": []}})
        elif method == "generate":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"text": ""}})
        elif method == "complete":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"text": report, "reads": []}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": msg_id, "result": None})
            break
        elif msg_id is not None:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": method}})


if __name__ == "__main__":
    serve()
