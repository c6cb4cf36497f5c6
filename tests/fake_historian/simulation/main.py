"""A stand-in for Historian's `simulation.main`, for testing replay/historian_side_by_side.py.

Not Historian: it speaks the protocol the side-by-side script uses and nothing more
(reference: Historian HEAD ba93803, /work/shared/reference/historian.md §2, §5-§9, §11).
`rq3_origin(url, sut, language)` replays one commit of REPOS_DIR/<project> through the SUT
module `systemUnderTest.<sut>.main` and writes OUTPUT_DIR/<project>-<sha10>-<sut>-simulation-results.json:

  * edits: the change blocks of `git diff -U<huge> sha^ sha`, numbered in file order; the
    work tree is checked out at the parent and rewritten after every step;
  * initial edit 0; allowed = every remaining edit (HEAD); `init`, then one
    `suggestion(location+content)` per remaining edit, `suggestion(content)` when nothing
    keeps the flow, with the gold edit in `target_edit` (as HEAD leaks it);
  * matching (HEAD's shape, simpler rules): each prediction location in list order (replace
    locations, then inserts) takes the first gold location of its kind in the same file with
    Dice(lines) > 0.5 (replace) or the same insertion line (insert) and the same `after` text
    (exact, where Historian takes BLEU > 50); matched: flow_keeping; unmatched: flow_reverting
    when Dice with an applied edit's current lines > 0.5 (overlap only, bug 19), else
    flow_breaking;
  * next edit: the first keeping match in list order, else random.choice(allowed);
  * precision@all = keeping / predictions, recall@all = keeping / remaining; BLEU-4 is not
    computed (None).

FAKE_HISTORIAN=crash makes rq3_origin raise for the project `rename` (a commit that fails);
FAKE_HISTORIAN=jump calls every match flow_jumping, which HEAD never does (a difference no
bug explains).
"""
import importlib
import json
import os
import random
import subprocess
import sys


def _git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def _edits(repo, sha):
    """(files: {path: [unchanged list | edit index]}, edits) of the commit, Historian's numbering."""
    paths = sorted(p for p in _git(repo, "diff", "--name-only", f"{sha}^", sha).splitlines() if p)
    files, edits = {}, []
    for path in paths:
        diff = _git(repo, "diff", "-U100000000", f"{sha}^", sha, "--", path)
        body = diff.split("\n@@", 1)[1].split("\n", 1)[1]
        parts, block = [], None
        for line in body.splitlines(keepends=True):
            tag, text = line[:1], line[1:]
            if tag == "\\":
                continue
            if tag == " ":
                if block is not None:
                    parts.append(len(edits) - 1)
                    block = None
                if not parts or not isinstance(parts[-1], list):
                    parts.append([])
                parts[-1].append(text)
                continue
            if block is None:
                block = {"idx": len(edits), "file_path": path, "before": [], "after": [], "simulated": False}
                edits.append(block)
            block["before" if tag == "-" else "after"].append(text)
        if block is not None:
            parts.append(len(edits) - 1)
        files[path] = parts
    for e in edits:
        e["type"] = "insert" if not e["before"] else ("delete" if not e["after"] else "replace")
    return files, edits


def _current(files, edits):
    """Current text per file; sets every edit's currently_start_at_line."""
    out = {}
    for path, parts in files.items():
        lines = []
        for part in parts:
            if isinstance(part, list):
                lines.extend(part)
            else:
                e = edits[part]
                e["currently_start_at_line"] = len(lines)
                lines.extend(e["after"] if e["simulated"] else e["before"])
        out[path] = lines
    return out


def _locations(snapshot):
    """Prediction windows -> locations (list order: replace locations, then inserts), each with its idx."""
    replaces, inserts, idx = [], [], 0
    for path, windows in (snapshot or {}).items():
        line = 0
        for w in windows:
            if isinstance(w, list):
                line += len(w)
                continue
            w["idx"] = idx
            before = w.get("before") or []
            loc = {"idx": idx, "file": path, "after": w.get("after") or [],
                   "lines": list(range(line, line + len(before))) if before else [line], "insert": not before}
            (inserts if not before else replaces).append(loc)
            line += len(before)
            idx += 1
    return replaces + inserts


