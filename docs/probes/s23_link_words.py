"""Session 23 probe (docs/replay.md "Session 23: links scored by their words"): per run of ``TRAINING`` (every
second run from FIRST up to STOP), the raw P of greedy-anchor, greedy-anchor-mean and the shipped robot's
first traversal as served, with each link scored on one of these texts:

* ``base``: its anchor as written (before session 23);
* ``A``: the anchor with dots and underscores between word characters cut;
* ``B``: A with camelCase cut too (``oasis.runtime.text.anchor_words``);
* ``C``: B on the anchor and the target URL's path words (``oasis.runtime.text.link_words``, what ships).

The anchor-words step was chosen on runs 0-115 (variants base, A, B), the URL words on runs 0-119 (B, C):

    .venv/bin/python docs/probes/s23_link_words.py 0 116 base,A,B > /tmp/ab_0.json &
    .venv/bin/python docs/probes/s23_link_words.py 1 116 base,A,B > /tmp/ab_1.json; wait
    .venv/bin/python docs/probes/s23_link_words.py report base /tmp/ab_0.json /tmp/ab_1.json
    .venv/bin/python docs/probes/s23_link_words.py 0 120 B,C > /tmp/c_0.json &
    .venv/bin/python docs/probes/s23_link_words.py 1 120 B,C > /tmp/c_1.json; wait
    .venv/bin/python docs/probes/s23_link_words.py report B /tmp/c_0.json /tmp/c_1.json
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable

from oasis.replay.experiment import prepare
from oasis.replay.shipped import TRAINING, baseline_ps, whittle_p
from oasis.robot.scheduling.config import SHIPPED
from oasis.runtime.page import Link
from oasis.runtime.text import anchor_words, link_words
from oasis.web.corpus import load_corpus
from oasis.web.model import Corpus

SEP = re.compile(r"(?<=\w)[._]+(?=\w)")
VARIANTS: dict[str, Callable[[Link], str]] = {
    "base": lambda link: link.anchor,
    "A": lambda link: SEP.sub(" ", link.anchor),
    "B": lambda link: anchor_words(link.anchor),
    "C": lambda link: link_words(link.anchor, link.url),
}
_out_links = Corpus.out_links
Rows = dict[int, dict[str, dict[str, float]]]


def measure(first: int, stop: int, variants: list[str]) -> Rows:
    """Each variant's links scored as written by the replay (``raw_anchors``) on texts the variant makes."""
    out: Rows = {}
    for i in range(first, stop, 2):
        row = {}
        corpus, topic = TRAINING[i]
        for name in variants:
            text = VARIANTS[name]

            def links(self: Corpus, url: str, text: Callable[[Link], str] = text) -> tuple[Link, ...]:
                return tuple(Link(link.url, text(link)) for link in _out_links(self, url))

            Corpus.out_links = links  # type: ignore[method-assign]
            p = prepare(load_corpus(corpus), topic, seed_urls=None, raw_anchors=True)
            Corpus.out_links = _out_links  # type: ignore[method-assign]
            b = baseline_ps(p, ("greedy-anchor", "greedy-anchor-mean"))
            row[name] = {**b, "whittle": whittle_p(p, SHIPPED, 1, None)[0]}
        out[i] = row
        print(i, corpus, {k: round(v["whittle"], 2) for k, v in row.items()}, file=sys.stderr, flush=True)
    return out


def report(d: Rows, base: str) -> None:
    """The rule's figures of every other variant against ``base``, on the two halves and over all."""
    for var in sorted({v for row in d.values() for v in row} - {base}):
        for half in (0, 1):
            r = [d[i][var]["whittle"] / d[i][base]["whittle"] - 1 for i in d if i % 2 == half]
            up, down = sum(x > 1e-9 for x in r), sum(x < -1e-9 for x in r)
            print(
                f"{var} half {half}: robot raw P over {base}'s mean {100 * sum(r) / len(r):+.2f}%,",
                f"rises {up}, falls {down}",
            )
        for who in ("whittle", "greedy-anchor"):
            q = [d[i][var][who] / d[i][base][who] for i in d]
            gm = math.exp(sum(math.log(x) for x in q) / len(q))
            up, down = sum(x > 1 + 1e-9 for x in q), sum(x < 1 - 1e-9 for x in q)
            print(
                f"{var} {who}: geometric mean {100 * (gm - 1):+.2f}%,",
                f"rises {up}, falls {down}, same {len(q) - up - down}",
            )
    for var in sorted({v for row in d.values() for v in row}):
        m = [100 * (d[i][var]["whittle"] / d[i][var]["greedy-anchor"] - 1) for i in d]
        ahead, behind = sum(x > 0 for x in m), sum(x < 0 for x in m)
        print(
            f"{var}: robot vs greedy-anchor as served ahead {ahead}, behind {behind},",
            f"mean {sum(m) / len(m):+.2f}%",
        )


if __name__ == "__main__":
    if sys.argv[1] == "report":
        rows: Rows = {}
        for path in sys.argv[3:]:
            with open(path) as fh:
                rows.update({int(k): v for k, v in json.load(fh).items()})
        report(rows, sys.argv[2])
    else:
        json.dump(measure(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")), sys.stdout)
