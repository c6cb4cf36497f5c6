"""nextedit's coverage map of a Python checkout: runs its pytest suite once under
coverage.py, each test in a coverage context of its own (its node id), and writes
{"exit", "tests": [[node id, seconds, passed]], "lines": {file: {line: [test index]}}}
(passed: its call passed and no phase failed; a skipped test did not pass)
as JSON to the path given. Run with the checkout as the working directory."""

import json
import os
import sys

# As `python -m pytest` has it: the checkout first on the import path, not this file's
# directory.
sys.path[0] = os.getcwd()

import coverage  # noqa: E402
import pytest  # noqa: E402

ROOT = os.getcwd()
# No data file, none of the checkout's coverage settings: only where lines run matters.
COV = coverage.Coverage(data_file=None, config_file=False, source=[ROOT])


class Contexts:
    """Switches the coverage context to each test's node id around its setup, call and
    teardown, and keeps its duration and whether every phase passed."""

    def __init__(self):
        self.tests = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        COV.switch_context(item.nodeid)
        yield
        COV.switch_context("")

    def pytest_runtest_logreport(self, report):
        # [seconds, no phase failed, its call passed]: a test skipped in its setup
        # has no call, and is no passing test.
        test = self.tests.setdefault(report.nodeid, [0.0, True, False])
        test[0] += report.duration
        if report.failed:
            test[1] = False
        if report.when == "call" and report.passed:
            test[2] = True


def main(out):
    plugin = Contexts()
    COV.start()
    try:
        code = pytest.main(["-q", "-p", "no:cacheprovider"], plugins=[plugin])
    finally:
        COV.stop()
    index = {}
    tests = []
    for node, (seconds, ok, called) in plugin.tests.items():
        index[node] = len(tests)
        tests.append([node, seconds, ok and called])
    data = COV.get_data()
    lines = {}
    for path in data.measured_files():
        rel = os.path.relpath(path, ROOT)
        if rel.startswith(".."):
            continue
        by_line = {}
        for number, contexts in data.contexts_by_lineno(path).items():
            ran = sorted(index[c] for c in contexts if c in index)
            if ran:
                by_line[str(number)] = ran
        if by_line:
            lines[rel.replace(os.sep, "/")] = by_line
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"exit": int(code), "tests": tests, "lines": lines}, f)


main(sys.argv[1])
