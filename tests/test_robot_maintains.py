"""A robot maintaining its topic on the living web (real HTTP on 127.0.0.1, a real engine over gRPC):
conditional GETs answered 304, modified pages replaced and deleted pages removed from the engine, the page
budget per second, and the change-rate estimates saved and restored; plus the pure quality definitions and
the robot's own freshness estimate."""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

import pytest
from robot_testweb import LocalEngine

from oasis.cluster.quality import collection_quality
from oasis.robot.app import load_start_rates
from oasis.robot.config import RobotConfig
from oasis.robot.crawler import Crawler
from oasis.robot.engine_client import connect_engine
from oasis.robot.rates import freshness_estimate, load_rates, observations, rates_state
from oasis.robot.scheduling import RecrawlArm, make_controller
from oasis.robot.scheduling.recrawl import WhittleRecrawl
from oasis.runtime.clients import EngineClient
from oasis.web.living import ChangeRates, LivingWeb
from oasis.web.model import Corpus, Link, Page
from oasis.web.server import ReplayedWeb

BASE = "http://db.test"


def db_corpus(n: int = 6) -> Corpus:
    pages = {}
    for i in range(n):
        url = f"{BASE}/p{i}.html"
        links = tuple(Link(f"{BASE}/p{j}.html", f"table {j}") for j in range(n) if j != i)
        text = f"database sql query index transaction table {i} " * 30
        pages[url] = Page(url, f"SQL page {i}", text, links)
    return Corpus(pages=pages, seeds=[f"{BASE}/p0.html"], name="db")


def robot(engine: LocalEngine, tmp_path: Path, **overrides: object) -> tuple[Crawler, EngineClient]:
    cfg: dict[str, object] = {
        "min_delay": 0.0,
        "max_in_flight": 2,
        "state_dir": tmp_path / "state",
        "checkpoint_interval": 5,
        "index_flush_seconds": 0.2,
        "rates": tmp_path / "state" / "rates.json",
    }
    cfg.update(overrides)
    hook = WhittleRecrawl(period=0.5)
    client = connect_engine(engine.address, timeout=10)
    crawler = Crawler(
        RobotConfig(**cfg),  # type: ignore[arg-type]
        make_controller("whittle", rng=random.Random(1), recrawl_index=hook),
        client,
    )
    crawler.recrawl_hook = hook
    return crawler, client