def _dice(a, b):
    a, b = set(a), set(b)
    return 0.0 if not a and not b else len(a & b) / ((len(a) + len(b)) / 2)


def _write(repo, current):
    for path, lines in current.items():
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write("".join(lines))


def rq3_origin(url, sut_name, language):
    owner_project, sha = url.split("github.com/", 1)[1].split("/commit/")
    project = owner_project.split("/")[1]
    mode = os.environ.get("FAKE_HISTORIAN", "")
    if mode == "crash" and project == "rename":
        raise RuntimeError("fake Historian: this commit fails")
    name = f"systemUnderTest.{sut_name}.main"
    sut = sys.modules.get(name) or importlib.import_module(name)
    repo = os.path.join(os.environ["REPOS_DIR"], project)
    message = _git(repo, "show", sha, "--pretty=%B", "--no-patch").strip()
    files, edits = _edits(repo, sha)
    _git(repo, "checkout", "-q", "--force", f"{sha}^")
    base = {"id": sha[:10], "language": language, "project_name": project, "repo_dir": os.path.abspath(repo),
            "edit_description": message, "changed_files": list(files)}

    def call(status, **extra):
        prior = [dict(edits[i]) for i in order]
        return sut.main({**base, "status": status, "prior_edits": prior, **extra})

    order = [0]
    edits[0]["simulated"] = True
    current = _current(files, edits)
    _write(repo, current)
    call("init")
    records = [{"status": "init", "evaluations": {"flow_pattern": {"flow_keeping": [0]}}}]
    while len(order) < len(edits):
        pred = call("suggestion(location+content)") or {}
        locations = _locations(pred)
        remaining = [e for e in edits if not e["simulated"]]
        classes = {"flow_keeping": [], "flow_jumping": [], "flow_breaking": [], "flow_reverting": []}
        first_keep = None
        for loc in locations:
            match = None
            for g in remaining:
                if g["file_path"] != loc["file"] or (not g["before"]) != loc["insert"]:
                    continue
                start = g["currently_start_at_line"]
                gold_lines = list(range(start, start + len(g["before"]))) if g["before"] else [start]
                placed = loc["lines"] == gold_lines if loc["insert"] else _dice(loc["lines"], gold_lines) > 0.5
                if placed and loc["after"] == g["after"]:
                    match = g
                    break
            if match is not None:
                classes["flow_jumping" if mode == "jump" else "flow_keeping"].append(loc["idx"])
                first_keep = first_keep if first_keep is not None else match["idx"]
                continue
            reverted = False
            for i in order:
                e = edits[i]
                applied = list(range(e["currently_start_at_line"], e["currently_start_at_line"] + len(e["after"])))
                if e["file_path"] == loc["file"] and _dice(loc["lines"], applied) > 0.5:
                    reverted = True
            classes["flow_reverting" if reverted else "flow_breaking"].append(loc["idx"])
        if first_keep is not None:
            nxt = first_keep
        else:
            nxt = random.choice([e["idx"] for e in remaining])
            call("suggestion(content)", target_edit=dict(edits[nxt]))
        keep = len(classes["flow_keeping"])
        evaluations = dict(classes)
        evaluations.update({"precision@all": keep / len(locations) if locations else 0.0,
                            "recall@all": keep / len(remaining), "BLEU-4": None})
        records.append({"status": "suggestion", "pred_snapshots": pred, "evaluations": evaluations})
        edits[nxt]["simulated"] = True
        order.append(nxt)
        current = _current(files, edits)
        _write(repo, current)
    out = os.environ["OUTPUT_DIR"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{project}-{sha[:10]}-{sut_name}-simulation-results.json"), "w") as f:
        json.dump({"commit_url": url, "commit_sha": sha[:10], "commit_message": message,
                   "simulation_order": order, "SUT_prediction_records": records}, f)
