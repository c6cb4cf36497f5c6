#!/usr/bin/env python3
"""Historian and nextedit side by side, on the same commits with the same trivial SUT.

Usage:
    python3 replay/historian_side_by_side.py --historian DIR [--historian-python PY]
        [--nextedit BIN] [--fallback first|random] [--wrong line0|free] [--big N]
        [--repeat N] [--workdir DIR] [--json-out FILE]

BIN defaults to target/release/nextedit (else target/debug/nextedit).

DIR is a checkout of Historian (code-philia/Historian, MIT; reference: HEAD ba93803). It is
not part of this repository: get it with `git clone` of code-philia/Historian (or any copy
of it). PY is a Python that can import Historian's simulation package: python-dotenv,
requests, networkx, tqdm, fuzzy-json and tree-sitter==0.20.4 (the prebuilt grammars in
libs/tree-sitter/linux_build/my-languages.so only load with py-tree-sitter 0.20.x), e.g.
    python3 -m venv /tmp/hvenv && /tmp/hvenv/bin/pip install tree-sitter==0.20.4 \
        python-dotenv requests networkx tqdm fuzzy-json

What it does, without network:
  1. makes small local git repositories, one commit each on top of a base commit
     (Historian's worked example of historian.md §14 and more multi-edit Python commits);
  2. runs Historian's own replay (`simulation.main.rq3_origin`) on each, in a separate
     process with PY: REPOS_DIR holds a clone of each repository under its project name,
     so Historian's `extract_hunks` finds it and never clones; the commit URL is
     https://github.com/local/<project>/commit/<sha> (only parsed, never fetched); the
     SUT replay/historian_sxs_sut.py is registered as systemUnderTest.SxsTrivial.main;
     flow analysis off (Historian's default); random.seed(42) as its __main__ does;
  3. runs `nextedit replay` in compat settings on the same commits: one trajectory per
     commit (`nextedit derive` when the binary has it, else built here from
     `git diff -U<huge>` exactly like Historian's edit extraction, minus its newline
     bug), order.initial = [e0], no order edges, --order adaptive --match historian,
     the same SUT through replay/historian_sut.py, sandboxed as replay always is: the
     SUT's side file is mounted read-only (--sandbox-ro) and named to it with the shim's
     --env, and --reveal commit gives it the project and commit it keys on (Historian
     sends both to every SUT);
  4. prints per commit and step both tools' flow lists (predictions as file:start-end,
     current coordinates) and applied edit, the differences, and the wall times.

Every differing step is explained by the §15 bug of historian.md that causes it (bug 19:
reverting by line overlap only; bug 8: first match in list order instead of best-ranked;
bug 14: random fallback), or marked UNEXPLAINED; steps after the two tools applied
different edits are reported as such (different states, not comparable). A step where
one tool predicted nothing, or a location only one tool predicted, is UNEXPLAINED.

Exit status 1, with no speed-up printed, when the comparison measured nothing or did not
hold: a step of either tool failed (a Historian commit raised, a nextedit call failed,
the nextedit run FAILED), a commit has steps in one tool only, or a difference is
UNEXPLAINED. Only a run where both tools replayed every commit prints the ratios.

Wall times: whole process of each tool (Historian: Python start, its imports, replay;
nextedit: the binary, one SUT process per commit), plus Historian's replay alone and
both frameworks without the SUT (Historian: minus the time inside SUT.main; nextedit:
minus suggest/generate call time and the measured start-up of one SUT process per commit).

--fallback first makes Historian's random fallback choice (bug 14: random.choice among
allowed edits when nothing keeps the flow) pick the first allowed edit -- nextedit's
deterministic policy -- by replacing random.choice in the Historian process (its code is
not changed). --fallback random keeps Historian's own choice (seed 42).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUT_FILE = os.path.join(HERE, "historian_sxs_sut.py")
SUT_NAME = "SxsTrivial"
CLASSES = ["flow_keeping", "flow_jumping", "flow_breaking", "flow_reverting"]

# --------------------------------------------------------------------------- commits

A_PY = """import os


def compute(x):
    return x + 1


def helper(y):
    return compute(y) * 2


class Foo:
    def bar(self):
        return compute(3)
"""
A_PY2 = """import os
import math


def compute(x, scale=1):
    return (x + 1) * scale


def helper(y):
    return compute(y, scale=2) * 2


