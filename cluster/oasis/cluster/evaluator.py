"""``python -m oasis.cluster.evaluator --state-dir DIR``: measure R(t), F(t), M(t) and P of every topic of a
running cluster against the living web's ground truth, and append them to ``DIR/quality.jsonl``.

Each period the evaluator

1. reads the cluster state file (engines, robots, and the web's ground-truth address and token, which only
   the launcher and this process know);
2. asks the web for its ground truth (``GET /truth``: each live page's version and the time it appeared)
   and, for page versions it has not seen, their text (``POST /texts``);
3. scores each new version with each topic engine's own relevance model (``Engine.Score``; cached per page
   version while the engine's model is the one that scored it: each reply names the build of its model, and
   a sample with no new version scores one cached page to learn whether the engine rebuilt it), so r(i) is
   the topic scoring function of papers/004;
4. lists what each engine actually holds (``Engine.ListDocuments``: URL, fetch time, stored relevance; read
   right after the ground truth, before any text is fetched or scored, so that a page re-crawled while the
   sample is being scored is not counted fresh in a sample whose time is before that re-crawl) and
   computes R, F, M (:func:`oasis.cluster.quality.collection_quality`), P so far, and each robot's own
   estimates (``Robot.Status``: recall and freshness estimates, no ground truth) with their error against
   the truth.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from types import FrameType
from typing import Any

import requests

from oasis.cluster.config import ROBOT_PREFIX
from oasis.cluster.launcher import Cluster, NoCluster
from oasis.cluster.quality import QUALITY_FILE, append_row, collection_quality
from oasis.runtime.clients import EngineClient, EngineDocument, RobotClient
from oasis.runtime.errors import ServiceError
from oasis.runtime.files import FileWriteError, write_json_atomic

logger = logging.getLogger("oasis.cluster.evaluator")

TEXT_BATCH = 50  # page texts per /texts request
CHANGE_KINDS = ("modified", "deleted", "created")


class TruthClient:
    """The living web's ground truth over HTTP (bearer token)."""

    def __init__(self, address: str, token: str, timeout: float = 30.0) -> None:
        self.base = f"http://{address}"
        self._session = requests.Session()
        self._session.headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout

    def get(self, path: str) -> dict[str, Any]:
        reply = self._session.get(self.base + path, timeout=self._timeout)
        reply.raise_for_status()
        data: dict[str, Any] = reply.json()
        return data

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = self._session.post(self.base + path, json=body, timeout=self._timeout)
        reply.raise_for_status()
        data: dict[str, Any] = reply.json()
        return data

    def truth(self) -> dict[str, Any]:
        return self.get("/truth")

    def texts(self, urls: Sequence[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(urls), TEXT_BATCH):
            out.update(self.post("/texts", {"urls": list(urls[i : i + TEXT_BATCH])})["pages"])
        return out

    def close(self) -> None:
        self._session.close()


def truth_client(cluster: Cluster) -> TruthClient | None:
    """The ground truth of the cluster's web, if it is a living web."""
    for s in cluster.of_kind("web"):
        if s.extra.get("truth") and s.extra.get("token"):
            return TruthClient(str(s.extra["truth"]), str(s.extra["token"]))
    return None


class LiveEvaluator:
    """One sample per :meth:`evaluate` call (see the module docstring)."""

    def __init__(
        self, state_dir: Path, *, min_relevance: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.state_dir = state_dir
        self.min_relevance = min_relevance
        self._clock = clock
        self._start = clock()
        self._relevance: dict[str, dict[tuple[str, int], float]] = {}  # topic -> (url, version) -> r
        self._model: dict[str, str] = {}  # topic -> the model build that scored the cache
        self._texts: dict[tuple[str, int], tuple[str, str]] = {}
        self._last: dict[str, tuple[float, float]] = {}  # topic -> (time, M) of the previous sample
        self._P: dict[str, float] = {}

    def evaluate(self) -> dict[str, Any]:
        cluster = Cluster.load(self.state_dir)
        truth_api = truth_client(cluster)
        if truth_api is None:
            raise NoCluster("the cluster's web has no ground truth (not a living web)")
        engines = {
            engine.name: EngineClient(engine.address, timeout=30.0) for engine in cluster.of_kind("engine")
        }
        try:
            return self._sample(cluster, truth_api, engines)
        finally:
            truth_api.close()
            for client in engines.values():
                client.close()

    def _sample(
        self, cluster: Cluster, truth_api: TruthClient, engines: dict[str, EngineClient]
    ) -> dict[str, Any]:
        """One sample, through one client per engine (its documents, then its scores)."""
        # the sample's time is when the ground truth was read: a change made while the rest of the evaluation
        # runs belongs to the next sample, not to this one's time stamp
        now = self._clock()
        truth = truth_api.truth()
        # what each engine holds, read at once: scoring a burst's new versions takes seconds, and robots that
        # re-crawl meanwhile must not make this sample fresher than the web it was read against
        held = {name: self._held(client) for name, client in engines.items()}
        pages = {u: (int(v), float(m)) for u, (v, m) in truth["pages"].items()}
        missing = [u for u, (v, _) in pages.items() if (u, v) not in self._texts]
        for url, t in truth_api.texts(missing).items():
            self._texts[(url, int(t["version"]))] = (str(t["title"]), str(t["text"]))
        counts = truth.get("counts", {})
        row: dict[str, Any] = {
            "time": now,
            "elapsed": now - self._start,
            "web": {"pages": len(pages), **{k: int(counts.get(k, 0)) for k in CHANGE_KINDS}},
            "topics": {},
        }
        robots = {s.name.removeprefix(ROBOT_PREFIX): s.address for s in cluster.of_kind("robot")}
        for name, client in engines.items():
            docs = held[name]
            try:
                if isinstance(docs, ServiceError):
                    raise docs
                row["topics"][name] = self._topic(name, client, docs, pages, robots.get(name), now)
            except ServiceError as exc:
                logger.warning("topic %s not evaluated: %s", name, exc)
        return row

    @staticmethod
    def _held(client: EngineClient) -> list[EngineDocument] | ServiceError:
        """An engine's documents (URL, fetch time, stored relevance), or the error that stopped the call."""
        try:
            return client.list_documents()
        except ServiceError as exc:
            return exc

    def _scores(
        self, topic: str, client: EngineClient, pages: dict[str, tuple[int, float]]
    ) -> dict[str, float]:
        """r(i) of each live page's current version under the engine's model now. The engine takes IDF from
        its own collection and rebuilds it when the collection changed size (by a quarter); every Score reply
        names the build of the model that scored it, and cached scores are kept only while that build is the
        engine's (a cache that copied the engine's rule from the outside drifted from it: session 12; one
        keyed by the collection size took a model rebuilt at a size seen before for the old one: session
        24). The build is asked for at every sample, with the new versions or with one cached page."""
        keys = [(u, v) for u, (v, _) in pages.items() if (u, v) in self._texts]
        cache = self._relevance.setdefault(topic, {})
        ask = [k for k in keys if k not in cache] or keys[:1]
        if ask:
            scores, model = client.score_with_model([self._texts[k] for k in ask])
            if not model or model != self._model.get(topic):  # another (or an unnamed) build: dropped
                self._relevance[topic] = cache = {}
                if len(ask) < len(keys):  # score every page under the new model
                    ask = keys
                    scores, model = client.score_with_model([self._texts[k] for k in ask])
                self._model[topic] = model
            cache.update(zip(ask, scores, strict=True))
        return {u: cache.get((u, v), 0.0) for u, (v, _) in pages.items()}

    def _topic(
        self,
        topic: str,
        client: EngineClient,
        docs: list[EngineDocument],
        pages: dict[str, tuple[int, float]],
        robot: str | None,
        now: float,
    ) -> dict[str, Any]:
        relevance = self._scores(topic, client, pages)
        q = collection_quality(
            {u: m for u, (_, m) in pages.items()},
            relevance,
            ((d.url, d.fetch_time, d.relevance) for d in docs),
            self.min_relevance,
        )
        prev_t, prev_m = self._last.get(topic, (now, q.M))
        # Eq. 3 (papers/004): P = integral of M dt, M constant between two samples
        self._P[topic] = self._P.get(topic, 0.0) + prev_m * (now - prev_t)
        self._last[topic] = (now, q.M)
        elapsed = now - self._start
        out: dict[str, Any] = {
            **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(q).items()},
            "P": round(self._P[topic], 4),
            "P_mean": round(self._P[topic] / elapsed, 6) if elapsed > 0 else q.M,
        }
        if robot is not None:
            out.update(robot_estimates(robot, q.recall, q.freshness))
        return out


def robot_estimates(address: str, recall: float, freshness: float) -> dict[str, Any]:
    """The robot's own view (no ground truth) and how far its estimates are from the truth."""
    client = RobotClient(address)
    try:
        st = client.status()
    except ServiceError as exc:
        return {"robot": {"state": "unreachable", "error": str(exc)[:200]}}
    finally:
        client.close()
    return {
        "robot": {
            "state": st.state,
            "pages_fetched": st.pages_fetched,
            "recrawls": st.recrawls,
            "changes_seen": st.changes_seen,
            "not_modified": st.not_modified,
            "pages_per_second": round(st.pages_per_second, 3),
            "recall_estimate": round(st.recall_estimate, 6),
            "freshness_estimate": round(st.freshness_estimate, 6),
        },
        "estimate_error": {
            "recall": round(st.recall_estimate - recall, 6),
            "freshness": round(st.freshness_estimate - freshness, 6),
        },
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m oasis.cluster.evaluator", description=__doc__.split("\n")[0])
    p.add_argument("--state-dir", type=Path, required=True, help="the cluster's state directory")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between two samples")
    p.add_argument("--min-relevance", type=float, default=0.15, help="r(i) below this is not the topic's")
    p.add_argument("--address-file", type=Path, default=None)
    p.add_argument("--log-level", default="INFO")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    import os

    from oasis.runtime.service import configure_logging

    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    if not args.interval > 0:
        print("error: --interval must be > 0", file=sys.stderr)
        return 2
    if not 0.0 <= args.min_relevance <= 1.0:  # r(i) is a cosine in [0, 1]: above 1 no page would count
        print(f"error: --min-relevance must be in [0, 1], got {args.min_relevance}", file=sys.stderr)
        return 2
    done = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    state_dir = args.state_dir.resolve()
    evaluator = LiveEvaluator(state_dir, min_relevance=args.min_relevance)
    out = state_dir / QUALITY_FILE
    if args.address_file is not None:
        try:
            write_json_atomic(args.address_file, {"address": "", "pid": os.getpid(), "series": str(out)})
        except FileWriteError as exc:  # a full or read-only disk at start: one line, as every service
            print(f"error: {exc}", file=sys.stderr)
            return 1
    logger.info("evaluating every %.1f s into %s", args.interval, out)
    while not done.is_set():
        started = time.monotonic()
        sample_once(out, evaluator.evaluate)
        done.wait(max(0.05, args.interval - (time.monotonic() - started)))
    return 0


def sample_once(out: Path, evaluate: Callable[[], Mapping[str, Any]]) -> bool:
    """Evaluate once and append the sample to ``out``; an evaluation that fails (no cluster yet, a service
    down) or a sample the disk refuses (full, read-only) is logged and skipped, and the next one is tried:
    the evaluator outlives both. True when a sample was written."""
    try:
        row = evaluate()
    except (NoCluster, ServiceError, requests.RequestException, KeyError, ValueError) as exc:
        logger.warning("evaluation skipped: %s", exc)
        return False
    try:
        append_row(out, row)
    except OSError as exc:
        logger.warning("quality sample not written to %s: %s", out, exc)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
