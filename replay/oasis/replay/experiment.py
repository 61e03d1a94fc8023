"""The experiment of papers/004 ("Experimental results", Figures 3-5), reproduced and extended.

:func:`prepare` turns a corpus (HTML folder, WARC, graph file, ``debian:NAME`` or ``synthetic:SPEC``) and a
topic into a :class:`~oasis.replay.simulator.Replay` (the graph, r(i) from the topic model, anchor-text
relevance per link). :func:`run_experiment` replays every policy on it with the same budget and returns a
JSON-ready dict: P / P_upper per policy (per traversal for learning policies), the relevance of each fetched
document in order (Figures 4-5) and R/F/M curves.

Learning policies are named ``whittle`` (the configured state) or ``whittle:STATE`` (STATE one of
``parent`` (the paper's), ``generalising``, ``url``); each traversal starts from the seeds with an empty
frontier and the Q-table of the previous traversal.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from oasis.replay.baselines import LOOKAHEAD_WEIGHT, REPLAY_BASELINES, lookahead_scores, upper_order
from oasis.replay.metrics import static_recall_curve, upper_bound_performance
from oasis.replay.simulator import ChangeModel, Replay, ReplayResult
from oasis.robot.scheduling.config import SHIPPED
from oasis.robot.scheduling.controller import ControllerConfig, RecrawlIndex, make_controller
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.recrawl import (
    AdaptiveFetchSchedule,
    ScheduleRecrawl,
    UniformSchedule,
    WhittleRecrawl,
    freshness_index,
)
from oasis.robot.scheduling.residual import start_table
from oasis.robot.scheduling.state import STATE_NAMES
from oasis.runtime.text import link_words
from oasis.web.model import Corpus

logger = logging.getLogger(__name__)

BASELINES = (
    "upper",
    "random",
    "bfs",
    "greedy-oracle",
    "greedy-parent",
    "greedy-anchor",
    "greedy-anchor-dir",
    "greedy-anchor-mean",
    "greedy-anchor-shuffled",
    "greedy-lookahead",
)
# non-learning baselines that see only what the robot sees (no oracle): the ones a learner is judged against
PRACTICAL = (
    "random",
    "bfs",
    "greedy-parent",
    "greedy-anchor",
    "greedy-anchor-dir",
    "greedy-anchor-mean",
    "greedy-anchor-shuffled",
)
SHUFFLED = ("random", "greedy-anchor-shuffled")  # policies drawn at random: the mean of ``random_runs`` runs

# states keyed on a URL (the document's own, or its parent's): they memorise one graph rather than generalise
MEMORISING_STATES = ("parent", "url", "hybrid")
DEFAULT_POLICIES = ("upper", "random", "bfs", "greedy-oracle", "greedy-parent", "greedy-anchor", "whittle")
Progress = Callable[[int], None]


# re-crawl schedules a policy name may carry as FRINGE+RECRAWL (issue 10); ``whittle-true`` is a reference,
# not a schedule a robot can run: the Whittle hook given every page's true modification rate
RECRAWLS = ("none", "whittle", "uniform", "adaptive", "whittle-true")


class TrueRateRecrawl(WhittleRecrawl):
    """The Whittle re-crawl hook (:class:`WhittleRecrawl`, the same index, pooled prior and unit) with each
    page's true modification rate in place of its estimate: how much of a gap to the truth the change-rate
    estimates leave (docs/replay.md "Changing webs at equal fetch budget")."""

    def __init__(self, rates: Callable[[str], float]) -> None:
        super().__init__()
        self._true = rates

    def __call__(self, arm: Any, now: float) -> float:
        super().__call__(arm, now)  # keeps the pooled prior, the clock and the collection sums as usual
        prior = self.pool.rate() if self.pool is not None else 1.0
        return freshness_index(arm.relevance, self._true(arm.url), max(0.0, now - arm.last_fetch)) * prior


def split_policy(policy: str) -> tuple[str, str | None]:
    """``FRINGE+RECRAWL`` -> (FRINGE, RECRAWL); a plain name -> (name, None): the run's default re-crawl."""
    if "+" in policy:
        fringe, recrawl = policy.split("+", 1)
        return fringe, recrawl
    return policy, None


