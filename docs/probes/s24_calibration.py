"""Session 24 probe: one seen run crawled traversal by traversal, printing the robot's margin over
greedy-anchor and its pooled calibration after each traversal (docs/replay.md "Session 24").

    python docs/probes/s24_calibration.py RUN [CONFIG-JSON] [TRAVERSALS]

RUN indexes ``oasis.replay.shipped.TRAINING``; the robot is ``FEATURES_ONLY`` (the shipped robot without its
memory of the web) with the JSON overrides (``{"_shipped": true}`` for the robot as shipped). Each line: the
traversal's raw P over greedy-anchor's, the pooled sample count, and the calibration as the robot fits it
(``fit_prior``), with no prior (the web's own two slopes) and with one common slope.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from oasis.replay.shipped import FEATURES_ONLY, TRAINING, _prepare, baseline_ps, pct, whittle_p
from oasis.robot.scheduling.config import SHIPPED, ControllerConfig
from oasis.robot.scheduling.equations import calibration
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.residual import FIT, start_table


def fit_line(q: QTable, cfg: ControllerConfig) -> str:
    rows = q.rows()
    f = [rows.get(name) for name in FIT]
    if f[0] is None or f[1] is None or f[2] is None:
        return "no samples"
    sums = (*f[0], *f[1], *f[2])
    kw = {"w_min": cfg.w_min, "nonnegative": cfg.nonnegative}
    used = calibration(*sums, prior=cfg.fit_prior, **kw)  # type: ignore[arg-type]
    own = calibration(*sums, **kw)  # type: ignore[arg-type]
    one = calibration(*sums, common=True, **kw)  # type: ignore[arg-type]
    return (
        f"n {f[0][0]:.0f}  used a {used.a:.4f} wp {used.wp:.3f} wa {used.wa:.3f}  "
        f"own a {own.a:.4f} wp {own.wp:.3f} wa {own.wa:.3f}  one a {one.a:.4f} w {one.wp:.3f}"
    )


def main() -> None:
    run = int(sys.argv[1])
    overrides = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    traversals = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    base = SHIPPED if overrides.pop("_shipped", False) else FEATURES_ONLY
    cfg = replace(base, **overrides)
    corpus, topic = TRAINING[run]
    prepared = _prepare(corpus, topic)
    ga = baseline_ps(prepared, ("greedy-anchor",))["greedy-anchor"]
    q = start_table(cfg)
    print(f"{corpus} {topic!r}: start  {fit_line(q, cfg)}")
    for t in range(traversals):
        p = whittle_p(prepared, cfg, 1, q)[0]
        print(f"t{t + 1}: {pct(p, ga):+.2f}% over greedy-anchor  {fit_line(q, cfg)}", flush=True)


if __name__ == "__main__":
    main()