class Foo:
    def bar(self):
        value = compute(3, scale=math.pi)
        return value
"""
B_PY = """from pkg.a import compute


def run():
    total = compute(10)
    print(total)
    return total
"""
B_PY2 = B_PY.replace("compute(10)", "compute(10, scale=3)")

UTILS = """import json


def fetch_data(path):
    with open(path) as f:
        return json.load(f)


def save(path, data):
    with open(path, "w") as f:
        json.dump(data, f)
"""
APP = """from utils import fetch_data, save


def main(argv):
    config = fetch_data(argv[1])
    items = fetch_data(config["items"])
    save(config["out"], items)
    return 0
"""
CLI = """import sys

from utils import fetch_data


def show(path):
    data = fetch_data(path)
    for key in sorted(data):
        print(key, data[key])


if __name__ == "__main__":
    show(sys.argv[1])
"""

GEOMETRY = """def area(w, h):
    return w * h


def perimeter(w, h):
    return 2 * (w + h)
"""
GEOMETRY2 = """UNITS = {"m": 1.0, "cm": 0.01}


def area(w, h, unit="m"):
    factor = UNITS[unit]
    return w * h * factor * factor


def perimeter(w, h):
    return 2 * (w + h)
"""
REPORT = """from geometry import area, perimeter


def summary(rooms):
    lines = []
    for name, (w, h) in rooms.items():
        lines.append(f"{name}: {area(w, h)}")
    return lines


def total(rooms):
    return sum(area(w, h) for w, h in rooms.values())


def fence(rooms):
    return sum(perimeter(w, h) for w, h in rooms.values())
"""
REPORT2 = (REPORT.replace("{area(w, h)}", "{area(w, h, unit='cm')}")
           .replace("sum(area(w, h) for", "sum(area(w, h, unit) for")
           .replace("def total(rooms):", "def total(rooms, unit=\"m\"):"))

API = """from models import User


def create(name):
    user = User(name)
    user.save()
    return user


def lookup(name):
    return User.find(name)
"""
API2 = """from models import Account


def create(name):
    account = Account(name)
    account.save()
    return account


def lookup(name):
    return Account.find(name)
"""
MODELS = """class User:
    registry = {}

    def __init__(self, name):
        self.name = name

    def save(self):
        User.registry[self.name] = self

    @classmethod
    def find(cls, name):
        return cls.registry.get(name)
"""
MODELS2 = MODELS.replace("class User:", "class Account:").replace("User.registry", "Account.registry")
SERVICE = """from models import User


def bulk(names):
    return [User(n) for n in names]
"""
SERVICE2 = SERVICE.replace("User", "Account")

STORE = """import logging

log = logging.getLogger(__name__)


class Store:
    def __init__(self):
        self.items = {}

    def put(self, key, value):
        self.items[key] = value

    def get(self, key):
        return self.items.get(key)
"""
STORE2 = """import logging
import threading

log = logging.getLogger(__name__)


class Store:
    def __init__(self):
        self.items = {}
        self.lock = threading.Lock()

    def put(self, key, value):
        with self.lock:
            self.items[key] = value

    def get(self, key):
        with self.lock:
            return self.items.get(key)