def is_learning(policy: str) -> bool:
    fringe = split_policy(policy)[0]
    return fringe == "whittle" or fringe.startswith("whittle:")


def check_policy(policy: str) -> None:
    fringe, recrawl = split_policy(policy)
    if recrawl is not None and (recrawl not in RECRAWLS or fringe == "upper"):
        raise ValueError(
            f"unknown policy {policy!r}: FRINGE+RECRAWL needs RECRAWL in {', '.join(RECRAWLS)} and a fringe "
            "policy other than upper"
        )
    if fringe in BASELINES or fringe == "whittle":
        return
    if fringe.startswith("whittle:") and fringe.split(":", 1)[1] in STATE_NAMES:
        return
    raise ValueError(
        f"unknown policy {policy!r}; choose from {', '.join(BASELINES)}, whittle, "
        + ", ".join(f"whittle:{s}" for s in STATE_NAMES)
        + " (optionally +RECRAWL, RECRAWL in "
        + ", ".join(RECRAWLS)
        + ")"
    )


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    policies: tuple[str, ...] = DEFAULT_POLICIES
    traversals: int = 10  # for learning policies
    m: int = 1  # fetches per step
    budget: int | None = None  # fetches; default: the number of reachable pages
    random_runs: int = 10
    seed: int = 0
    controller: ControllerConfig = SHIPPED  # the robot as shipped (`whittle`)
    epsilon_decay: float = 0.5  # epsilon of traversal k is epsilon * epsilon_decay**k
    changes: ChangeModel | None = None
    # re-crawl of plain policy names: one of RECRAWLS, or "auto" (whittle on a changing web, none on a static)
    recrawl: str = "auto"
    uniform_interval: float | None = None  # uniform / adaptive initial interval; default reachable pages / m
    order_points: int = 700  # how many fetches of the relevance-in-order plots to keep
    curve_points: int = 200  # samples of the R/F/M curves

    def __post_init__(self) -> None:
        if not self.policies:
            raise ValueError("at least one policy is needed")
        for p in self.policies:
            check_policy(p)
        if self.traversals < 1 or self.m < 1 or self.random_runs < 1:
            raise ValueError("traversals, m and random_runs must be >= 1")
        if self.budget is not None and self.budget < 1:
            raise ValueError("budget must be >= 1")
        if not 0.0 <= self.epsilon_decay <= 1.0:
            raise ValueError("epsilon_decay must be in [0, 1]")
        if self.recrawl not in (*RECRAWLS, "auto"):
            raise ValueError(f"recrawl must be one of {', '.join(RECRAWLS)} or auto, got {self.recrawl!r}")
        if self.uniform_interval is not None and not self.uniform_interval > 0:
            raise ValueError("uniform_interval must be > 0")


# -- inputs ----------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    replay: Replay
    corpus: Corpus
    topic: str | None
    meta: dict[str, Any]


