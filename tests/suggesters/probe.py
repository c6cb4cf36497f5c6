"""A suggester that looks for the future through every side channel it can think of.

At every call it checks: the environment; /proc (every visible process's command line,
environment and working directory); the whole visible file system (contents, `.git`
directories and SQLite files outside the system's and the interpreter's own
directories); `git log --all -p` in its working directory and in the original
repository; the original repository, the trajectory files and the nextedit database
by path (also through a symlink planted in the worktree); $HOME; the parent
directories; the network (a TCP listener the test opened on 127.0.0.1); and the
`initialize` message. It never suggests anything. It appends one JSON line per call to
PROBE_LOG: {method, cwd, worktree, trajectory, findings}, findings being what it found.

Environment (set for nextedit by the test, so inherited): PROBE_MARKER_REVERSED (the
string only the gold edit holds, reversed), PROBE_REPO, PROBE_DB, PROBE_TRAJECTORIES (':'-separated),
PROBE_SHA, PROBE_PORT, PROBE_LOG, PROBE_WALK (1: walk the whole file system)."""
import json
import os
import socket
import subprocess
import sys

# Reversed in the environment, so no process's environment holds the marker itself.
MARKER = os.environ["PROBE_MARKER_REVERSED"][::-1].encode()
REPO = os.environ["PROBE_REPO"]
DB = os.environ["PROBE_DB"]
TRAJECTORIES = [p for p in os.environ["PROBE_TRAJECTORIES"].split(":") if p]
SHA = os.environ["PROBE_SHA"]
PORT = int(os.environ["PROBE_PORT"])
LOG = os.environ["PROBE_LOG"]
WALK = os.environ.get("PROBE_WALK") == "1"
# Where this interpreter lives: its files are read by name only (they are large).
OWN = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.executable)}
             | {os.environ.get("PYENV_ROOT", "/nonexistent")})
CONTENT_SKIPPED = ("/usr", "/etc", "/opt", "/proc", "/sys", "/dev")
MAX_READ = 20 * 1024 * 1024


def contains_marker(path):
    try:
        with open(path, "rb") as f:
            return MARKER in f.read(MAX_READ)
    except OSError:
        return False


def environment():
    found = []
    for key, value in os.environ.items():
        if key.startswith("NEXTEDIT_") and key != "NEXTEDIT_REPLAY_DB":
            found.append(f"env {key}")
        # sh sets PWD to its working directory, the worktree: anything else is a leak.
        if key in ("PWD", "OLDPWD") and not value.startswith(os.path.dirname(WORKTREE_PARENT[0])):
            found.append(f"env {key}={value}")
        if MARKER in value.encode():
            found.append(f"env {key} holds the marker")
    return found


def proc():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            for what, needle in (("marker", MARKER), ("repository", REPO.encode()),
                                 ("database", DB.encode())):
                if needle in data and not (name == "environ" and what != "marker"):
                    found.append(f"/proc/{pid}/{name} names the {what}")
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if cwd.startswith(REPO):
                found.append(f"/proc/{pid}/cwd is in the repository")
        except OSError:
            pass
    return found


def walk(names_seen):
    """Contents of every readable file, `.git` directories and SQLite files outside the
    system's and the interpreter's directories (walked once, by name)."""
    found = []
    for top in sorted(os.listdir("/")):
        root = "/" + top
        if root in ("/proc", "/sys", "/dev") or os.path.islink(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            content = not dirpath.startswith(CONTENT_SKIPPED) and not any(
                dirpath == o or dirpath.startswith(o + "/") for o in OWN)
            if not content and dirpath in names_seen:
                dirnames[:] = []
                continue
            # (The interpreter's own install may be a git checkout: pyenv is.)
            if content and (".git" in dirnames or ".git" in filenames):
                found.append(f".git in {dirpath}")
            if not content:
                names_seen.add(dirpath)
                continue
            for name in filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                try:
                    with open(path, "rb") as f:
                        head = f.read(16)
                except OSError:
                    continue
                if head.startswith(b"SQLite format 3") and path != os.environ.get("NEXTEDIT_REPLAY_DB"):
                    found.append(f"SQLite database {path}")
                if contains_marker(path):
                    found.append(f"marker in {path}")
    return found


def paths(worktree):
    found = []
    for what, path in [("repository", REPO), ("database", DB)] + [("trajectory", t) for t in TRAJECTORIES]:
        if os.path.exists(path):
            found.append(f"{what} visible: {path}")
    for t in TRAJECTORIES:
        if contains_marker(t):
            found.append(f"marker in trajectory {t}")
    if contains_marker(os.path.join(REPO, "z.py")):
        found.append("marker in the repository's z.py")
    try:
        import sqlite3
        rows = sqlite3.connect(f"file:{DB}?mode=ro", uri=True).execute(
            "SELECT trajectory FROM run_trajectories").fetchall()
        if any(MARKER in (r[0] or "").encode() for r in rows):
            found.append("marker in the database's run_trajectories")
    except Exception:
        pass
    link = os.path.join(worktree, ".probe-link")
    try:
        os.symlink(REPO, link)
        if os.path.exists(os.path.join(link, "z.py")):
            found.append("repository reachable through a symlink in the worktree")
    except OSError:
        pass
    finally:
        if os.path.islink(link):
            os.unlink(link)
    home = os.environ.get("HOME")
    if home and os.path.isdir(home):
        for entry in os.listdir(home):
            full = os.path.realpath(os.path.join(home, entry))
            if not any(o == full or o.startswith(full + "/") for o in OWN):
                found.append(f"home entry {entry}")
    parent = os.path.dirname(worktree.rstrip("/"))
    # Its own: the worktree, the reads-only database and its HOME.
    own = {worktree.rstrip("/"), os.path.join(parent, "reads.db"), home}
    for entry in os.listdir(parent):
        if os.path.join(parent, entry) not in own:
            found.append(f"next to the worktree: {entry}")
    return found


def git():
    found = []
    for where in (".", REPO):
        try:
            out = subprocess.run(["git", "-C", where, "log", "--all", "-p"], capture_output=True,
                                 timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if MARKER in out:
            found.append(f"git log in {where} shows the marker")
    return found


def network():
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=2):
            return [f"network: connected to 127.0.0.1:{PORT}"]
    except OSError:
        return []


names_seen = set()
# The worker's directory (holding the worktrees), known at initialize.
WORKTREE_PARENT = ["/nonexistent/x"]
worktree = None
for line in sys.stdin:
    message = json.loads(line)
    method, params = message["method"], message.get("params") or {}
    worktree = params.get("worktree", worktree)
    if worktree:
        WORKTREE_PARENT[0] = worktree.rstrip("/")
    try:
        cwd = os.getcwd()
    except OSError:
        # A process serves the next trajectory in the previous one's removed worktree.
        cwd = None
    entry = {"method": method, "cwd": cwd, "worktree": worktree}
    if method == "initialize":
        entry["trajectory"] = params.get("trajectory")
        entry["project"] = params.get("project")
    if method != "shutdown":
        # After the last step the gold edit is in the worktree: only calls before it count.
        findings = environment() + proc() + paths(worktree) + git() + network()
        if MARKER in line.encode():
            findings.append(f"marker in the {method} message")
        if SHA[:7] in line:
            findings.append(f"commit sha in the {method} message")
        if WALK:
            findings += walk(names_seen)
        entry["findings"] = findings
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")
    result = {"initialize": {"name": "probe"}, "suggest": {"edits": []}, "generate": {"text": ""},
              "shutdown": None}[method]
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    if method == "shutdown":
        break