"""


def big_commit(n):
    """A rename of a module constant used in n functions of one file and in another."""
    body = ["LIMIT_OLD = 10\n", "\n"]
    for i in range(n):
        body += [f"\n\ndef f{i}(x):\n", f"    y = x * {i}\n", f"    if y > LIMIT_OLD:\n",
                 f"        return LIMIT_OLD\n", "    return y\n"]
    mod = "".join(body)
    use = "from mod import LIMIT_OLD\n\n\ndef cap(v):\n    return min(v, LIMIT_OLD)\n"
    return {"mod.py": (mod, mod.replace("LIMIT_OLD", "LIMIT_NEW")),
            "use.py": (use, use.replace("LIMIT_OLD", "LIMIT_NEW"))}


def fixtures(big):
    out = [
        ("demo", "Add scale parameter to compute", {"pkg/a.py": (A_PY, A_PY2), "pkg/b.py": (B_PY, B_PY2)}),
        ("rename", "Rename fetch_data to load_data",
         {"utils.py": (UTILS, UTILS.replace("fetch_data", "load_data")),
          "app.py": (APP, APP.replace("fetch_data", "load_data")),
          "cli.py": (CLI, CLI.replace("fetch_data", "load_data"))}),
        ("signature", "area takes a unit", {"geometry.py": (GEOMETRY, GEOMETRY2), "report.py": (REPORT, REPORT2)}),
        ("classrename", "Rename User to Account",
         {"api.py": (API, API2), "models.py": (MODELS, MODELS2), "service.py": (SERVICE, SERVICE2)}),
        ("locking", "Make Store thread-safe", {"store.py": (STORE, STORE2)}),
    ]
    if big:
        out.append(("bigrename", "Rename LIMIT_OLD to LIMIT_NEW", big_commit(big)))
    return out


def git(repo, *args, **kw):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True, **kw).stdout


def make_repo(root, project, message, files):
    repo = os.path.join(root, project)
    os.makedirs(repo)
    git(repo, "init", "-q")
    for key, value in [("user.name", "sxs"), ("user.email", "sxs@example.invalid"), ("commit.gpgsign", "false")]:
        git(repo, "config", key, value)

    def write(which):
        for path, texts in files.items():
            full = os.path.join(repo, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(texts[which])
        git(repo, "add", "-A")

    env = dict(os.environ, GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    write(0)
    subprocess.run(["git", "-C", repo, "commit", "-q", "-m", "base"], check=True, env=env)
    write(1)
    subprocess.run(["git", "-C", repo, "commit", "-q", "-m", message], check=True, env=env)
    return repo, git(repo, "rev-parse", "HEAD").strip()


# --------------------------------------------------------------------------- trajectories

def diff_blocks(diff_body):
    """Whole-file diff body (after the @@ line) -> edits, as Historian's converter, newlines kept."""
    edits, old, new, cur = [], 0, 0, None
    for line in diff_body.splitlines(keepends=True):
        tag, text = line[:1], line[1:]
        if tag == "\\":
            # "\ No newline at end of file": the previous line had no newline.
            continue
        if tag == " ":
            if cur:
                edits.append(cur)
                cur = None
            old += 1
            new += 1
            continue
        if cur is None:
            cur = {"before_start": old, "after_start": new, "before": [], "after": []}
        if tag == "-":
            cur["before"].append(text)
            old += 1
        elif tag == "+":
            cur["after"].append(text)
            new += 1
    if cur:
        edits.append(cur)
    return edits


def build_trajectory(repo, sha, project):
    parent = git(repo, "rev-parse", f"{sha}^").strip()
    message = git(repo, "show", sha, "--pretty=%B", "--no-patch").strip()
    paths = [p for p in git(repo, "diff", "--name-only", parent, sha).splitlines() if p]
    files, edits = [], []
    for path in sorted(paths):
        base = git(repo, "show", f"{parent}:{path}")
        diff = git(repo, "diff", "-U100000000", parent, sha, "--", path)
        body = diff.split("\n@@", 1)[1].split("\n", 1)[1]
        files.append({"path": path, "language": "python", "base_text": base,
                      "final_text": git(repo, "show", f"{sha}:{path}")})
        for block in diff_blocks(body):
            before, after = "".join(block["before"]), "".join(block["after"])
            kind = "insert" if not before else ("delete" if not after else "replace")
            edits.append({
                "id": f"e{len(edits)}", "file": path, "kind": kind,
                "before_lines": {"start": block["before_start"], "end": block["before_start"] + len(block["before"])},
                "after_lines": {"start": block["after_start"], "end": block["after_start"] + len(block["after"])},
                "before_text": before, "after_text": after, "origin": "commit",
            })
    return {
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": f"{project}-{sha[:10]}", "kind": "commit",
                    "commit": {"sha": sha, "parent": parent, "message": message, "project": project}},
        "files": files, "events": [], "edits": edits,
        "order": {"edges": [], "initial": ["e0"], "natural": [e["id"] for e in edits], "source": "side-by-side"},
    }


def has_derive(nextedit):
    r = subprocess.run([nextedit, "derive", "--help"], capture_output=True, text=True)
    return r.returncode == 0


def derive_trajectory(nextedit, repo, sha, out, project):
    subprocess.run([nextedit, "derive", "--repo", repo, "--commit", sha, "--out", out], check=True,
                   capture_output=True, text=True)
    with open(out) as f:
        t = json.load(f)
    # Compat settings: initial edit 0, no order edges (Historian HEAD: allowed = all remaining).
    t.setdefault("order", {})
    t["order"]["edges"] = []
    t["order"]["initial"] = [t["edits"][0]["id"]]
    t["session"].setdefault("commit", {})["project"] = project
    return t


