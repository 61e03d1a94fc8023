"""The in-link weight the next crawl starts with, from a replay of the web a crawl fetched (session 22;
robot/oasis/robot/scheduling/linkreplay.py)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from oasis.replay.shipped import FEATURES_ONLY
from oasis.robot.scheduling import SHIPPED, Discovered, FetchOutcome, QTable, make_controller
from oasis.robot.scheduling.config import LINK_GRID
from oasis.robot.scheduling.linkreplay import KnownWeb, replay_score
from oasis.robot.scheduling.residual import LINK_ROW, WEB_ROWS

# the hand-made web, page -> (relevance, [(link, anchor relevance)]): seed s (0) links to h (anchor .4),
# g (.3) and t (0); h (relevance 1) links to t (anchor .1), u (0) and z (never fetched); g links nowhere.
# After s and h, t's two links give best p + a = 1 + .1 and mean (0 + 1.1) / 2: its mixed estimate is
# 1.1 - .55 k against u's 1.0, so k = 0 fetches t before u and every k >= .25 u before t; g (.3) comes last.
S, H, G, T, U, Z = range(6)
URLS = [f"http://w/{name}" for name in "shgtuz"]
IDS = {url: doc for doc, url in enumerate(URLS)}


def _web(r_t: float, r_u: float) -> KnownWeb:
    web = KnownWeb()
    web.add(S, 0.0, [(H, 0.4), (G, 0.3), (T, 0.0)], seed=True)
    web.add(H, 1.0, [(T, 0.1), (U, 0.0), (Z, 0.0)])
    web.add(G, 0.0, [])
    web.add(T, r_t, [])
    web.add(U, r_u, [])
    return web


# the robot with nothing learned and no directory term: its order is the mixed estimate's (link_mean k)
CONFIG = replace(SHIPPED, start="empty", link_replay=0.0, dir_weight=0.0, link_min=2)


def _fixed(k: float) -> Any:
    config = replace(CONFIG, learn=False, link_learn=None, link_replay=None, link_mean=k)
    return make_controller("whittle", rng=random.Random(0), config=config, q=QTable(0.0))


def test_replay_scores_by_hand() -> None:
    """A replay crawls the known web from its seeds, links to pages never fetched (z) left out, and scores the
    order by the running relevance summed over the fetches: with t relevant, k = 0's order s h t u g sums
    0 + 1 + 2 + 2 + 2 = 7 and k = .5's s h u t g 0 + 1 + 1 + 2 + 2 = 6; with u relevant the other way."""
    assert replay_score(_fixed(0.0), _web(1.0, 0.0), URLS, IDS) == 7.0
    assert replay_score(_fixed(0.5), _web(1.0, 0.0), URLS, IDS) == 6.0
    assert replay_score(_fixed(0.0), _web(0.0, 1.0), URLS, IDS) == 6.0
    assert replay_score(_fixed(0.25), _web(0.0, 1.0), URLS, IDS) == 7.0


def test_choice_margin_and_when_to_replay() -> None:
    web = KnownWeb()
    assert not web.due(1)  # nothing known, no seed
    web.add(S, 0.0, [(H, 0.4)], seed=True)
    web.add(S, 1.0, [])  # a page fetched again keeps its first record
    assert len(web) == 1 and web.relevance(S) == 0.0 and list(web.links(S)) == [(H, 0.4)]
    assert S in web and H not in web and web.relevance(H) == 0.0 and list(web.links(H)) == []
    assert web.due(1) and not web.due(2)
    scores = {0.0: 7.0, 0.25: 7.0, 0.5: 6.0, 0.75: 6.0, 1.0: 6.0}
    assert web.choose(scores, 0.5, 0.0) == 0.25  # the best, nearest the default among equals
    assert web.scores == scores and web.chosen_at == 1 and not web.due(1)  # 10% more pages first
    assert web.choose(scores, 0.5, 0.16) == 0.25  # 7 > 1.16 x 6
    assert web.choose(scores, 0.5, 0.17) == 0.5  # 7 < 1.17 x 6: the default holds
    assert web.choose(scores, 0.0, 0.0) == 0.0
    for page in (10, 11):
        web.add(page, 0.0, [])
    assert web.due(1)


def _crawl(ctl: Any, r_t: float, r_u: float) -> list[str]:
    """Crawl the hand-made web (without z) with the controller: five fetches, then the fringe is empty."""
    web = _web(r_t, r_u)
    ctl.add_seeds([URLS[S]])
    order = []
    for step in range(5):
        (url,) = ctl.next_batch(1, float(step))
        links = [Discovered(URLS[c], "", a) for c, a in web.links(IDS[url]) if c != Z]
        ctl.report(FetchOutcome(url, "new", web.relevance(IDS[url]), links), float(step))
        order.append(url)
    assert ctl.next_batch(1, 5.0) == []
    return order


def test_the_next_crawl_starts_with_the_replayed_weight() -> None:
    """A crawl of the hand-made web (t relevant) replays it when its fringe empties -- the robot's own index
    frozen at each weight scores 7 where it fetches t before u, else 6 -- and writes the best weight into the
    table's web row; the next crawl of the web starts with it and holds it (no learned weight), fetching t
    before u, which the default .5 does not."""
    q = QTable(0.0)
    first = make_controller("whittle", rng=random.Random(0), config=CONFIG, q=q)
    assert first.index.link_mean == 0.5 and first.index.link_weight is not None
    _crawl(first, r_t=1.0, r_u=0.0)
    scores = first.index.known.scores
    assert set(scores) == set(LINK_GRID) and set(scores.values()) == {6.0, 7.0} and scores[0.0] == 7.0
    k, pages, _ = q.rows()[LINK_ROW]
    assert scores[k] == 7.0 and k != 0.5 and pages == 5.0
    assert first.index.link_mean == 0.5  # the crawl that learned it keeps its own weight
    fixed = replace(CONFIG, learn=False)  # (the order by the keys alone)
    second = make_controller("whittle", rng=random.Random(0), config=fixed, q=q)
    assert second.index.link_mean == k and second.index.link_weight is None
    assert _crawl(second, r_t=1.0, r_u=0.0) == [URLS[p] for p in (S, H, T, U, G)]
    off = make_controller("whittle", rng=random.Random(0), config=replace(fixed, link_replay=None), q=q)
    assert off.index.link_mean == 0.5  # off: the row is not read
    assert _crawl(off, r_t=1.0, r_u=0.0) == [URLS[p] for p in (S, H, U, T, G)]
    assert LINK_ROW.startswith(WEB_ROWS)  # a memory of the web: a trained table drops it
    for damaged in (float("nan"), 0.3, -1.0):  # a corrupt row (a damaged or hand-edited table) is ignored
        q.put(LINK_ROW, (damaged, 5.0, 0.0))
        ctl = make_controller("whittle", rng=random.Random(0), config=fixed, q=q)
        assert ctl.index.link_mean == 0.5 and ctl.index.link_weight is not None


def test_the_default_holds_when_it_is_best() -> None:
    """With u relevant the default .5 already fetches u first: the row keeps .5."""
    q = QTable(0.0)
    _crawl(make_controller("whittle", rng=random.Random(0), config=CONFIG, q=q), r_t=0.0, r_u=1.0)
    assert q.rows()[LINK_ROW][0] == 0.5


def test_link_replay_ships_and_is_left_out_of_the_features_only_robot() -> None:
    assert SHIPPED.link_replay == 0.0
    assert replace(SHIPPED, dir_weight=0.0, link_replay=None) == FEATURES_ONLY
    with pytest.raises(ValueError, match="link_replay"):
        replace(SHIPPED, link_replay=-0.1)
