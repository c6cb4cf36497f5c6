"""A SUT written in Historian's format (systemUnderTest/<SUT>/main.py), for the shim test.

It behaves like the suggester of Historian's worked example: a wrong edit with the
highest confidence, then the true edits of pkg/a.py it can recognise in the current
files; for content steps it rewrites `compute(10)` calls. It records every input it
gets so the test can check what crossed the boundary.
"""
import json
import os

LOG = os.environ.get("SUT_LOG")

FIXES = {
    "def compute(x):\n": ["def compute(x, scale=1):\n", "    return (x + 1) * scale\n"],
    "    return compute(y) * 2\n": ["    return compute(y, scale=2) * 2\n"],
    "        return compute(3)\n": ["        value = compute(3, scale=math.pi)\n", "        return value\n"],
}


async def main(json_input):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(json_input) + "\n")
    status = json_input["status"]
    if status == "init":
        return None
    repo = json_input["repo_dir"]
    if status == "suggestion(location+content)":
        path = "pkg/a.py"
        with open(os.path.join(repo, path)) as f:
            lines = f.readlines()
        windows, plain, i = [], [], 0
        while i < len(lines):
            line = lines[i]
            if i == 0 and line == "import os\n":
                windows.append(plain); plain = []
                windows.append({"before": [line], "after": ["import sys\n"], "confidence": 0.9})
                i += 1
                continue
            if line in FIXES:
                before = [line] + ([lines[i + 1]] if line.startswith("def compute") else [])
                windows.append(plain); plain = []
                windows.append({"before": before, "after": FIXES[line], "confidence": 0.8 - 0.1 * len(windows)})
                i += len(before)
                continue
            plain.append(line)
            i += 1
        windows.append(plain)
        return {path: [w for w in windows if w != []]}
    target = json_input["target_edit"]
    before = target["before"]
    after = [l.replace("compute(10)", "compute(10, scale=3)") for l in before]
    path = target["file_path"]
    with open(os.path.join(repo, path)) as f:
        lines = f.readlines()
    start = target["currently_start_at_line"]
    return {path: [lines[:start], {"before": before, "after": after, "confidence": 1.0}, lines[start + len(before):]]}