# --------------------------------------------------------------------------- Historian worker

def historian_worker(args):
    """Runs inside Historian's Python: replays every commit with rq3_origin, writes a JSON summary."""
    with open(args.worker_plan) as f:
        plan = json.load(f)
    os.environ["REPOS_DIR"] = plan["repos_dir"]
    os.environ["OUTPUT_DIR"] = plan["output_dir"]
    os.environ["SXS_TARGET"] = plan["target"]
    os.environ["FLOW_ANALYSIS"] = "False"
    t_import = time.perf_counter()
    sys.path.insert(0, os.path.abspath(args.historian))
    import importlib.util
    import logging
    import random
    spec = importlib.util.spec_from_file_location(f"systemUnderTest.{SUT_NAME}.main", SUT_FILE)
    sut = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sut)
    sys.modules[f"systemUnderTest.{SUT_NAME}.main"] = sut
    sut_seconds = [0.0]
    inner = sut.main

    def timed_main(json_input):
        t = time.perf_counter()
        try:
            return inner(json_input)
        finally:
            sut_seconds[0] += time.perf_counter() - t
    sut.main = timed_main
    import simulation.main as hm
    logging.getLogger().setLevel(logging.WARNING)
    import_s = time.perf_counter() - t_import
    random.seed(42)
    if plan["fallback"] == "first":
        random.choice = lambda seq: seq[0]
    results = []
    for c in plan["commits"]:
        url = f"https://github.com/local/{c['project']}/commit/{c['sha']}"
        t0 = time.perf_counter()
        sut_seconds[0] = 0.0
        error = None
        try:
            hm.rq3_origin(url, SUT_NAME, "python")
        except Exception as e:  # keep going: one commit's failure is reported
            error = f"{type(e).__name__}: {e}"
        seconds = time.perf_counter() - t0
        fp = os.path.join(plan["output_dir"], f"{c['project']}-{c['sha'][:10]}-{SUT_NAME}-simulation-results.json")
        steps, order = [], []
        if os.path.exists(fp):
            with open(fp) as f:
                data = json.load(f)
            order = data["simulation_order"]
            for rec, applied in zip(data["SUT_prediction_records"][1:], order[1:]):
                steps.append({"predictions": historian_predictions(rec), "applied": applied,
                              "bleu": rec["evaluations"].get("BLEU-4"),
                              "precision": rec["evaluations"].get("precision@all"),
                              "recall": rec["evaluations"].get("recall@all")})
        results.append({"project": c["project"], "seconds": seconds, "sut_seconds": sut_seconds[0], "error": error, "order": order, "steps": steps})
    with open(args.worker_out, "w") as f:
        json.dump({"import_seconds": import_s, "commits": results}, f)


def historian_predictions(record):
    """Prediction windows of one step -> [(file, start, end, class)] in Historian's idx order."""
    where = {}
    for path, windows in (record.get("pred_snapshots") or {}).items():
        line = 0
        for w in windows:
            if isinstance(w, list):
                line += len(w)
            else:
                n = len(w.get("before") or [])
                where[w["idx"]] = (path, line, line + n)
                line += n
    cls = {}
    for name in CLASSES:
        for idx in record["evaluations"].get(name, []):
            cls[idx] = name
    return [[*where[i], cls.get(i, "?")] for i in sorted(where)]


# --------------------------------------------------------------------------- main

def short(cls):
    return {"flow_keeping": "K", "flow_jumping": "J", "flow_breaking": "B", "flow_reverting": "R"}.get(cls, "?")


def fmt(preds):
    return " ".join(f"{os.path.basename(f)}:{s}-{e}{short(c)}" for f, s, e, c in sorted(map(tuple, preds))) or "-"


