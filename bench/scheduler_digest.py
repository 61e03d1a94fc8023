"""Decision-trace digests of the request controllers: one SHA-256 per run over every batch handed out, every
``report`` return, and the final checkpoint (``state_dict``: documents, queue order, Q-table to the bit), for
every learning state and baseline x host_ready (politeness) x epsilon x re-crawl hook, with redirects,
deferrals, errors, deletions, re-discoveries and a checkpoint restore mid-run.

A speed change must leave every line identical: run it in a checkout before and after, and diff.
usage (from a checkout with its .venv):  PYTHONHASHSEED=0 .venv/bin/python -P bench/scheduler_digest.py
(another checkout: cd there and give this file's path; it imports only the public scheduling package).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, make_controller

POLICIES = (
    ("whittle", "generalising"),
    ("whittle", "parent"),
    ("whittle", "hybrid"),
    ("whittle", "url"),
    ("whittle", "generalising-host"),
    ("greedy-parent", None),
    ("greedy-anchor", None),
    ("bfs", None),
    ("random", None),
)


def _url(i: int, hosts: int) -> str:
    return f"http://h{i % hosts}.example.org/p/{i}.html"


def recrawl_index(arm, now):  # type: ignore[no-untyped-def]
    return arm.relevance * (now - arm.last_fetch) / (1.0 + arm.changes) - 0.05


def run(policy: str, state: str | None, hosts: int, politeness: bool, epsilon: float, recrawl: bool) -> str:
    rng = random.Random(11)
    cfg = ControllerConfig(state=state or "generalising", epsilon=epsilon)
    kw = {"recrawl_index": recrawl_index} if recrawl else {}

    def make():  # type: ignore[no-untyped-def]
        return make_controller(policy, rng=random.Random(5), config=cfg, **kw)

    ctl = make()
    h = hashlib.sha256()
    ctl.add_seeds([_url(0, hosts), _url(1, hosts)])
    nxt = 2
    blocked: set[str] = set()

    def ready(host: str) -> bool:
        return host not in blocked

    for step in range(1500):
        if politeness:
            blocked = {f"h{j}.example.org" for j in range(hosts) if rng.random() < 0.3}
        batch = ctl.next_batch(rng.choice((1, 1, 2, 5)), float(step), ready if politeness else None)
        h.update(repr(("b", batch)).encode())
        for url in batch:
            u = rng.random()
            if u < 0.05:
                ctl.defer(url)
                continue
            kind = "new"
            if u < 0.08:
                kind = "error"
            elif u < 0.1:
                kind = "deleted"
            elif ctl.status(url) == "retrieved" and u < 0.5:
                kind = "modified"
            links = []
            for _ in range(rng.choice((0, 3, 10, 10))):
                if rng.random() < 0.3 and nxt > 2:
                    target = _url(rng.randrange(nxt), hosts)  # a re-discovery (or a retrieved page)
                else:
                    target = _url(nxt, hosts)
                    nxt += 1
                links.append(Discovered(target, "", rng.random() ** 2))
            out = ctl.report(FetchOutcome(url, kind, rng.random() ** 3, links), float(step))
            h.update(repr(("r", out)).encode())
        if step % 300 == 0:  # a redirect target the controller never queued
            redirect = FetchOutcome(_url(nxt, hosts), "new", 0.5, [Discovered(_url(nxt + 1, hosts))])
            out = ctl.report(redirect, 1.0)
            nxt += 2
            h.update(repr(("x", out)).encode())
        if step == 700:  # checkpoint and restore into a fresh controller
            saved = json.loads(json.dumps(ctl.state_dict()))
            h.update(json.dumps(saved, sort_keys=True).encode())
            ctl = make()
            ctl.load_state(saved)
    h.update(json.dumps(ctl.state_dict(), sort_keys=True).encode())
    return h.hexdigest()[:16]


def main() -> int:
    for policy, state in POLICIES:
        for hosts in (4, 1000):
            for politeness in (False, True):
                for epsilon in (0.0, 0.1) if policy == "whittle" else (0.0,):
                    for recrawl in (False, True):
                        d = run(policy, state, hosts, politeness, epsilon, recrawl)
                        print(policy, state, hosts, politeness, epsilon, recrawl, d, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
