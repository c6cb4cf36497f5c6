"""A stand-in embedding retriever for `nextedit tasks cut --retriever cmd:...`.

Speaks the retriever protocol of docs/tasks.md: one JSON line in per query
({"query": ..., "candidates": [{"file", "start_line", "end_line", "text"}, ...]}),
one line out ({"scores": [...]}, one per candidate). The score is the Jaccard
similarity of the identifier sets, so the test can compute it independently.
"""

import json
import re
import sys

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def words(text):
    return set(IDENTIFIER.findall(text))


for line in sys.stdin:
    request = json.loads(line)
    query = words(request["query"])
    scores = []
    for candidate in request["candidates"]:
        text = words(candidate["text"])
        union = query | text
        scores.append(len(query & text) / len(union) if union else 0.0)
    print(json.dumps({"scores": scores}), flush=True)