def explain(hs, ns, diverged):
    """Why one step differs, in terms of historian.md §15 bug numbers (or UNEXPLAINED)."""
    if diverged:
        return ["state differs: an earlier step applied a different edit"]
    why = []
    for tool, step in (("Historian", hs), ("nextedit", ns)):
        if not step["predictions"] and (hs["predictions"] or ns["predictions"]):
            why.append(f"UNEXPLAINED: {tool} predicted nothing")
    if why:
        return why
    hp = {tuple(p[:3]): p[3] for p in hs["predictions"]}
    np_ = {tuple(p[:3]): p[3] for p in ns["predictions"]}
    for loc in sorted(set(hp) | set(np_)):
        h, n = hp.get(loc), np_.get(loc)
        where = f"{os.path.basename(loc[0])}:{loc[1]}-{loc[2]}"
        if h == n:
            continue
        if h is None or n is None:
            tool = "Historian" if n is None else "nextedit"
            why.append(f"{where}: UNEXPLAINED: predicted by {tool} only (the SUT saw different files)")
        elif (h, n) == ("flow_reverting", "flow_breaking"):
            why.append(f"{where} R/B: bug 19 (Historian: reverting = line overlap > 0.5 with an applied edit, "
                       "content ignored; nextedit: overlap and text moves back toward the before-text)")
        elif (h, n) == ("flow_breaking", "flow_reverting"):
            why.append(f"{where} B/R: bug 19 (Historian cannot see this revert: overlap only, deletions have no lines)")
        elif n == "flow_breaking" and h in ("flow_keeping", "flow_jumping"):
            why.append(f"{where} {short(h)}/B: bug 4 (Historian matches many-to-one) or bug 5/11 (insert rule)")
        elif h == "flow_breaking" and n in ("flow_keeping", "flow_jumping"):
            why.append(f"{where} B/{short(n)}: bug 5/6/11 (Historian's insert/replace matching rules)")
        else:
            why.append(f"{where} {short(h)}/{short(n)}: UNEXPLAINED")
    if hs["applied"] != ns["applied"]:
        kept = any(p[3] == "flow_keeping" for p in hs["predictions"])
        if kept:
            why.append(f"applied e{hs['applied']}/e{ns['applied']}: bug 8 (Historian applies the first keeping match "
                       "in list order, replace locations before inserts; nextedit the best-ranked)")
        else:
            why.append(f"applied e{hs['applied']}/e{ns['applied']}: bug 14 (Historian's fallback is random.choice)")
    return why


def metrics(step):
    if not step:
        return ""
    f = lambda x: "-" if x is None else f"{x:.2f}"
    return f"P {f(step['precision'])} R {f(step['recall'])} BLEU {f(step['bleu'])}"


