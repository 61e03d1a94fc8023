"""Session 23 probe (docs/replay.md "Session 23: anchors scored by their words"): per run of ``TRAINING``
(every second run from the first argument, up to the second: 116, the runs seen before holdout-26), the raw P
of greedy-anchor, greedy-anchor-mean and the shipped robot's first traversal as served, with each link's
anchor scored as written (``base``), with dots and underscores between word characters cut (``A``), and with
camelCase cut too (``B``, what ships as ``oasis.runtime.text.anchor_words``); then the rule's figures over
both halves.

    .venv/bin/python docs/probes/s23_anchor_words.py 0 116 > /tmp/s23_0.json &
    .venv/bin/python docs/probes/s23_anchor_words.py 1 116 > /tmp/s23_1.json; wait
    .venv/bin/python docs/probes/s23_anchor_words.py report /tmp/s23_0.json /tmp/s23_1.json
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable

from oasis.engine.relevance import RelevanceModel
from oasis.replay.experiment import prepare
from oasis.replay.shipped import TRAINING, baseline_ps, whittle_p
from oasis.robot.scheduling.config import SHIPPED
from oasis.web.corpus import load_corpus

SEP = re.compile(r"(?<=\w)[._]+(?=\w)")
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
VARIANTS: dict[str, Callable[[str], str]] = {
    "base": lambda s: s,
    "A": lambda s: SEP.sub(" ", s),
    "B": lambda s: CAMEL.sub(" ", SEP.sub(" ", s)),
}
_score_text = RelevanceModel.score_text


def measure(first: int, stop: int) -> dict[int, dict[str, dict[str, float]]]:
    out: dict[int, dict[str, dict[str, float]]] = {}
    for i in range(first, stop, 2):
        row = {}
        for name, cut in VARIANTS.items():

            def scored(self: RelevanceModel, text: str, cut: Callable[[str], str] = cut) -> float:
                return _score_text(self, cut(text))

            RelevanceModel.score_text = scored  # type: ignore[method-assign]
            corpus, topic = TRAINING[i]
            p = prepare(load_corpus(corpus), topic, seed_urls=None, anchors=True, anchor_identifiers=False)
            b = baseline_ps(p, ("greedy-anchor", "greedy-anchor-mean"))
            row[name] = {**b, "whittle": whittle_p(p, SHIPPED, 1, None)[0]}
        RelevanceModel.score_text = _score_text  # type: ignore[method-assign]
        out[i] = row
        print(
            i,
            corpus,
            {k: round(v["whittle"] / row["base"]["whittle"], 3) for k, v in row.items()},
            file=sys.stderr,
        )
    return out


def report(d: dict[int, dict[str, dict[str, float]]]) -> None:
    for var in ("A", "B"):
        for half in (0, 1):
            r = [d[i][var]["whittle"] / d[i]["base"]["whittle"] - 1 for i in d if i % 2 == half]
            print(f"{var} half {half}: robot new/old mean {100 * sum(r) / len(r):+.2f}%")
        for who in ("whittle", "greedy-anchor"):
            r = [d[i][var][who] / d[i]["base"][who] for i in d]
            gm = math.exp(sum(math.log(x) for x in r) / len(r))
            up, down = sum(x > 1 + 1e-9 for x in r), sum(x < 1 - 1e-9 for x in r)
            print(
                f"{var} {who}: geometric mean {100 * (gm - 1):+.2f}%,",
                f"rises {up}, falls {down}, same {len(r) - up - down}",
            )
    for var in ("base", "A", "B"):
        m = [100 * (d[i][var]["whittle"] / d[i][var]["greedy-anchor"] - 1) for i in d]
        ahead, behind = sum(x > 0 for x in m), sum(x < 0 for x in m)
        print(
            f"{var}: robot vs greedy-anchor ahead {ahead}, behind {behind},",
            f"mean {sum(m) / len(m):+.2f}%, worst {min(m):+.2f}%",
        )


if __name__ == "__main__":
    if sys.argv[1] == "report":
        rows: dict[int, dict[str, dict[str, float]]] = {}
        for path in sys.argv[2:]:
            with open(path) as fh:
                rows.update({int(k): v for k, v in json.load(fh).items()})
        report(rows)
    else:
        json.dump(
            measure(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else len(TRAINING)), sys.stdout
        )
