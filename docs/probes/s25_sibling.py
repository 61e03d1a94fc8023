"""Session 25 probe (docs/replay.md "Session 25: a per-parent correction, screened"): would a correction per
parent page (the shrunk mean residual of the siblings fetched so far) tell the robot anything its key does
not? Per run of ``TRAINING``, the shipped robot's first traversal as served; at each learned fetch the
residual e = g - key (the reward over the page's queue key: calibrated estimate, c(x), d(D) as of the last
re-fit); then prequentially (each fetch predicted only from the fetches before it) the mean squared residual
against the same with e predicted by its siblings' shrunk mean residual (the page's discovering parent;
``SHRINK`` pseudo-samples at 0), by its URL directory's (current, not as of the re-fit), by the
directory's then the siblings' on what is left, and by every fetch's (``all``: a constant shift of every key,
which changes no order; a group's gain over it is what could re-order the frontier).

    .venv/bin/python docs/probes/s25_sibling.py 0 68 > a.jsonl &
    .venv/bin/python docs/probes/s25_sibling.py 68 136 > b.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any

from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct, whittle_p
from oasis.robot.scheduling import residual
from oasis.robot.scheduling.config import SHIPPED

SHRINK = 3.0
SWEEP = (1.0, 3.0, 10.0, 30.0, 100.0)  # the siblings' shrinkage, swept (``sibK``)
PARENT: dict[int, str] = {}
ROWS: list[tuple[int, float, float, str]] = []
SEEN: set[int] = set()
_state_of = residual.ResidualIndex.state_of
_learn = residual.ResidualIndex.learn


def logged_state_of(
    self: Any, doc: int, url: str, parent_url: str | None, pr: float, ar: float, depth: int
) -> str:
    if parent_url is not None and doc not in PARENT:
        PARENT[doc] = parent_url
    return _state_of(self, doc, url, parent_url, pr, ar, depth)


def logged_learn(self: Any, doc: int, g: float, children: list[int], q_next: float) -> bool:
    state = self.states[doc]
    # the crawl's own fetches only (not the end-of-crawl replays of the fetched web, whose frozen copies
    # learn nothing), each page once
    if self.config.learn and state is not None and state != residual.SEED_STATE and doc not in SEEN:
        SEEN.add(doc)
        ROWS.append((doc, g, self.key(doc), str(self.directory[doc])))
    return _learn(self, doc, g, children, q_next)


def prequential(rows: list[tuple[int, float, float, str]]) -> dict[str, float]:
    sums: dict[str, dict[Any, list[float]]] = {
        "sib": defaultdict(lambda: [0.0, 0.0]),
        "dir": defaultdict(lambda: [0.0, 0.0]),
    }
    left: dict[Any, list[float]] = defaultdict(
        lambda: [0.0, 0.0]
    )  # siblings' residuals after the directory's
    err = {"key": 0.0, "sib": 0.0, "dir": 0.0, "dir+sib": 0.0, "all": 0.0}
    total = count = 0.0  # every fetch's residual: a constant shift, which orders nothing (the reference)
    for doc, g, key, directory in rows:
        e = g - key
        err["all"] += (e - total / (count + SHRINK)) ** 2
        total += e
        count += 1.0
        parent = PARENT.get(doc)
        s, n = sums["sib"][parent]
        sib = s / (n + SHRINK)
        s, n = sums["dir"][directory]
        d = s / (n + SHRINK)
        s, n = left[parent]
        ds = d + s / (n + SHRINK)
        err["key"] += e * e
        err["sib"] += (e - sib) ** 2
        err["dir"] += (e - d) ** 2
        err["dir+sib"] += (e - ds) ** 2
        s, n = sums["sib"][parent]
        for k in SWEEP:
            err[f"sib{k:g}"] = err.get(f"sib{k:g}", 0.0) + (e - s / (n + k)) ** 2
        for name, k in (("sib", parent), ("dir", directory)):
            sums[name][k][0] += e
            sums[name][k][1] += 1.0
        left[parent][0] += e - d
        left[parent][1] += 1.0
    return err


def main(lo: int, hi: int) -> None:
    residual.ResidualIndex.state_of = logged_state_of  # type: ignore[method-assign]
    residual.ResidualIndex.learn = logged_learn  # type: ignore[method-assign]
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        ga = baseline_ps(p, ("greedy-anchor",))["greedy-anchor"]
        PARENT.clear()
        ROWS.clear()
        SEEN.clear()
        margin = pct(whittle_p(p, SHIPPED, 1, None)[0], ga)
        err = prequential(ROWS)
        parents = len({PARENT.get(doc) for doc, *_ in ROWS})
        print(json.dumps({"i": i, "margin": margin, "n": len(ROWS), "parents": parents, **err}), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