def metrics_differ(hs, ns):
    """Whether P, R or BLEU differ where both tools computed them."""
    return any(hs[k] is not None and ns[k] is not None and abs(hs[k] - ns[k]) > 5e-3
               for k in ("precision", "recall", "bleu"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--historian", required=True, help="a Historian checkout (code-philia/Historian)")
    ap.add_argument("--historian-python", default=sys.executable, help="Python with Historian's dependencies")
    release = os.path.join(ROOT, "target", "release", "nextedit")
    ap.add_argument("--nextedit", default=release if os.path.exists(release) else os.path.join(ROOT, "target", "debug", "nextedit"))
    ap.add_argument("--fallback", choices=["first", "random"], default="first")
    ap.add_argument("--wrong", choices=["line0", "free"], default="line0",
                    help="where the SUT puts its wrong guess: line 0 (can sit on an applied edit: shows bug 19) "
                         "or a line away from every edit")
    ap.add_argument("--big", type=int, default=0, help="also a rename commit with N call sites (scaling)")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="run each tool N times, report the fastest")
    ap.add_argument("--json-out", help="write all figures here")
    ap.add_argument("--worker-plan", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_plan:
        return historian_worker(args)

    os.environ["SXS_WRONG"] = args.wrong
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ next to the SUT in this repository
    work = args.workdir or tempfile.mkdtemp(prefix="sxs-")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "repos")
    hist_repos = os.path.join(work, "historian-repos")
    for d in (src, hist_repos):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    commits, target, trajectories = [], {}, []
    use_derive = has_derive(args.nextedit)
    for project, message, files in fixtures(args.big):
        repo, sha = make_repo(src, project, message, files)
        subprocess.run(["git", "clone", "-q", repo, os.path.join(hist_repos, project)], check=True)
        commits.append({"project": project, "sha": sha})
        target[project] = {p: t[1] for p, t in files.items()}
        tpath = os.path.join(work, f"{project}.trajectory.json")
        t = derive_trajectory(args.nextedit, repo, sha, tpath, project) if use_derive else build_trajectory(repo, sha, project)
        with open(tpath, "w") as f:
            json.dump(t, f, indent=1)
        trajectories.append(tpath)
    target_path = os.path.join(work, "target.json")
    with open(target_path, "w") as f:
        json.dump(target, f)

    def run_historian():
        out_dir = os.path.join(work, "historian-out")
        shutil.rmtree(out_dir, ignore_errors=True)  # an existing results file would be replayed, not run
        plan = {"repos_dir": hist_repos, "output_dir": out_dir, "target": target_path,
                "fallback": args.fallback, "commits": commits}
        plan_path, hist_out = os.path.join(work, "plan.json"), os.path.join(work, "historian-summary.json")
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        t0 = time.perf_counter()
        r = subprocess.run([args.historian_python, os.path.abspath(__file__), "--historian", args.historian,
                            "--worker-plan", plan_path, "--worker-out", hist_out],
                           cwd=args.historian, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit("Historian worker failed")
        with open(hist_out) as f:
            return wall, json.load(f)

    def run_nextedit():
        db = os.path.join(work, "nextedit.db")
        if os.path.exists(db):
            os.remove(db)
        # The SUT reads its side file inside the sandbox: mounted read-only and named with
        # the shim's --env (the sandbox passes an allow-listed environment only).
        shim = (f"{sys.executable} {os.path.join(HERE, 'historian_sut.py')} --env SXS_TARGET={target_path} "
                f"--env SXS_WRONG={args.wrong} {SUT_FILE}")
        cmd = [args.nextedit, "replay", *sum((["--trajectory", t] for t in trajectories), []),
               "--suggester", f"cmd:{shim}", "--sandbox-ro", target_path, "--reveal", "commit",
               "--order", "adaptive", "--match", "historian", "--json", "--quiet", "--db", db]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SXS_TARGET=target_path))
        wall = time.perf_counter() - t0
        if r.returncode not in (0, 1) or not r.stdout.strip():
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit(f"nextedit replay failed (exit status {r.returncode})")
        out = json.loads(r.stdout)
        import sqlite3
        with sqlite3.connect(db) as con:
            sut_ms = con.execute("select coalesce(sum(suggest_ms),0)+coalesce(sum(generate_ms),0) from run_steps").fetchone()[0]
        verdicts = [v["verdict"]["reason"] for v in out["summary"].get("verdicts", []) if v["verdict"]["failed"]]
        problems = [f"nextedit run FAILED: {reason}" for reason in verdicts]
        if r.returncode != 0 and not problems:
            problems.append("nextedit replay exited 1: " + (r.stderr.strip().splitlines() or ["?"])[-1])
        return wall, sut_ms / 1000.0, out["trajectories"], problems

    hist_runs = [run_historian() for _ in range(args.repeat)]
    ne_runs = [run_nextedit() for _ in range(args.repeat)]
    hist_wall, hist = min(hist_runs, key=lambda r: r[0])
    ne_wall, ne_sut, ne_traj, ne_problems = min(ne_runs, key=lambda r: r[0])
    # What one SUT process start costs nextedit (the shim reads EOF and exits): Historian calls
    # its SUT in-process, nextedit starts one suggester process per commit.
    starts = []
    for _ in range(max(3, len(commits))):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, os.path.join(HERE, "historian_sut.py"), SUT_FILE], stdin=subprocess.DEVNULL,
                       capture_output=True)
        starts.append(time.perf_counter() - t0)
    sut_start = sorted(starts)[len(starts) // 2]
    ne_framework = ne_wall - ne_sut - sut_start * len(commits)
    hist_replay = sum(h["seconds"] for h in hist["commits"])
    hist_sut = sum(h["sut_seconds"] for h in hist["commits"])

    report = {"fallback": args.fallback, "wrong": args.wrong, "derive": use_derive, "commits": [],
              "historian_wall_s": hist_wall, "historian_import_s": hist["import_seconds"],
              "historian_replay_s": hist_replay, "historian_sut_s": hist_sut,
              "nextedit_wall_s": ne_wall, "nextedit_sut_calls_s": ne_sut, "sut_process_start_s": sut_start,
              "nextedit_framework_s": ne_framework, "nextedit_binary": args.nextedit,
              "walls": {"historian": [r[0] for r in hist_runs], "nextedit": [r[0] for r in ne_runs]}}
    total_diff = 0
    problems = list(ne_problems)
    for h in hist["commits"]:
        if h["error"]:
            problems.append(f"Historian failed on {h['project']}: {h['error']}")
    if len(ne_traj) != len(commits):
        problems.append(f"nextedit replayed {len(ne_traj)} of {len(commits)} commits")
    for c, h, n in zip(commits, hist["commits"], ne_traj):
        failed = [(step["step"], call.split("_")[0], step[call]) for step in n["steps"]
                  for call in ("suggest_error", "generate_error") if step.get(call)]
        if failed:
            first = failed[0]
            problems.append(f"nextedit {c['project']}: {len(failed)} calls failed in {len(n['steps'])} steps "
                            f"(the first, step {first[0]} {first[1]}: {first[2]})")
        n_steps = [{"predictions": [[p["file"], p["start_line"], p["end_line"], p["class"]] for p in s["predictions"]],
                    "applied": int(s["applied"].lstrip("e")),
                    "bleu": (s.get("content") or {}).get("bleu"),
                    "precision": s.get("precision"), "recall": s.get("recall")} for s in n["steps"]]
        print(f"== {c['project']} {c['sha'][:10]}  Historian {h['seconds']:.3f}s"
              + (f"  ERROR {h['error']}" if h["error"] else ""))
        diffs = []
        diverged = False
        for i in range(max(len(h["steps"]), len(n_steps))):
            hs = h["steps"][i] if i < len(h["steps"]) else None
            ns = n_steps[i] if i < len(n_steps) else None
            hp = fmt(hs["predictions"]) if hs else "(none)"
            np_ = fmt(ns["predictions"]) if ns else "(none)"
            ha = hs["applied"] if hs else None
            na = ns["applied"] if ns else None
            same = hs and ns and sorted(map(tuple, hs["predictions"])) == sorted(map(tuple, ns["predictions"])) and ha == na
            mark = "  " if same else "!="
            hm_, nm_ = metrics(hs), metrics(ns)
            if same and metrics_differ(hs, ns):
                mark = "~="
            print(f" {mark} step {i + 1}: historian [{hp}] -> e{ha}  {hm_}")
            print(f"            nextedit  [{np_}] -> e{na}  {nm_}")
            if not same:
                why = explain(hs, ns, diverged) if hs and ns else ["UNEXPLAINED: step missing in one tool"]
                for w in why:
                    print(f"            why: {w}")
                diffs.append({"step": i + 1, "why": why})
            if hs and ns and hs["applied"] != ns["applied"]:
                diverged = True
        total_diff += len(diffs)
        report["commits"].append({"project": c["project"], "sha": c["sha"], "historian": h, "nextedit": n_steps,
                                  "differing_steps": diffs})
    print()
    print("K keeping, J jumping, B breaking, R reverting; predictions as file:start-end (current lines).")
    print(f"steps differing: {total_diff} of {sum(len(c['nextedit']) for c in report['commits'])}")
    reasons = {}
    for c in report["commits"]:
        for d in c["differing_steps"]:
            for w in d["why"]:
                key = w.split(": ", 1)[1].split(" (")[0] if ": " in w else w
                reasons[key] = reasons.get(key, 0) + 1
    for key, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d} x {key}")
    unexplained = sum(1 for c in report["commits"] for d in c["differing_steps"]
                      if any("UNEXPLAINED" in w for w in d["why"]))
    if unexplained:
        problems.append(f"{unexplained} differing steps are UNEXPLAINED")
    report["problems"] = problems
    print(f"wall time (fastest of {args.repeat}; whole process, same SUT):")
    print(f"  Historian {hist_wall:.3f}s  (imports {hist['import_seconds']:.3f}s, replay {hist_replay:.3f}s "
          f"of which SUT calls {hist_sut:.3f}s)")
    print(f"  nextedit  {ne_wall:.3f}s  (SUT calls {ne_sut:.3f}s, {len(commits)} SUT process starts "
          f"at ~{sut_start:.3f}s; framework ~{ne_framework:.3f}s)  [{args.nextedit}]")
    if problems:
        # A run that measured nothing (or compared badly) has no speed-up to print.
        for problem in problems:
            print(f"FAILED: {problem}")
    else:
        framework = (f"{(hist_replay - hist_sut) / ne_framework:.1f}x" if ne_framework > 0.01
                     else "n/a (nextedit's framework time is below the noise of the start-up estimate)")
        print(f"  ratio end to end: {hist_wall / ne_wall:.1f}x; replay only (Historian without its imports): "
              f"{hist_replay / ne_wall:.1f}x; framework only (both without SUT calls and process starts): {framework}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)
    if not args.keep and not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
