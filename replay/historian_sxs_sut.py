"""A deterministic, trivial SUT in Historian's format, for the side-by-side run.

Used unmodified by both Historian (loaded as its `systemUnderTest.<name>.main`) and
nextedit (through replay/historian_sut.py). Standard library only.

It knows the commit's end state from a side file (env SXS_TARGET: JSON
{project_name: {path: child_text}}) written by replay/historian_side_by_side.py --
a deliberate "future-knowing" SUT, so both tools get predictions that can match.

suggestion(location+content), in the file of the last applied edit only (§14's SUT):
  * every remaining difference between the current file and its end state (difflib
    line blocks), confidences 0.80, 0.79, ... top to bottom;
  * a wrong edit (`# sxs: wrong guess`), confidence 0.9: on line 0 unless it is in a
    remaining difference (SXS_WRONG=line0, default), or on the first line at least one
    line away from every applied edit and remaining difference (SXS_WRONG=free);
  * when no difference is left in that file: also an edit that puts back the last
    applied edit's before-text on its current lines (a true revert), confidence 0.5.
suggestion(content): the target location unchanged (after = before), so the score is
  BLEU(before, gold after) in both tools; no gold text is used.
"""
import difflib
import json
import os

_TARGET = None


def _target():
    global _TARGET
    if _TARGET is None:
        with open(os.environ["SXS_TARGET"]) as f:
            _TARGET = json.load(f)
    return _TARGET


def _read(repo_dir, path):
    try:
        with open(os.path.join(repo_dir, path)) as f:
            return f.read()
    except OSError:
        return ""


def _snapshot(lines, windows):
    """windows: sorted, disjoint (start, end, after_lines, confidence) -> Historian snapshot."""
    out, line = [], 0
    for start, end, after, confidence in windows:
        if start > line:
            out.append(lines[line:start])
        out.append({"before": lines[start:end], "after": after, "confidence": confidence})
        line = end
    if line < len(lines):
        out.append(lines[line:])
    return out


def _wrong_line(cur, windows, prior, path):
    """Line 0 (SXS_WRONG=line0, default), or the first line touching no applied or remaining
    edit (SXS_WRONG=free); None if there is none."""
    if not cur:
        return None
    taken = set()
    for s, e, _, _ in windows:
        taken.update(range(s, max(e, s + 1)))
    if os.environ.get("SXS_WRONG", "line0") == "line0":
        return None if 0 in taken else 0
    for edit in prior:
        if edit.get("file_path") == path:
            start = edit.get("currently_start_at_line", 0)
            taken.update(range(start - 1, start + len(edit.get("after") or []) + 1))
    for line in range(len(cur)):
        if line not in taken and line + 1 not in taken and line - 1 not in taken:
            return line
    return None


def suggest(json_input):
    prior = json_input.get("prior_edits") or []
    if not prior:
        return {}
    last = prior[-1]
    path = last["file_path"]
    files = _target().get(json_input.get("project_name") or "", {})
    if path not in files:
        return {}
    current = _read(json_input["repo_dir"], path)
    target = files[path]
    # Historian writes files back without their final newline (its bug 12): compare
    # like with like so that the missing newline is not predicted as an edit.
    if target.endswith("\n") and current and not current.endswith("\n"):
        target = target[:-1]
    cur, tgt = current.splitlines(keepends=True), target.splitlines(keepends=True)
    windows = []
    matcher = difflib.SequenceMatcher(None, cur, tgt, autojunk=False)
    k = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        windows.append((i1, i2, tgt[j1:j2], round(0.8 - 0.01 * k, 2)))
        k += 1
    wrong = _wrong_line(cur, windows, prior, path)
    if wrong is not None:
        windows.append((wrong, wrong + 1, ["# sxs: wrong guess\n"], 0.9))
    if k == 0:
        start = last.get("currently_start_at_line", 0)
        end = start + len(last.get("after") or [])
        if end > start and not any(s < end and start < e for s, e, _, _ in windows):
            windows.append((start, end, list(last.get("before") or []), 0.5))
    windows.sort(key=lambda w: (w[0], w[1]))
    return {path: _snapshot(cur, windows)}


def content(json_input):
    target = json_input["target_edit"]
    path = target["file_path"]
    lines = _read(json_input["repo_dir"], path).splitlines(keepends=True)
    start = target["currently_start_at_line"]
    before = list(target.get("before") or [])
    end = start + len(before)
    return {path: _snapshot(lines, [(start, end, lines[start:end], 1.0)])}


def main(json_input):
    status = json_input["status"]
    if status == "suggestion(location+content)":
        return suggest(json_input)
    if status == "suggestion(content)":
        return content(json_input)
    return None
