"""The robot's change-rate estimates: persisted across restarts, and its own freshness estimate.

The re-crawl hook (:class:`oasis.robot.scheduling.recrawl.WhittleRecrawl`) learns each retrieved page's
Poisson change rate from its crawl history (its :class:`ChangeRateEstimator`: the observed intervals and
whether each saw a change) and, pooled, the empirical-Bayes prior of all pages (:class:`PooledChangeRate`).
:func:`rates_state` / :func:`load_rates` write and read all of it as JSON (the robot saves it as
``rates.json`` beside its Q-table at every checkpoint and on stop), so a restarted robot -- even after
``kill -9`` -- keeps what it learned about how often its pages change. The observations are replayed into
fresh estimators on load, which rebuilds the pooled prior exactly.

:func:`freshness_estimate` is the robot's own estimate of its collection's freshness without ground truth
(papers/004 Eq. 2 with the change model of papers/002): a page of relevance r_i last fetched a_i ago, with
estimated rate lam_i, is still fresh with probability exp(-lam_i a_i), so

    F_est = sum_i r_i exp(-lam_i a_i) / sum_i r_i.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oasis.robot.scheduling.recrawl import ChangeRateEstimator, DocHistory, WhittleRecrawl
from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)

RATES_FILE = "rates.json"
RATES_VERSION = 1


def rates_state(hook: WhittleRecrawl) -> dict[str, Any]:
    """Every page's fetch/change counters and observations, and the pooled prior's clock (JSON-safe)."""
    docs = {
        url: {
            "fetches": h.fetches,
            "changes": h.changes,
            "last_fetch": h.last_fetch,
            "observations": [[t, int(c)] for c, t in h.estimator._order],  # (interval, changed) oldest first
        }
        for url, h in hook._docs.items()
    }
    pool = hook.pool
    return {
        "version": RATES_VERSION,
        "period": hook.period,
        "docs": docs,
        "pool_start": None if pool is None or math.isinf(pool.start) else pool.start,
        "pool_elapsed": 0.0 if pool is None else pool.elapsed,
    }


def load_rates(hook: WhittleRecrawl, state: Mapping[str, Any]) -> int:
    """Restore :func:`rates_state` into ``hook`` (before the controller's state is loaded, so the restored
    histories are the ones its re-crawl arms find). Returns the number of pages restored."""
    if state.get("version") != RATES_VERSION:
        raise ValueError(f"rates version {state.get('version')!r}, expected {RATES_VERSION}")
    docs = state.get("docs", {})
    if not isinstance(docs, dict):
        raise ValueError("rates: docs must be an object")
    for url, d in docs.items():
        estimator = ChangeRateEstimator(
            prior_rate=hook.prior_rate if hook.prior_rate is not None else 1.0,
            window=hook.window,
            pool=hook.pool,
        )
        for interval, changed in d.get("observations", []):
            estimator.observe(float(interval), bool(changed))
        hook._docs[str(url)] = DocHistory(
            fetches=int(d["fetches"]),
            changes=int(d["changes"]),
            last_fetch=float(d["last_fetch"]),
            estimator=estimator,
        )
    if hook.pool is not None:
        if state.get("pool_start") is not None:
            hook.pool.start = min(hook.pool.start, float(state["pool_start"]))
        hook.pool.elapsed = max(hook.pool.elapsed, float(state.get("pool_elapsed", 0.0)))
    return len(docs)


def save_rates(hook: WhittleRecrawl, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, rates_state(hook), compact=True)


def load_rates_file(hook: WhittleRecrawl, path: Path) -> int:
    """Load a rates file into ``hook``; ValueError naming the file if it is unreadable or not one."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        n = load_rates(hook, state)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot load change rates {path}: {exc}") from exc
    logger.info("loaded the change-rate estimates of %d pages from %s", n, path)
    return n


def observations(hook: WhittleRecrawl) -> int:
    """Re-crawl observations the estimates rest on (what a restarted robot must not lose)."""
    return sum(h.estimator.n for h in hook._docs.values())


def rate_of(hook: WhittleRecrawl, url: str) -> float | None:
    h = hook._docs.get(url)
    return None if h is None else h.estimator.rate()


def freshness_estimate(hook: WhittleRecrawl, relevance: Mapping[str, float], now: float) -> float:
    """F_est = sum_i r_i exp(-lam_i a_i) / sum_i r_i over the pages of ``relevance`` the hook knows (module
    docstring), a copy fetched before a site-wide update seen in re-crawls also times 1 - q, the share of
    pages the update changed (:class:`oasis.robot.scheduling.recrawl.SiteUpdate`); 0 when there are none."""
    num = den = 0.0
    site = hook.site
    for url, r in relevance.items():
        h = hook._docs.get(url)
        if h is None or r <= 0:
            continue
        age = max(0.0, now - h.last_fetch)
        num += r * math.exp(-h.estimator.rate() * age) * site.survival(h.last_fetch)
        den += r
    return num / den if den > 0 else 0.0
