"""Multi-reference BLEU cases scored live by the reference libraries (NLTK, sacrebleu).

Run by tests/metrics_cli.rs with the interpreter of .venv-metrics (scripts/test installs
nltk 3.10.4 and sacrebleu 2.6.0 there). Prints one JSON list: for each random case, the
hypothesis, the references and every variant's score (keyed
`variant|smoothing|tokenizer[|noeff]`) (or "error: ..." where the library
raises), so the test can run `nextedit score bleu` on the same texts and compare.
"""

import json
import logging
import warnings
import random
import sys

import sacrebleu
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from sacrebleu.metrics import BLEU

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
words = ["a", "b", "c", "d", "e", "x", "y", "the", "cat", "(", ")", "=", "1"]


def sentence(low, high):
    return " ".join(rng.choice(words) for _ in range(rng.randint(low, high)))


smoothing = SmoothingFunction()
cases = []
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 60):
    hyp = sentence(1, 12)
    refs = [sentence(1, 12) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        refs[0] = hyp  # some exact matches
    values = {}
    for m in range(8):
        try:
            values[f"nltk|method{m}|whitespace"] = sentence_bleu(
                [r.split() for r in refs], hyp.split(),
                smoothing_function=getattr(smoothing, f"method{m}"))
        except Exception as e:  # method 6 asserts a non-zero trigram precision
            values[f"nltk|method{m}|whitespace"] = f"error: {type(e).__name__}"
    for method in ["exp", "floor", "add-k", "none"]:
        for eff in [True, False]:
            bleu = BLEU(tokenize="none", smooth_method=method, effective_order=eff)
            key = f"sacrebleu|{method}|whitespace" + ("" if eff else "|noeff")
            values[key] = bleu.sentence_score(hyp, refs).score
    values["sacrebleu|exp|13a"] = sacrebleu.sentence_bleu(hyp, refs).score
    cases.append({"hyp": hyp, "refs": refs, "values": values})
print(json.dumps(cases))