def prepare(
    corpus: Corpus,
    topic: str | None,
    *,
    seed_urls: Sequence[str] | None = None,
    anchors: bool = True,
    raw_anchors: bool = False,
    progress: Progress | None = None,
) -> Prepared:
    """Graph + r(i) + anchor relevance for a corpus and topic.

    r(i): with a topic, the engine's TF-IDF cosine model (:class:`oasis.engine.relevance.RelevanceModel`)
    fitted on the corpus; for a synthetic web whose topic names include ``topic`` (or with no topic), the
    generator's ground-truth relevance; with no topic otherwise, the corpus's own relevance attributes.
    A link's anchor relevance is the topic score of what the link says about its target, its anchor text and
    its URL's path words with identifiers cut (:func:`oasis.runtime.text.link_words`, as the live robot scores
    it; session 23); ``raw_anchors``: the anchor text as written, as before session 23.
    """
    t0 = time.perf_counter()
    graph = corpus.graph()
    urls = list(graph.urls)
    index = {u: i for i, u in enumerate(urls)}
    meta: dict[str, Any] = {"corpus": corpus.name, "topic": topic}
    raw_topics = corpus.meta.get("topics", []) if "synthetic" in corpus.meta else []
    synthetic_topics = [str(t) for t in raw_topics] if isinstance(raw_topics, list) else []
    model = None
    if topic is None or topic in synthetic_topics:
        if topic is not None and topic in synthetic_topics:
            relevance = corpus.web.relevance_to(synthetic_topics.index(topic))  # type: ignore[attr-defined]
        else:
            relevance = np.asarray(graph.relevance, dtype=np.float64)
        meta["relevance"] = "ground truth" if synthetic_topics else "corpus attribute"
        if anchors and topic is not None:
            from oasis.engine.relevance import RelevanceModel
            from oasis.engine.topic import Topic
            from oasis.web.synthetic import topic_vocabulary

            vocab = topic_vocabulary(topic, synthetic_topics.index(topic))
            model = RelevanceModel.from_topic(Topic(name=topic, description=topic, keywords=vocab))
    else:
        from oasis.engine.relevance import RelevanceModel
        from oasis.engine.topic import Topic

        pages = [corpus.pages[u] for u in urls]
        tp = Topic(name=topic[:200], description=topic)
        model = RelevanceModel.fit_corpus(tp, (f"{p.title} {p.text}" for p in pages))
        relevance = np.array([model.score(p.title, p.text) for p in pages], dtype=np.float64)
        meta["relevance"] = "tf-idf cosine"
        if progress is not None:
            progress(0)
    anchor: npt.NDArray[np.float64] | None = None
    if anchors and model is not None:
        cache: dict[str, float] = {}
        anchor = np.zeros(len(graph.indices))
        ptr = graph.indptr
        for i, u in enumerate(urls):
            lo, hi = int(ptr[i]), int(ptr[i + 1])
            if lo == hi:
                continue
            first: dict[int, str] = {}
            for link in corpus.out_links(u):
                j = index.get(link.url)
                if j is not None and j not in first:
                    first[j] = link.anchor
            for pos in range(lo, hi):
                j = int(graph.indices[pos])
                text = first.get(j, "") if raw_anchors else link_words(first.get(j, ""), urls[j])
                value = cache.get(text)
                if value is None:
                    value = model.score_text(text) if text else 0.0
                    cache[text] = value
                anchor[pos] = value
    if seed_urls:
        resolved = [resolve_seed(s, urls, index) for s in seed_urls]
        missing = [s for s, r in zip(seed_urls, resolved, strict=True) if r is None]
        if missing:
            raise ValueError(f"seed URL(s) not in the corpus: {missing[:3]}")
        seeds = [r for r in resolved if r is not None]
    else:
        seeds = [int(s) for s in graph.seeds]
    replay = Replay(graph, relevance, seeds, anchor_relevance=anchor)
    meta.update(
        pages=len(replay),
        reachable=replay.reachable,
        links=len(graph.indices),
        seeds=[urls[s] for s in seeds],
        prepare_seconds=round(time.perf_counter() - t0, 2),
        relevant_share=float((relevance[replay.reach] > 0.1).mean()) if replay.reachable else 0.0,
    )
    return Prepared(replay=replay, corpus=corpus, topic=topic, meta=meta)


def resolve_seed(seed: str, urls: Sequence[str], index: dict[str, int]) -> int | None:
    """A seed given as a URL of the corpus, or as a page path relative to the corpus root (``index.html``,
    ``library/asyncio.html``): the page whose URL path ends with that path, the one nearest the root when
    several do. None when no page matches."""
    found = index.get(seed)
    if found is not None:
        return found
    rel = seed.lstrip("/")
    if not rel or "://" in seed:
        return None
    tail = "/" + rel
    hits = [i for i, u in enumerate(urls) if u.endswith(tail)]
    if not hits:
        return None
    return min(hits, key=lambda i: (urls[i].count("/"), urls[i]))