def wait(check: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_robot_replaces_modified_removes_deleted_and_keeps_its_budget(
    engine: LocalEngine, tmp_path: Path
) -> None:
    living = LivingWeb(db_corpus(), ChangeRates(), seed=2)
    with ReplayedWeb(living.corpus, living=living) as web:
        crawler, client = robot(engine, tmp_path, pages_per_second=10.0)
        try:
            crawler.add_seeds(web.seeds)
            crawler.start()
            served = {u: web.url_for(u) for u in living.corpus.pages}
            wait(lambda: engine.index.stats().documents == 6 and crawler.status().not_modified >= 6)
            living.modify(f"{BASE}/p2.html")
            living.delete(f"{BASE}/p3.html")
            p2 = served[f"{BASE}/p2.html"]
            modified = living.states[f"{BASE}/p2.html"].modified
            wait(lambda: not engine.index.contains(served[f"{BASE}/p3.html"]))
            wait(lambda: float((engine.index.document(p2) or {}).get("fetch_time", 0.0)) >= modified)
            assert "Revision 1" in str((engine.index.document(p2) or {}).get("text"))
            s = crawler.status()
            # still maintaining: every re-crawl is a 304 or a change seen (the modified and the deleted page)
            assert s.state == "running" and s.changes_seen >= 2 and s.not_modified >= 6
            assert s.recrawls >= s.not_modified + s.changes_seen
            # the budget: never more page requests than 10/s (plus the bucket's one second of tokens)
            pages = [r for r in web.access_log if r.path.endswith(".html")]
            span = pages[-1].time - pages[0].time
            assert len(pages) <= 10 * span + 10 + 2, (len(pages), span)
            assert s.budget_per_second == 10.0
            assert any(r.status == 304 for r in web.access_log)
        finally:
            crawler.close()
            client.close()
    state = json.loads((tmp_path / "state" / "rates.json").read_text())
    assert state["docs"] and sum(len(d["observations"]) for d in state["docs"].values()) > 0


@pytest.mark.parametrize("last_modified", [True, False])
def test_a_site_wide_update_during_the_first_pass_is_seen_from_last_modified(
    engine: LocalEngine, tmp_path: Path, last_modified: bool
) -> None:
    """Pages retrieved for the first time after a site-wide update say so by their Last-Modified: with
    ``last_modified`` each is a change observed since the crawl's start, before any re-crawl."""
    living = LivingWeb(db_corpus(16), ChangeRates(), seed=2)
    with ReplayedWeb(living.corpus, living=living) as web:
        crawler, client = robot(engine, tmp_path, pages_per_second=2.0, last_modified=last_modified)
        hook = crawler.recrawl_hook
        assert hook is not None and hook.pool is not None
        try:
            crawler.add_seeds(web.seeds)
            crawler.start()
            started = time.time()
            wait(lambda: crawler.status().pages_fetched >= 2)
            time.sleep(max(0.0, started + 3.0 - time.time()))
            burst = time.time()
            living.burst(1.0)
            wait(lambda: crawler.status().kinds.get("new", 0) >= 16)
            after = [u for u, k in crawler.processor.known.items() if k.relevance >= 0 and u in hook._docs]
            first = {u: hook._docs[u].estimator._order[0] for u in after if hook._docs[u].estimator.n}
            seen_changed = crawler.status().changes_seen  # re-crawls that found a change
        finally:
            crawler.close()
            client.close()
    histories = [o for o in first.values() if o[0] and o[1] >= burst - started]
    if last_modified:
        # every page retrieved more than a second after the update: a change over its time since the start
        assert len(histories) >= 3, first
        assert hook.pool.changes > seen_changed
    else:
        assert hook.pool.changes <= seen_changed


def test_a_site_wide_update_after_the_first_pass_is_judged_from_recrawls(
    engine: LocalEngine, tmp_path: Path
) -> None:
    """Every page modified at once after the robot holds them all: the re-crawls that find the changes see
    one Last-Modified second, the robot judges it a site-wide update, and the share it changed, measured on
    the copies re-crawled since, is near all of them."""
    living = LivingWeb(db_corpus(24), ChangeRates(), seed=3)
    with ReplayedWeb(living.corpus, living=living) as web:
        crawler, client = robot(engine, tmp_path, pages_per_second=4.0)
        hook = crawler.recrawl_hook
        assert hook is not None
        try:
            crawler.add_seeds(web.seeds)
            crawler.start()
            wait(lambda: crawler.status().kinds.get("new", 0) >= 24)
            time.sleep(2.0)  # each copy is re-crawled about every 6 s: most are older than a second
            assert hook.site.update() is None
            living.burst(1.0)
            # found once three changes carry the update's second; the share it changed, (hits + 1/2) /
            # (exposed + 1), is 1/2 until copies from before it are re-crawled after it, then near 1
            wait(lambda: (hook.site.update() or (0.0, 0.0))[1] > 0.75, timeout=30.0)
            found = hook.site.update()
            estimate = crawler.status().freshness_estimate
        finally:
            crawler.close()
            client.close()
    assert found is not None and found[1] > 0.75
    assert 0.0 < estimate < 1.0


def test_rates_roundtrip_restores_every_history_and_the_pooled_prior() -> None:
    hook = WhittleRecrawl(period=1.0)
    rng = random.Random(4)
    for i in range(5):
        t, changes = 0.0, 0
        for fetches in range(1, 9):
            t += rng.uniform(1, 5)
            changes += rng.random() < 0.3
            hook(RecrawlArm(f"u{i}", 0.5, t, 0.0, fetches, changes), t + 1)
    state = json.loads(json.dumps(rates_state(hook)))
    fresh = WhittleRecrawl(period=1.0)
    assert load_rates(fresh, state) == 5
    assert observations(fresh) == observations(hook) > 0
    assert fresh.pool is not None and hook.pool is not None
    assert fresh.pool.rate() == pytest.approx(hook.pool.rate())
    for i in range(5):
        arm = RecrawlArm(f"u{i}", 0.5, hook._docs[f"u{i}"].last_fetch, 0.0, 8, hook._docs[f"u{i}"].changes)
        # (a page's MLE is re-used while the pooled prior moves by less than 1%: the hook's may be that old)
        assert fresh.rate(arm) == pytest.approx(hook.rate(arm), rel=0.01)
    with pytest.raises(ValueError, match="version"):
        load_rates(WhittleRecrawl(), {"version": 99})


def test_freshness_estimate_is_relevance_weighted_survival() -> None:
    hook = WhittleRecrawl(period=1.0, pooled=False, prior_rate=0.1)
    hook(RecrawlArm("a", 1.0, 100.0, 100.0, 1, 0), 100.0)
    hook(RecrawlArm("b", 3.0, 90.0, 90.0, 1, 0), 100.0)
    # F_est = sum r exp(-lam a) / sum r with lam = the prior 0.1 (no observation yet)
    expected = (1.0 * math.exp(-0.1 * 10) + 3.0 * math.exp(-0.1 * 20)) / 4.0
    assert freshness_estimate(hook, {"a": 1.0, "b": 3.0}, 110.0) == pytest.approx(expected)
    assert freshness_estimate(hook, {}, 110.0) == 0.0
    # a site-wide update at 95 seen in re-crawls (four changes stamped then, all re-crawled after it from
    # copies fetched before: q = 4.5 / 5): b, fetched at 90, is also fresh only if the update missed it
    for k in range(4):
        hook.site.recrawl(80.0, 100.0 + k, 95.0)
    late = (1.0 * math.exp(-0.1 * 10) + 3.0 * math.exp(-0.1 * 20) * (1.0 - 4.5 / 5.0)) / 4.0
    assert freshness_estimate(hook, {"a": 1.0, "b": 3.0}, 110.0) == pytest.approx(late)


def test_collection_quality_hand_worked() -> None:
    pages = {"a": 10.0, "b": 20.0, "c": 30.0, "d": 5.0}  # live page -> time its version appeared
    relevance = {"a": 0.5, "b": 0.3, "c": 0.2, "d": 0.05}  # d is below the threshold: not the topic's
    docs = [("a", 12.0, 0.5), ("b", 15.0, 0.4), ("gone", 1.0, 0.1), ("d", 9.0, 0.05)]
    q = collection_quality(pages, relevance, docs, threshold=0.1)
    # S_V = 0.5 + 0.3 + 0.2 = 1.0; fresh: a (12 >= 10) and d (weight 0); stale: b (15 < 20); gone: 1
    # S_CV = 0.5; S_C = 0.5 (a) + 0.4 (b's stored copy) + 0.1 (gone) + 0 (d) = 1.0
    assert (q.recall, q.freshness, q.M) == (pytest.approx(0.5), pytest.approx(0.5), pytest.approx(0.5))
    assert (q.relevant, q.documents, q.fresh, q.stale, q.gone) == (3, 4, 2, 1, 1)
    empty = collection_quality(pages, relevance, [], threshold=0.1)
    assert (empty.recall, empty.freshness) == (0.0, 1.0)  # nothing held: nothing stale, nothing recalled


def test_a_robot_starts_from_initial_rates_until_it_has_its_own(engine: LocalEngine, tmp_path: Path) -> None:
    source = WhittleRecrawl()
    source(RecrawlArm("http://x.test/a", 0.5, 10.0, 0.0, 3, 1), 11.0)
    shipped = tmp_path / "shipped-rates.json"
    shipped.write_text(json.dumps(rates_state(source)))
    crawler, client = robot(engine, tmp_path, initial_rates=shipped)
    try:
        assert load_start_rates(crawler) == 1
        assert crawler.recrawl_hook is not None and "http://x.test/a" in crawler.recrawl_hook._docs
    finally:
        crawler.close()
        client.close()
