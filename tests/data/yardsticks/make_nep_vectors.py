"""Writes NEP match vectors: runs the reference evaluate.py functions on random triples.

Usage: python3 make_nep_vectors.py PATH/TO/evaluate.py OUT.jsonl [N]
"""
import importlib.util
import json
import random
import sys
import types

sys.modules.setdefault("pandas", types.ModuleType("pandas"))  # imported but unused by the match functions
spec = importlib.util.spec_from_file_location("evaluate", sys.argv[1])
ev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ev)

LINES = ["a", "b", "c", "", "  ", "\t", "x = 1", "def f():", "    return x", "é", "b "]


def outcome(original, gt, out):
    row = {"exact_match": gt == out}
    for name, fn in (("partial_match", ev.partial_match), ("position_match", ev.position_match)):
        try:
            row[name] = bool(fn(original, gt, out))
        except IndexError:
            row[name] = None  # the ground truth has no chunk: the reference raises
    return row


def mutate(rng, lines):
    v = list(lines)
    for _ in range(rng.randint(1, 3)):
        pos = rng.randint(0, len(v))
        kind = rng.randrange(3)
        if kind == 0:
            v[pos:pos] = [rng.choice(LINES) for _ in range(rng.randint(1, 3))]
        elif kind == 1:
            del v[pos:pos + rng.randint(1, 3)]
        else:
            v[pos:pos + rng.randint(1, 2)] = [rng.choice(LINES) for _ in range(rng.randint(1, 2))]
    return v


def join(rng, lines):
    sep = rng.choice(["\n", "\n", "\n", "\r\n", "\r"])
    s = sep.join(lines)
    return s + sep if lines and rng.randrange(2) else s


def main():
    out_path = sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    rng = random.Random(20261128)
    rows = []
    own = [
        ("doc", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n"),
        ("doc", "a\nb\nc\n", "a\nB\nc\n", "a\nb\nc\n"),
        ("doc", "a\nb\nc\n", "a\nb\nc\n", "a\nb\nc\n"),
        ("doc", "a\nb\nc\n", "a\nb\n\nc\n", "a\nB\nc\n"),
    ]
    for case, o, g, p in own:
        rows.append({"case": case, "original": o, "ground_truth": g, "output": p, **outcome(o, g, p)})
    for i in range(n):
        size = rng.choice([0, 3, 8, 20, 40]) if i % 10 else rng.randint(200, 260)
        alphabet = LINES if size < 200 else LINES[:4]  # long files repeat lines: difflib's autojunk
        o = [rng.choice(alphabet) + (str(rng.randrange(50)) if size >= 200 and rng.randrange(3) == 0 else "") for _ in range(size)]
        g = mutate(rng, o)
        k = rng.randrange(6)
        p = g if k == 0 else o if k == 1 else mutate(rng, g) if k < 4 else mutate(rng, o)
        sep_rng = random.Random(i)
        o_s, g_s, p_s = join(sep_rng, o), join(sep_rng, g), join(sep_rng, p)
        rows.append({"case": f"random:{i}", "original": o_s, "ground_truth": g_s, "output": p_s, **outcome(o_s, g_s, p_s)})
    with open(out_path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