# -- running ---------------------------------------------------------------------------------------------


def _curve(values: Sequence[float], points: int) -> list[float]:
    if len(values) <= points:
        return [round(v, 6) for v in values]
    idx = np.linspace(0, len(values) - 1, points).round().astype(int)
    return [round(float(values[i]), 6) for i in idx]


def _summary(result: ReplayResult, p_upper: float, cfg: ExperimentConfig) -> dict[str, Any]:
    return {
        "P": result.P,
        "P_ratio": result.P / p_upper if p_upper > 0 else 0.0,
        "fetches": len(result.fetched),
        "recrawls": result.recrawls,
        "mean_F": math.fsum(result.F) / len(result.F) if result.F else 1.0,
        "final_R": result.R[-1] if result.R else 0.0,
        "order": [round(r, 5) for r in result.fetched_relevance[: cfg.order_points]],
        "R": _curve(result.R, cfg.curve_points),
        "F": _curve(result.F, cfg.curve_points),
        "M": _curve(result.M, cfg.curve_points),
    }


class Experiment:
    """Runs the configured policies on one prepared replay; keeps the learned Q-tables."""

    def __init__(
        self,
        prepared: Prepared,
        config: ExperimentConfig,
        *,
        q_tables: dict[str, QTable] | None = None,
        progress: Progress | None = None,
        recrawl: Callable[[], RecrawlIndex] | None = None,
    ) -> None:
        """``recrawl`` builds a fresh Whittle re-crawl index per run (default
        ``oasis.robot.scheduling.recrawl.WhittleRecrawl``, which keeps per-document change histories); which
        re-crawl a policy uses is its ``+RECRAWL`` suffix or ``config.recrawl``."""
        self.prepared = prepared
        self.replay = prepared.replay
        self.config = config
        self.q_tables: dict[str, QTable] = dict(q_tables or {})
        self.progress = progress
        self.recrawl: Callable[[], RecrawlIndex] = recrawl if recrawl is not None else WhittleRecrawl
        self.budget = config.budget if config.budget is not None else self.replay.reachable
        self.steps = self.replay.steps_for(self.budget, config.m)
        self._rng_counter = 0

    def total_steps(self) -> int:
        """Replay steps the configured run will take (for a progress bar)."""
        n = 0
        for p in self.config.policies:
            fringe = split_policy(p)[0]
            if fringe == "upper":
                continue
            elif fringe in SHUFFLED:
                n += self.steps * self.config.random_runs
            elif is_learning(p):
                n += self.steps * self.config.traversals
            else:
                n += self.steps
        return n

    @property
    def _static(self) -> bool:
        return self.config.changes is None or self.config.changes.static

    def _rngs(self) -> tuple[random.Random, np.random.Generator]:
        self._rng_counter += 1
        seed = self.config.seed * 1_000_003 + self._rng_counter
        return random.Random(seed), np.random.default_rng([self.config.seed, 7])  # same web changes for all

    def recrawl_kind(self, policy: str) -> str:
        """The re-crawl schedule a policy name runs with: its ``+RECRAWL`` suffix, else the configured one
        (``auto``: the Whittle index on a changing web -- plain ``whittle`` is the unified queue -- none on a
        static web)."""
        kind = split_policy(policy)[1] or self.config.recrawl
        if kind == "auto":
            return "none" if self._static else "whittle"
        return kind

    def recrawl_hook(self, kind: str) -> RecrawlIndex | None:
        """A fresh re-crawl hook. Uniform and Nutch's adaptive schedule start from the same interval: the
        reachable pages over m (one pass of the web at the full fetch budget) unless configured; adaptive
        moves within [1 step, the run's horizon]. Both are relevance-aware (a due page is worth its
        relevance), the unit of the Whittle index, and share the one fetch budget with discovery."""
        if kind == "none":
            return None
        if kind == "whittle":
            return self.recrawl()
        if kind == "whittle-true":
            rep = self.replay
            return TrueRateRecrawl(lambda url: float(rep.modify_rates[rep.index[url]]))
        interval = self.config.uniform_interval or max(1.0, self.replay.reachable / self.config.m)
        if kind == "uniform":
            return ScheduleRecrawl(UniformSchedule(interval=interval), initial_interval=interval)
        horizon = float(max(self.steps, interval))
        sched = AdaptiveFetchSchedule(min_interval=1.0, max_interval=horizon, initial_interval=interval)
        return ScheduleRecrawl(sched, initial_interval=interval)

    def _run(
        self,
        policy: str,
        *,
        config: ControllerConfig | None = None,
        q: QTable | None = None,
        oracle: Any = None,
        recrawl: str = "none",
    ) -> ReplayResult:
        rng, np_rng = self._rngs()
        ctl: Any
        if policy in REPLAY_BASELINES:  # a replay baseline (oasis.replay.baselines), not a robot policy
            ctl = REPLAY_BASELINES[policy](
                rng=rng, config=config or self.config.controller, recrawl_index=self.recrawl_hook(recrawl)
            )
        else:
            ctl = make_controller(
                policy,
                rng=rng,
                config=config or self.config.controller,
                oracle=oracle,
                recrawl_index=self.recrawl_hook(recrawl),
                q=q,
            )
        return self.replay.run(
            ctl,
            m=self.config.m,
            steps=self.steps,
            changes=self.config.changes,
            rng=np_rng,
            progress=self.progress,
        )

    def upper(self) -> tuple[float, ReplayResult]:
        rep = self.replay
        rel = rep.relevance
        order = upper_order(rel, rep.reach)
        if self._static:
            p = upper_bound_performance(rel[rep.reach].tolist(), self.config.m, self.steps)
            fetched = order[: self.budget].tolist()
            fr = rel[fetched].tolist()
            R = static_recall_curve(fr, rep.total_relevance, self.config.m, self.steps)
            result = ReplayResult(
                R=R,
                F=[1.0] * len(R),
                M=list(R),
                fetched=fetched,
                fetched_relevance=fr,
                first_fetches=len(fetched),
                recrawls=0,
            )
            if not math.isclose(result.P, p, rel_tol=1e-9, abs_tol=1e-9):  # pragma: no cover - invariant
                raise AssertionError(f"closed-form upper bound {p} != simulated {result.P}")
            return p, result
        assert self.config.changes is not None
        events = rep.change_events(self.config.changes, self.steps, self._rngs()[1])
        R = rep.upper_bound_curve(events, m=self.config.m, steps=self.steps)
        result = ReplayResult(
            R=R, F=[1.0] * len(R), M=list(R), fetched=[], fetched_relevance=[], first_fetches=0, recrawls=0
        )
        return result.P, result

    def run(self) -> dict[str, Any]:
        cfg = self.config
        rep = self.replay
        t0 = time.perf_counter()
        p_upper, upper_result = self.upper()
        out: dict[str, Any] = {
            "pages": len(rep),
            "reachable": rep.reachable,
            "upper_P": p_upper,
            "budget": self.budget,
            "m": cfg.m,
            "steps": self.steps,
            "meta": self.prepared.meta,
            "policies": {},
        }
        policies: dict[str, Any] = out["policies"]
        rel_by_url = dict(zip(rep.urls, rep.relevance.tolist(), strict=True))
        for policy in cfg.policies:
            t1 = time.perf_counter()
            fringe = split_policy(policy)[0]
            rc = self.recrawl_kind(policy)
            if fringe == "upper":
                entry = _summary(upper_result, p_upper, cfg)
                entry["P_ratio"] = [entry["P_ratio"]]
            elif fringe in SHUFFLED:
                runs = [self._run(fringe, recrawl=rc) for _ in range(cfg.random_runs)]
                ratios = [r.P / p_upper for r in runs]
                entry = _summary(runs[0], p_upper, cfg)
                entry.update(
                    P=float(np.mean([r.P for r in runs])),
                    P_ratio=[float(np.mean(ratios))],
                    P_ratio_std=float(np.std(ratios)),
                    P_ratio_min=min(ratios),
                    P_ratio_max=max(ratios),
                    runs=cfg.random_runs,
                )
            elif fringe == "greedy-oracle":
                entry = _summary(
                    self._run("greedy-oracle", oracle=rel_by_url.__getitem__, recrawl=rc), p_upper, cfg
                )
                entry["P_ratio"] = [entry["P_ratio"]]
            elif fringe == "greedy-lookahead":
                look = dict(zip(rep.urls, lookahead_scores(rep.graph, rep.relevance).tolist(), strict=True))
                result = self._run("greedy-oracle", oracle=look.__getitem__, recrawl=rc)
                entry = _summary(result, p_upper, cfg)
                entry["P_ratio"] = [entry["P_ratio"]]
                entry["lookahead_weight"] = LOOKAHEAD_WEIGHT
            elif is_learning(policy):
                entry = self._learning(policy, p_upper)
            else:
                entry = _summary(self._run(fringe, recrawl=rc), p_upper, cfg)
                entry["P_ratio"] = [entry["P_ratio"]]
            if fringe != "upper":
                entry["recrawl"] = rc
            if not isinstance(entry["P"], list):
                entry["P"] = [entry["P"]]  # raw P per traversal beside P_ratio (issue 10)
            entry["seconds"] = round(time.perf_counter() - t1, 3)
            policies[policy] = entry
        out["seconds"] = round(time.perf_counter() - t0, 3)
        compare_with_strongest(out)
        return out

    def state_of(self, policy: str) -> str:
        fringe = split_policy(policy)[0]
        return fringe.split(":", 1)[1] if ":" in fringe else self.config.controller.state

    def _learning(self, policy: str, p_upper: float) -> dict[str, Any]:
        cfg = self.config
        base = replace(cfg.controller, state=self.state_of(policy))
        q = self.q_tables.get(policy)
        if q is None:
            q = start_table(base)  # the shipped table for the robot as shipped, else an empty one
            self.q_tables[policy] = q
        ratios: list[float] = []
        raw: list[float] = []
        first: ReplayResult | None = None
        last: ReplayResult | None = None
        for k in range(cfg.traversals):
            ctl_cfg = replace(base, epsilon=base.epsilon * cfg.epsilon_decay**k)
            result = self._run("whittle", config=ctl_cfg, q=q, recrawl=self.recrawl_kind(policy))
            ratios.append(result.P / p_upper if p_upper > 0 else 0.0)
            raw.append(result.P)
            first = first or result
            last = result
            logger.info("%s traversal %d: P/P_upper = %.4f", policy, k + 1, ratios[-1])
        assert first is not None and last is not None
        entry = _summary(last, p_upper, cfg)
        entry["P_ratio"] = ratios
        entry["P"] = raw
        entry["first_order"] = [round(r, 5) for r in first.fetched_relevance[: cfg.order_points]]
        entry["state"] = base.state
        entry["memorising"] = base.state in MEMORISING_STATES
        entry["q_states"] = len(q)
        entry["learn"] = base.learn
        return entry


def compare_with_strongest(results: dict[str, Any]) -> None:
    """Name the strongest practical (non-oracle, non-learning) baseline of a run by its raw P (last entry)
    and give every learning policy ``P_vs_strongest``: its raw P per traversal over that baseline's P."""
    policies: dict[str, Any] = results["policies"]
    ran = [p for p in PRACTICAL if p in policies]
    if not ran:
        return
    best = max(ran, key=lambda p: _raw_p(policies[p])[-1])
    p_best = _raw_p(policies[best])[-1]
    results["strongest_baseline"] = {"policy": best, "P": p_best}
    for name, entry in policies.items():
        if is_learning(name) and p_best > 0:
            entry["P_vs_strongest"] = [p / p_best for p in _raw_p(entry)]


def _raw_p(entry: dict[str, Any]) -> list[float]:
    p = entry["P"]
    return [float(x) for x in p] if isinstance(p, list) else [float(p)]
