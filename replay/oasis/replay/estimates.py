"""``python -m oasis.replay.estimates --runs 2,10,18 [--out FILE]``: the robot's own recall estimate against
the truth over a first traversal of replayed webs (runs of :data:`oasis.replay.shipped.TRAINING`).

The shipped controller crawls each web page by page; before each first retrieval is reported, the page's
estimated relevance (what the fringe sum counted for it) and its relevance go to the robot's
:class:`oasis.robot.recall.FringeCalibration`, exactly as the live crawler does. After every fetch three
estimates of recall, acc / (acc + fringe), are compared with the truth acc / total (total: the reachable
pages' relevance): the raw fringe sum, the fringe times the cumulative ratio (every first retrieval weighted
alike), and times the robot's weighted ratio (decay ``RHO_DECAY``). Printed per run and on average: the
mean absolute error and the mean signed error (bias). docs/living.md "The robot's recall estimate" has the
runs the weighted ratio was chosen on and the held-out ones it is reported on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from oasis.robot.recall import FringeCalibration, recall_estimate
from oasis.robot.scheduling import SHIPPED, FetchOutcome, make_controller
from oasis.robot.scheduling.interface import FetchKind

ESTIMATES = ("raw", "cumulative", "weighted")


def run_errors(corpus: str, topic: str) -> dict[str, Any]:
    """One first traversal of ``corpus`` / ``topic`` by the shipped robot: each estimate's errors."""
    from oasis.replay.shipped import _prepare

    rep = _prepare(corpus, topic).replay
    ctl = make_controller("whittle", rng=random.Random(0), config=SHIPPED)
    ctl.add_seeds(rep.urls[s] for s in rep.seeds)
    weighted, cumulative = FringeCalibration(), FringeCalibration(decay=1.0 - 1e-12)
    acc = 0.0
    errors: dict[str, list[float]] = {name: [] for name in ESTIMATES}
    retrieved: set[int] = set()
    t = 0
    while True:
        t += 1
        batch = ctl.next_batch(1, float(t))
        if not batch:
            break
        (url,) = batch
        i = rep.index[url]
        r = rep.rel_list[i]
        estimate = ctl.estimated_relevance(url)
        if estimate is not None:
            weighted.observe(estimate, r)
            cumulative.observe(estimate, r)
        kind: FetchKind = "unchanged" if i in retrieved else "new"
        if kind == "new":
            retrieved.add(i)
            acc += r
        ctl.report(FetchOutcome(url, kind, r, rep.links(i)), float(t))
        truth = acc / rep.total_relevance if rep.total_relevance > 0 else 0.0
        fringe = ctl.fringe_relevance()
        for name, rho in (("raw", 1.0), ("cumulative", cumulative.ratio), ("weighted", weighted.ratio)):
            errors[name].append(recall_estimate(acc, acc, rho * fringe) - truth)
    return {
        "corpus": corpus,
        "topic": topic,
        "fetches": len(errors["raw"]),
        **{
            name: {"mae": sum(abs(e) for e in errs) / len(errs), "bias": sum(errs) / len(errs)}
            for name, errs in errors.items()
            if errs
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    from oasis.replay.shipped import TRAINING

    p = argparse.ArgumentParser(prog="python -m oasis.replay.estimates", description=__doc__.split("\n")[0])
    p.add_argument("--runs", required=True, help="comma-separated indices of oasis.replay.shipped.TRAINING")
    p.add_argument("--out", type=Path, default=None, help="write the rows and the means as JSON")
    args = p.parse_args(argv)
    try:
        runs = [int(k) for k in args.runs.split(",")]
        specs = [TRAINING[k] for k in runs]
    except (ValueError, IndexError):
        p.error(f"--runs: comma-separated indices in 0..{len(TRAINING) - 1}, got {args.runs!r}")
    rows = []
    for k, (corpus, topic) in zip(runs, tqdm(specs, desc="runs", file=sys.stderr), strict=True):
        row = {"run": k, **run_errors(corpus, topic)}
        rows.append(row)
        cells = " | ".join(f"{row[n]['mae']:.3f} ({row[n]['bias']:+.3f})" for n in ESTIMATES)
        print(f"{k} {corpus} {topic!r} ({row['fetches']} fetches) | {cells}", flush=True)
    means = {
        n: {m: sum(r[n][m] for r in rows) / len(rows) for m in ("mae", "bias")} for n in ESTIMATES
    }
    better = sum(r["weighted"]["mae"] < r["raw"]["mae"] for r in rows)
    print("mean absolute error (bias): " + ", ".join(f"{n} {means[n]['mae']:.3f} ({means[n]['bias']:+.3f})"
                                                    for n in ESTIMATES))
    print(f"weighted below raw on {better} of {len(rows)} runs")
    if args.out is not None:
        args.out.write_text(json.dumps({"runs": rows, "means": means}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
