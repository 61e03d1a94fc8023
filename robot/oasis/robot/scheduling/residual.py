"""The residual Whittle index of a fringe document (issue 10 item 4; docs/replay.md "The shipped robot").

The generalising state x (discretised parent relevance, anchor relevance, depth) is coarse: when every
document of a state shares one index v(x) (papers/004, Eq. 9), the learner orders pages bin by bin, where
best-first by parent + anchor-text relevance (``greedy-anchor``) orders them by the exact sum. Here the index
of fringe document i in state x is

    Q_i(1) = b_i + c(x)        b_i = parent relevance + anchor relevance (greedy-anchor's key, exact per page)
    Q_i(0) = gamma Q_i(1)      (the passive control earns 0 and keeps the state: the fixed point of Eq. 10)
    v_i    = Q_i(1) - Q_i(0) = (1 - gamma) (b_i + c(x))                                          (Eq. 9)

and the state learns only the *residual* c(x): what a fetch from state x is worth beyond b_i. After a fetch
of i (reward g, Eq. 11) that newly discovered the children J, Eq. 10's sample of Q_i(1) is
``y = g + gamma (Q(x', u') + sum_{j in J} max_u Q_j(u))`` with max_u Q_j(u) = Q_j(1) = b_j + c(x_j), and the
residual sample is ``y - b_i``; c(x) is its shrunk running mean (Eq. 10 with the step size
``1 / (n + shrink)`` from c = 0, i.e. ``c(x) = sum of residual samples / (n + shrink)`` after n fetches: an
empirical-Bayes mean with ``shrink`` pseudo-observations at 0). With c = 0 everywhere the order is
greedy-anchor's, including its tie-break (b_i, then FIFO); a little-seen state stays near the exact score.
``child_weight`` scales the children's part of the sample (1: Eq. 10 as written; 0: c(x) is a calibration
of the immediate estimate, E[r - b | x]).

The Q-table holds, per state, ``[gamma c(x), c(x), n]`` (so its own Eq. 9 index is (1 - gamma) c(x)): the
same file format as the state-index learner's, so a table learned on training webs ships and loads the
same way (``load_q`` / ``q=``); a table given at start counts at most ``carry`` visits per state, so a new
web's own fetches soon outweigh it (``carry_state``: the per-state rows count less, 0 as shipped: a state's
correction is in the units of the webs it was learned on, the pooled calibration's shape transfers).

Session 5 (docs/replay.md "Session 5"): the calibration's two slopes may be shrunk towards greedy-anchor's
common slope (``fit_prior`` pseudo-samples), and the URL directory D of a page may add its learned correction
d(D) (``dir_weight`` x the shrunk mean residual of the directory's fetched pages; rows ``dr|`` + directory,
web-specific): Q_i(1) = a + wp p_i + wa a_i + c(x) + d(D_i). d(D) enters the keys as of the last re-fit (it
is part of each page's within-state key), so the queue keeps one re-key per fetch.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import random
from dataclasses import replace
from typing import Any

from oasis.robot.scheduling.config import LINK_GRID
from oasis.robot.scheduling.documents import FLIGHT, FRINGE, RETRIEVED
from oasis.robot.scheduling.equations import (
    Calibration,
    calibration,
    line_sse,
    prequential_choice,
    residual_index,
    running_mean,
    shrunk_mean,
    state_correction,
)
from oasis.robot.scheduling.frontier import Frontier, HostReady
from oasis.robot.scheduling.interface import FetchOutcome
from oasis.robot.scheduling.linkreplay import KnownWeb, replay_weights
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import SEED_STATE, DiscoveryContext, GeneralisingState, make_state_extractor

SEED_KEY = float("inf")  # seeds first, as in every best-first baseline
TIE_WEIGHT = 1e-7  # the shared tie-break weight (controller.TIE_WEIGHT; a test checks they agree)
GRID = 1.5 * 2.0**12  # adding and subtracting it rounds a float to the grid 2^-40 (for |x| < 2^11)


def on_grid(x: float) -> float:
    """``x`` rounded to the grid 2^-40 (~1e-12). Keys are sums of two such values below 2^12 in magnitude, so
    every sum is exact: c(x) + (estimate + tie-break) is one float in any order of addition, and the order of
    a state's documents is the same for every c(x) (what :class:`ResidualFringe` relies on)."""
    return (x + GRID) - GRID


FIT = ("fit:1", "fit:2", "fit:3")  # the pooled sums: [n, Sp, Sa], [Sy, Spp, Saa], [Spa, Spy, Say]
ANCHOR_ROW = "ar|"  # + state: [mean anchor relevance of its samples, 0, n] beside the state's own row
DIR_ROW = "dr|"  # + URL directory: [mean residual of its fetched pages, 0, n] (web-specific: never shipped)
# + URL, leave-self-out (``dir_self`` False): [sum of the page's own residuals in its directory's row, 0, n]
OWN_ROW = "ds|"
# prequential selection (session 6): the squared errors of the 8 candidates (mask = TILT | STATE | DIR),
# predicted before each fetch, summed on this web: [L0, L1, L2], [L3, L4, L5], [L6, L7, n] (never shipped)
PREQ = ("pq:1", "pq:2", "pq:3")
TILT, STATE, DIR = 1, 2, 4  # the components: the calibration's two slopes (else one on b), c(x), d(D)
# the in-link weight chosen by replaying the web fetched (``link_replay``): [weight, pages replayed, 0]
LINK_ROW = "lw|replay"
# row-name prefixes that are web-specific (a trained table drops them)
WEB_ROWS = (DIR_ROW, OWN_ROW, "pq:", "lw|")


def url_directory(url: str) -> str:
    """The URL up to its last ``/`` (scheme and host included): the directory d(D) is learned for."""
    return url[: url.rfind("/") + 1]


def cap_visits(table: QTable, carry: float, carry_state: float | None = None) -> QTable:
    """A copy of ``table`` that counts at most ``carry_state`` (default ``carry``) samples per state (the
    means are kept) and at most ``carry`` in the pooled fit (its sums scaled down): a shipped table is a prior
    of that weight on a new web, which the web's own fetches soon outweigh."""
    out = table.copy()
    rows = out.rows()
    cap = carry if carry_state is None else carry_state
    for state, row in list(rows.items()):
        if state not in FIT:
            out.put(state, (row[0], row[1], min(row[2], cap)))
    fit = rows.get(FIT[0])
    if fit is not None and fit[0] > carry > 0:
        scale = carry / fit[0]
        for name in FIT:
            if name in rows:
                r = rows[name]
                out.put(name, (r[0] * scale, r[1] * scale, r[2] * scale))
    return out


SHIPPED_TABLE = "shipped_q.json"  # package data beside this module: the table trained on the training split


def shipped_table(carry: float, carry_state: float | None = None) -> QTable:
    """The shipped table (package data), capped at ``carry`` samples per state (:func:`cap_visits`); an empty
    table if the package has none."""
    from importlib.resources import files

    resource = files("oasis.robot.scheduling").joinpath(SHIPPED_TABLE)
    if not resource.is_file():
        return QTable(0.0)
    return cap_visits(QTable.from_dict(json.loads(resource.read_text(encoding="utf-8"))), carry, carry_state)


def start_table(config: Any) -> QTable:
    """The table a controller with ``config`` starts from when it is given none: the shipped one (capped at
    ``config.carry``) for the residual index with ``start="shipped"``, else an empty table."""
    if config.residual and config.start == "shipped":
        return shipped_table(config.carry, config.carry_state)
    return QTable(config.q_init)


class LinkWeight:
    """The in-link weight k learned on the web being crawled (session 11, docs/replay.md "Session 11").

    Each fetched fringe page that had two or more in-links at its fetch gives a sample (B, M, r): B its best
    link's parent + anchor relevance (greedy-anchor's key), M their mean over its links, r the fetch's reward.
    For every k of LINK_GRID the sums of x_k = (1 - k) B + k M are kept; after ``link_min`` samples, and then
    every ``link_check`` more, the weight whose line ``r ~ alpha + beta x_k`` (:func:`line_sse`) leaves the
    smallest squared error replaces the weight in use when its error is below ``1 - link_learn`` times the
    current weight's (a relative margin: the training choice, ``link_mean``, holds unless the web's own
    fetches say otherwise), and then holds for the rest of the crawl: one decision, made early, when most of
    a traversal's P is still to be earned (the later samples are the pages the crawl left for last, not a
    sample of the web; a weight re-chosen on them moved back and forth on the training runs). With
    ``explore_every`` pages are sampled where the index would not go too (off as shipped since session 19:
    the samples are then the index's own fetches)."""

    def __init__(self, config: Any) -> None:
        self.margin = float(config.link_learn)
        self.first, self.every = config.link_min, config.link_check
        self.n = self.sy = self.syy = 0.0
        self.sums = [[0.0, 0.0, 0.0] for _ in LINK_GRID]  # per weight: [Sx, Sxx, Sxy]
        self._next = float(self.first)

    def add(self, best: float, mean: float, r: float, current: float) -> float | None:
        """Add a sample; returns the new weight when the choice moves from ``current`` (else None)."""
        self.n += 1.0
        self.sy += r
        self.syy += r * r
        for k, sums in zip(LINK_GRID, self.sums, strict=True):
            x = (1.0 - k) * best + k * mean
            sums[0] += x
            sums[1] += x * x
            sums[2] += x * r
        if self.n < self._next:
            return None
        self._next = self.n + self.every
        errors = self.errors()
        chosen = min(errors, key=lambda k: (errors[k], k))
        now = errors.get(current)
        if chosen == current or now is None or not errors[chosen] < (1.0 - self.margin) * now:
            return None
        self._next = math.inf  # decided: the web's choice holds for the rest of the crawl
        return chosen

    def errors(self) -> dict[float, float]:
        """Each weight's squared error (:func:`line_sse`) over the samples so far."""
        return {
            k: line_sse(self.n, sx, self.sy, sxx, sxy, self.syy)
            for k, (sx, sxx, sxy) in zip(LINK_GRID, self.sums, strict=True)
        }

    def state(self) -> list[float]:
        """The sums and the next check (-1: decided) as a list of finite floats (a checkpoint's)."""
        nxt = -1.0 if math.isinf(self._next) else self._next
        return [self.n, self.sy, self.syy, nxt, *(v for sums in self.sums for v in sums)]

    def restore(self, values: list[float]) -> None:
        self.n, self.sy, self.syy, nxt = values[:4]
        self._next = math.inf if nxt < 0.0 else nxt
        rest = values[4:]
        self.sums = [list(rest[3 * i : 3 * i + 3]) for i in range(len(LINK_GRID))]


class ResidualIndex:
    """The per-document residual index and its learning: states, each document's best link (b_i and its
    anchor part), the table of per-state means and the pooled linear calibration
    ``y ~ a + wp pr + wa ar``."""

    def __init__(self, config: Any, table: Any, q: QTable | None) -> None:
        self.config = config
        self._table = table
        if q is None:
            q = shipped_table(config.carry, config.carry_state) if config.start == "shipped" else QTable(0.0)
        self.q = (
            q  # learned in place (a replay carries it from traversal to traversal); learn=False: read only
        )
        self.extract = make_state_extractor(
            config.state,
            relevance_bins=config.relevance_bins,
            anchor_bins=config.anchor_bins,
            max_depth=config.max_depth,
        )
        gen = self.extract
        self._key = gen.keyer() if isinstance(gen, GeneralisingState) and not gen.use_host else None
        self.states: list[str | None] = table.list_column()
        self.base = table.column("d")  # b_i: the best parent + anchor relevance among the links to i
        self.anchor = table.column("d")  # the anchor part of that link (pr_i = b_i - ar_i)
        # the in-link evidence (link_mean > 0): per document the best link's parent and anchor relevance and
        # the sums and count over every link seen; b_i and its anchor part are then the mixed estimate
        self.link_mean = config.link_mean
        learned = config.link_learn is not None or config.link_replay is not None
        self.links_kept = bool(config.link_mean) or learned
        if self.links_kept:
            self.best_p, self.best_a = table.column("d"), table.column("d")
            self.sum_p, self.sum_a, self.links = table.column("d"), table.column("d"), table.column("d")
        # session 11: the in-link weight learned on this web (``link_learn``): per weight k of LINK_GRID the
        # sums of x_k = (1 - k) B + k M (B the best link's p + a, M the links' mean) over the fetched pages
        # that had two or more in-links, beside the shared sums of their rewards (LinkWeight)
        self.link_weight = LinkWeight(config) if config.link_learn is not None else None
        # session 22: the weight a replay of this web chose when an earlier crawl of it ended (link_replay)
        # is where this crawl starts, held; this crawl's own record of the web chooses the next one's
        self.known = KnownWeb() if config.link_replay is not None else None
        replayed = self.q.rows().get(LINK_ROW) if self.known is not None else None
        if replayed is not None and replayed[0] in LINK_GRID:  # (a row not of the grid: a table damaged)
            self.link_mean, self.link_weight = replayed[0], None
        # exploration (``explore_every``): greedy-anchor's page instead of the index's at every n-th pop where
        # they differ, so that the pages the in-link mean demotes are sampled too (only while learning)
        self.explore_every = config.explore_every if config.learn else 0
        self.disagreements = 0
        self.fit = Calibration(0.0, 1.0, 1.0)
        self._next_fit = 0.0
        # the directory term: d(D) of a document's URL directory, as of the last re-fit (``published``), is
        # part of its within-state key (the state's c(x) stays the group's, re-keyed after every fetch)
        self.dirs = config.dir_weight > 0.0
        # per document: DIR_ROW + its URL directory, the name of the directory's table row (one shared string)
        self.directory: list[str | None] = table.list_column()
        self._interned: dict[str, str] = {}  # URL directory -> its row name
        self._anchor_rows: dict[str, str] = {}  # state -> ANCHOR_ROW + state (built once)
        self.published: dict[str, float] = {}  # directory row name -> on-grid d(D) as of the last re-fit
        # leave-self-out (``dir_self`` False): per directory row its (sum of residuals, n) as of the last
        # re-fit, and per document its own (sum, n) in that row when it was queued (0, 0: never fetched)
        self.self_out = self.dirs and not config.dir_self
        self.published_sums: dict[str, tuple[float, float]] = {}
        if self.self_out:
            self.own_sum, self.own_n = table.column("d"), table.column("d")
        # prequential selection: the components in use (chosen at each re-fit), the training choice, and the
        # two calibrations the candidates predict with (two slopes; one common slope on b)
        self.select = config.select_tau is not None
        self.default_mask = (config.select_default if self.select else 7) & (7 if self.dirs else TILT | STATE)
        self.mask = self.default_mask
        self.fit_two = self.fit_common = self.fit
        # the prequential duel against greedy-anchor (and exploration): greedy-anchor's queue (lazy heap of
        # (-ga_key, push number, doc), ga_key the best link's p + a), the page it preferred at each pop where
        # the index chose another, and the running sums of the duel
        self.duel = config.duel_z is not None
        self.shadowing = self.duel or self.explore_every > 0  # greedy-anchor's queue is kept beside the index
        self._shadow: list[tuple[float, int, int]] = []
        self._shadow_seq = 0
        self._preferred: dict[int, int] = {}  # fetched (in flight) doc -> greedy-anchor's choice at its pop
        self.duel_sum = self.duel_sq = 0.0
        self.duel_n = 0
        self.fallen = False  # the duel was lost: greedy-anchor's order for the rest of this controller's life
        self._fitted = False  # a calibration fitted on samples exists (greedy-anchor's estimate calibrated)
        self.refit()

    def first_link(self, doc: int, pr: float, ar: float) -> None:
        """Start the in-link evidence of a new fringe document with its first link."""
        self.best_p[doc], self.best_a[doc] = pr, ar
        self.sum_p[doc], self.sum_a[doc], self.links[doc] = pr, ar, 1.0

    def more_link(self, doc: int, pr: float, ar: float) -> tuple[float, float]:
        """Add a link (parent relevance ``pr``, anchor relevance ``ar``) to a fringe document's evidence;
        returns its mixed parent and anchor parts ``(1 - k) best + k mean`` (k = ``link_mean``)."""
        if pr + ar > self.best_p[doc] + self.best_a[doc]:
            self.best_p[doc], self.best_a[doc] = pr, ar
        n = self.links[doc] + 1.0
        self.links[doc] = n
        self.sum_p[doc] += pr
        self.sum_a[doc] += ar
        return self.mixed(doc)

    def mixed(self, doc: int) -> tuple[float, float]:
        """The document's mixed parent and anchor parts ``(1 - k) best + k mean`` (k = ``link_mean``)."""
        k, n = self.link_mean, self.links[doc]
        return (1.0 - k) * self.best_p[doc] + k * self.sum_p[doc] / n, (1.0 - k) * self.best_a[doc] + k * (
            self.sum_a[doc] / n
        )

    def ga_key(self, doc: int) -> float:
        """Greedy-anchor's key of a fringe document: its best link's parent + anchor relevance."""
        if self.links_kept:
            return self.best_p[doc] + self.best_a[doc]
        return self.base[doc]

    def link_sample(self, doc: int, g: float) -> float | None:
        """A fetch of fringe document ``doc`` (reward ``g``) for the learned in-link weight: counted if it had
        two or more in-links; returns the new weight when the choice moves (the caller re-keys the fringe)."""
        lw = self.link_weight
        if lw is None or not self.config.learn or self.states[doc] in (None, SEED_STATE):
            return None
        n = self.links[doc]
        if n < 2.0:
            return None
        best = self.best_p[doc] + self.best_a[doc]
        mean = (self.sum_p[doc] + self.sum_a[doc]) / n
        k = lw.add(best, mean, g, self.link_mean)
        if k is not None:
            self.link_mean = k
        return k

    def use(self, q: QTable) -> None:
        self.q = q
        self.refit()

    def refit(self) -> None:
        """The pooled calibration (least squares of the samples y on pr_i and ar_i, slopes floored at
        ``w_min``); called when the pooled count doubles (the caller re-keys every state)."""
        rows = self.q.rows()
        cfg = self.config
        fit = [rows.get(name) for name in FIT]
        if fit[0] is None or fit[1] is None or fit[2] is None or fit[0][0] <= 0.0:
            self.fit, self._next_fit = Calibration(0.0, 1.0, 1.0), 8.0
            self.fit_two = self.fit_common = self.fit
        else:
            if cfg.calibrate:  # (else greedy-anchor's estimate b_i stays; a re-fit only re-keys)
                nonneg = cfg.nonnegative
                self.fit = calibration(
                    *fit[0], *fit[1], *fit[2], w_min=cfg.w_min, prior=cfg.fit_prior, nonnegative=nonneg
                )
                if self.select or self.duel:
                    self.fit_two = self.fit
                    self.fit_common = calibration(*fit[0], *fit[1], *fit[2], w_min=cfg.w_min, common=True)
                    self._fitted = True
            self._next_fit = max(8.0, 2.0 * fit[0][0])
        if self.select:
            self.mask = self.choose()
        if self.fallen:
            self.mask = 0
        if self.select or self.duel:
            self.fit = self.fit_two if self.mask & TILT else self.fit_common
        self.published = {}
        if not (self.dirs and self.mask & DIR):
            return
        dir_rows = {name: row for name, row in rows.items() if name.startswith(DIR_ROW)}
        if self.dir_fetches(dir_rows) >= cfg.dir_min:  # every directory's d(D) as of this re-fit (no row: 0)
            d = self.dir_correction
            self.published = {name: on_grid(d(name)) for name in dir_rows}
            if self.self_out:
                self.published_sums = {name: (row[0] * row[2], row[2]) for name, row in dir_rows.items()}

    @staticmethod
    def dir_fetches(dir_rows: dict[str, tuple[float, float, float]]) -> float:
        """The fetches a web's directory rows hold in all (every traversal of it so far)."""
        return math.fsum(row[2] for row in dir_rows.values())

    def losses(self) -> tuple[dict[int, float], float]:
        """The candidates' summed squared prequential errors on this web (mask -> loss; DIR masks only with
        the directory term) and the number of fetches they cover."""
        rows = self.q.rows()
        flat: list[float] = []
        for name in PREQ:
            flat.extend(rows.get(name, (0.0, 0.0, 0.0)))
        n = flat.pop()
        masks = range(8) if self.dirs else range(4)
        return {m: flat[m] for m in masks}, n

    def choose(self) -> int:
        """The components the index uses: :func:`prequential_choice` over the candidates, from the training
        choice (all on) with a head start of ``select_tau``."""
        losses, n = self.losses()
        tau = self.config.select_tau
        return prequential_choice(losses, n, self.default_mask, float("inf") if tau is None else tau)

    def dir_correction(self, name: str) -> float:
        """d(D) = dir_weight x the directory's mean residual shrunk with ``dir_shrink`` pseudo-samples
        (``name`` = DIR_ROW + the URL directory)."""
        row = self.q.rows().get(name)
        if row is None:
            return 0.0
        return self.dir_floored(self.config.dir_weight * shrunk_mean(row[0], row[2], self.config.dir_shrink))

    def dir_floored(self, d: float) -> float:
        """``d`` at or above ``dir_floor`` (no floor: ``d``)."""
        floor = self.config.dir_floor
        return d if floor is None or d >= floor else floor

    def published_dir(self, doc: int) -> float:
        """On-grid d(D) of the document's URL directory as of the last re-fit (0 without the term); leave-
        self-out, over the other pages' fetches only (:meth:`others_dir`)."""
        if self.self_out and self.own_n[doc]:
            return self.others_dir(doc)
        return self.published.get(self.directory[doc], 0.0)  # type: ignore[arg-type]

    def others_dir(self, doc: int) -> float:
        """Leave-self-out d(D) of a document that was fetched before: ``dir_weight`` x (S - s_i) / (n - n_i +
        ``dir_shrink``), S and n its directory's residual sum and count as of the last re-fit, s_i and n_i its
        own part of them (on the grid; 0 when no other page of the directory was fetched, or without the
        term in use)."""
        sums = self.published_sums.get(self.directory[doc])  # type: ignore[arg-type]
        if sums is None or not self.mask & DIR:
            return 0.0
        return on_grid(self.dir_others(sums[0], sums[1], self.own_sum[doc], self.own_n[doc]))

    def dir_others(self, total: float, n: float, own: float, own_n: float) -> float:
        """d(D) from a directory row's residual sum ``total`` over ``n`` fetches without a page's own part
        (``own`` over ``own_n``): the shrunk mean of the rest, weighted and floored as
        :meth:`dir_correction`."""
        cfg = self.config
        rest = n - own_n
        d = cfg.dir_weight * shrunk_mean((total - own) / rest, rest, cfg.dir_shrink) if rest > 0.0 else 0.0
        return self.dir_floored(d)

    def own_part(self, doc: int, url: str) -> None:
        """Leave-self-out: the document's own (sum, n) in its directory's row, from the table (0, 0 if it was
        never fetched)."""
        row = self.q.rows().get(OWN_ROW + url)
        self.own_sum[doc], self.own_n[doc] = (row[0], row[2]) if row is not None else (0.0, 0.0)

    def group(self, doc: int) -> str:
        """The fringe group of a document: its state."""
        state = self.states[doc]
        assert state is not None
        return state

    def correction(self, state: str) -> float:
        """c(x): the shrunk mean residual of the state over the pooled calibration (0 if never fetched)."""
        rows = self.q.rows()
        row = rows.get(state)
        if row is None:
            return 0.0
        arow = rows.get(ANCHOR_ROW + state)
        mean_ar = 0.0 if arow is None else arow[0]
        c = state_correction(row[0], mean_ar, row[1], row[2], self.fit, self.config.shrink)
        floor = self.config.state_floor
        return c if floor is None or c >= floor else floor

    def state_of(self, doc: int, url: str, parent_url: str | None, pr: float, ar: float, depth: int) -> str:
        if parent_url is None:
            return SEED_STATE
        if self._key is not None:
            state = self._key(pr, ar, depth)
        else:
            host = self._table.hosts[self._table.host_id[doc]]
            state = self.extract(DiscoveryContext(url, parent_url, pr, ar, depth, host))
        if self.dirs:  # set_directory, inlined
            directory = url[: url.rfind("/") + 1]
            name = self._interned.get(directory)
            if name is None:
                name = self._interned[directory] = DIR_ROW + directory
            self.directory[doc] = name
            if self.self_out:
                self.own_part(doc, url)
        return state

    def set_directory(self, doc: int, url: str) -> None:
        directory = url_directory(url)
        name = self._interned.get(directory)
        if name is None:
            name = self._interned[directory] = DIR_ROW + directory
        self.directory[doc] = name
        if self.self_out:
            self.own_part(doc, url)

    def state_key(self, state: str) -> float:
        """The on-grid c(x) a state adds to its documents' keys (0 for the seeds, and when prequential
        selection has switched c(x) off)."""
        if state == SEED_STATE or not self.mask & STATE:
            return 0.0
        return on_grid(self.correction(state))

    def inner(self, doc: int) -> float:
        """The within-state part of the key: ``on_grid(a + wp pr_i + wa ar_i + TIE_WEIGHT b_i)``."""
        state = self.states[doc]
        if state == SEED_STATE:
            return SEED_KEY
        b = self.base[doc]
        ar = self.anchor[doc]
        if self.dirs:  # + d(D) as of the last re-fit (published_dir, inlined)
            if self.self_out and self.own_n[doc]:
                d = self.others_dir(doc)
            else:
                d = self.published.get(self.directory[doc], 0.0)  # type: ignore[arg-type]
            return on_grid(self.fit.estimate(b - ar, ar) + TIE_WEIGHT * b + d)
        return on_grid(self.fit.estimate(b - ar, ar) + TIE_WEIGHT * b)

    def key(self, doc: int) -> float:
        """The queue key of a fringe document: Q_i(1) = a + wp pr_i + wa ar_i + c(x) plus the tie-break,
        on the grid of :func:`on_grid` (``state_key + inner``, an exact sum)."""
        return self.state_key(self.group(doc)) + self.inner(doc)

    def value(self, doc: int) -> float:
        """max_u Q_i(u) = Q_i(1) of a fringe document (Eq. 10 child term); a seed is worth 1."""
        state = self.states[doc]
        if state == SEED_STATE or state is None:
            return 1.0
        ar = self.anchor[doc]
        if not self.mask & STATE:
            return residual_index(self.fit.estimate(self.base[doc] - ar, ar), self.published_dir(doc))
        if self.dirs:
            corr = self.correction(state) + self.published_dir(doc)
            return residual_index(self.fit.estimate(self.base[doc] - ar, ar), corr)
        return residual_index(self.fit.estimate(self.base[doc] - ar, ar), self.correction(state))

    def learn(self, doc: int, g: float, children: list[int], q_next: float) -> bool:
        """Eq. 10's sample after a fetch of fringe document ``doc``, added to its state's means and the pooled
        fit. Returns True when the calibration was re-fitted (the caller re-keys every state)."""
        cfg = self.config
        state = self.states[doc]
        if not cfg.learn or state is None or state == SEED_STATE:
            return False
        bonus = 0.0
        if cfg.child_weight:
            for c in children:
                bonus += self.value(c)
        y = g + cfg.gamma * (q_next + cfg.child_weight * bonus)  # Eq. 10's target with Eq. 11's g
        ar = self.anchor[doc]
        pr = self.base[doc] - ar
        q = self.q
        rows = q.rows()
        zero = (0.0, 0.0, 0.0)
        row = rows.get(state, zero)
        astate = self._anchor_rows.get(state)
        if astate is None:
            astate = self._anchor_rows[state] = ANCHOR_ROW + state
        arow = rows.get(astate, zero)
        if self.select:
            self._score(y, pr, ar, row, arow, rows, doc)
        lost = self.duel and self.duel_lost(doc, y)
        if self.dirs:  # the directory's residual over the rest of the estimate (c(x) before this sample)
            fit = self.fit
            corr = state_correction(row[0], arow[0], row[1], row[2], fit, cfg.shrink)  # correction(state)
            if cfg.state_floor is not None and corr < cfg.state_floor:
                corr = cfg.state_floor
            e = y - (fit.a + fit.wp * pr + fit.wa * ar) - corr  # fit.estimate(pr, ar)
            name = self.directory[doc]
            drow = rows.get(name, zero)  # type: ignore[arg-type]
            nd = drow[2] + 1.0
            q.put(name, (drow[0] + (e - drow[0]) / nd, 0.0, nd))  # type: ignore[arg-type]  # running_mean
            if self.self_out:  # the page's own part of that row (its queued own_sum/own_n stay as they were)
                own = OWN_ROW + self._table.urls[doc]
                orow = rows.get(own, zero)
                q.put(own, (orow[0] + e, 0.0, orow[2] + 1.0))
        n = row[2] + 1.0
        # Q(x, 1) of the state: Eq. 10 with the step size 1 / n; beside it the state's mean parent relevance
        q.put(state, (running_mean(row[0], pr, n), running_mean(row[1], y, n), n))
        q.put(astate, (running_mean(arow[0], ar, n), arow[1], n))
        f1, f2, f3 = rows.get(FIT[0], zero), rows.get(FIT[1], zero), rows.get(FIT[2], zero)
        f1 = (f1[0] + 1.0, f1[1] + pr, f1[2] + ar)
        q.put(FIT[0], f1)
        q.put(FIT[1], (f2[0] + y, f2[1] + pr * pr, f2[2] + ar * ar))
        q.put(FIT[2], (f3[0] + pr * ar, f3[1] + pr * y, f3[2] + ar * y))
        if f1[0] >= self._next_fit:
            self.refit()
            return True
        return lost

    def _score(
        self,
        y: float,
        pr: float,
        ar: float,
        row: tuple[float, float, float],
        arow: tuple[float, float, float],
        rows: dict[str, tuple[float, float, float]],
        doc: int,
    ) -> None:
        """Add each candidate's squared error on the sample ``y`` of fetched document ``doc``, predicted from
        what was known before the fetch (the two calibrations, the state's c(x) over each, the directory's
        live shrunk d(D)), to the prequential sums ``PREQ``."""
        cfg = self.config
        two, common = self.fit_two, self.fit_common
        e2 = two.a + two.wp * pr + two.wa * ar
        ec = common.a + common.wp * pr + common.wa * ar
        c2 = state_correction(row[0], arow[0], row[1], row[2], two, cfg.shrink)
        cc = state_correction(row[0], arow[0], row[1], row[2], common, cfg.shrink)
        floor = cfg.state_floor
        if floor is not None:
            c2, cc = max(c2, floor), max(cc, floor)
        d = 0.0
        if self.dirs:
            drow = rows.get(self.directory[doc])  # type: ignore[arg-type]
            if drow is not None and self.self_out:
                orow = rows.get(OWN_ROW + self._table.urls[doc], (0.0, 0.0, 0.0))
                d = self.dir_others(drow[0] * drow[2], drow[2], orow[0], orow[2])
            elif drow is not None:
                d = self.dir_floored(cfg.dir_weight * shrunk_mean(drow[0], drow[2], cfg.dir_shrink))
        r0, r1, r2, r3 = y - ec, y - e2, y - ec - cc, y - e2 - c2  # masks 0, TILT, STATE, TILT | STATE
        zero = (0.0, 0.0, 0.0)
        p1, p2, p3 = rows.get(PREQ[0], zero), rows.get(PREQ[1], zero), rows.get(PREQ[2], zero)
        q = self.q
        q.put(PREQ[0], (p1[0] + r0 * r0, p1[1] + r1 * r1, p1[2] + r2 * r2))
        if self.dirs:  # masks 4..7: the same minus d(D)
            s0, s1, s2, s3 = r0 - d, r1 - d, r2 - d, r3 - d
            q.put(PREQ[1], (p2[0] + r3 * r3, p2[1] + s0 * s0, p2[2] + s1 * s1))
            q.put(PREQ[2], (p3[0] + s2 * s2, p3[1] + s3 * s3, p3[2] + 1.0))
        else:
            q.put(PREQ[1], (p2[0] + r3 * r3, 0.0, 0.0))
            q.put(PREQ[2], (0.0, 0.0, p3[2] + 1.0))

    # -- the prequential duel against greedy-anchor ------------------------------------------------------

    def shadow_push(self, doc: int) -> None:
        """Queue ``doc`` (a fringe page, not a seed) in greedy-anchor's order as well."""
        self._shadow_seq = seq = self._shadow_seq + 1
        heapq.heappush(self._shadow, (-self.ga_key(doc), seq, doc))

    def shadow_top(self) -> int | None:
        """Greedy-anchor's choice now: the fringe page of largest b_i (FIFO among ties)."""
        heap, status, key = self._shadow, self._table.status, self.ga_key
        while heap:
            neg, _seq, doc = heap[0]
            if status[doc] == FRINGE and -neg == key(doc):
                return doc
            heapq.heappop(heap)
        return None

    def popped(self, doc: int) -> None:
        """The index chose ``doc``: note greedy-anchor's choice if that is another page ranked higher."""
        if self.fallen or not self._fitted or self.states[doc] == SEED_STATE:
            return
        j = self.shadow_top()
        if j is not None and j != doc and self.ga_key(j) > self.ga_key(doc):
            self._preferred[doc] = j

    def duel_lost(self, doc: int, y: float) -> bool:
        """Score the fetch of ``doc`` (sample ``y``) if greedy-anchor preferred another page j at its pop: the
        duel adds ``y - (a + w b_j)`` (greedy-anchor's calibrated estimate of j, one slope on b, fitted on
        this web's fetches so far). True when the sum falls below ``-duel_z`` times its root sum of squares
        (after ``duel_min`` scored fetches): then the index falls back to greedy-anchor's order."""
        j = self._preferred.pop(doc, None)
        if j is None or self.fallen:
            return False
        fit = self.fit_common
        diff = y - (fit.a + fit.wp * (self.base[j] - self.anchor[j]) + fit.wa * self.anchor[j])
        self.duel_sum += diff
        self.duel_sq += diff * diff
        self.duel_n += 1
        z = self.config.duel_z
        if self.duel_n >= self.config.duel_min and self.duel_sum < -z * math.sqrt(self.duel_sq):
            self.fallen = True
            self.mask = 0
            self.fit = self.fit_common
            self.published = {}
            return True
        return False

    def save(self, path: str | os.PathLike[str]) -> None:
        self.q.save(path)


class _StateQueue(Frontier):
    """The host-aware queue of one state's fringe documents, keyed by ``on_grid(estimate + tie-break)``,
    whose FIFO tie-break is the fringe's own push number (given, not drawn), so ties compare across states."""

    __slots__ = ()

    def put(self, item: int, priority: float, host: int, seq: int) -> None:
        """Insert ``item`` (not queued) with push number ``seq``."""
        self._live[item] = (priority, seq)
        self._host_of[item] = host
        heap = self._host_heaps.get(host)
        if heap is None:
            heap = self._host_heaps[host] = []
        entry = (-priority, seq, item)
        heapq.heappush(heap, entry)
        if heap[0] is entry:
            self._announce(host, -priority, seq)
        self._maybe_compact()

    def top(self) -> tuple[float, int, int] | None:
        """``(-priority, seq, item)`` of the best item regardless of host readiness."""
        best = self.peek()
        if best is None:
            return None
        item = best[0]
        return -best[1], self._live[item][1], item

    def best_ready(self, host_ready: HostReady) -> tuple[float, int, int] | None:
        """``(-priority, seq, item)`` of the best item whose host is ready, without removing it (the hosts
        are looked at in :meth:`Frontier.pop`'s order)."""
        held: list[tuple[float, int, int]] = []
        try:
            found = self._walk_ready(host_ready, held)
            if found is None:
                return None
            held.append(found[0])  # looked at, not removed: its announcement goes back too
            return found[1]
        finally:
            for entry in held:
                heapq.heappush(self._hosts, entry)


class ResidualFringe:
    """The fringe of the residual index, ordered by (key_i = c(x) + inner_i, then FIFO by push number).

    Within a state the order of its documents, inner_i = ``on_grid(estimate(pr_i, ar_i) + TIE_WEIGHT b_i)``
    then FIFO, does not depend on c(x) (exact: :func:`on_grid`). So each state keeps one host-aware
    :class:`_StateQueue`, and a heap over states holds ``c(x) + inner`` of each state's best document: a new
    c(x) re-keys one heap entry (O(log S)) instead of every document of the state; a pop takes the best
    state's best document and re-announces the state. With ``host_ready`` (politeness) it is branch and
    bound: states in the order of their best document over all hosts (an upper bound), each one's best
    ready document, until the next bound cannot beat the best found -- the document the one global
    :class:`Frontier` over every key would pop. A re-fit (the pooled calibration moves when the sample count
    doubles) changes every inner_i: the per-state queues are rebuilt, O(n) per doubling. Stale state-heap
    entries are compacted when they outnumber the live ones; the per-state queues compact themselves."""

    def __init__(self, index: ResidualIndex, table: Any) -> None:
        self.index = index
        self._table = table
        self.queues: dict[str, _StateQueue] = {}
        self.corr: dict[str, float] = {}  # on-grid c(x) of each state with queued documents
        self._states: list[tuple[float, int, str]] = []  # (-(c(x) + best inner), its push number, state)
        self._entry: dict[str, tuple[float, int]] = {}  # state -> its valid entry in _states
        self._seq = 0
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _announce(self, state: str) -> None:
        queue = self.queues[state]
        top = queue.top()
        if top is None:
            del self.queues[state]
            del self.corr[state]
            self._entry.pop(state, None)
            return
        entry = (-(self.corr[state] - top[0]), top[1])
        if self._entry.get(state) == entry:
            return
        self._entry[state] = entry
        heapq.heappush(self._states, (entry[0], entry[1], state))
        self._bound()

    def _bound(self) -> None:
        """Drop the stale state-heap entries once they outnumber the live ones (+64)."""
        if len(self._states) > 2 * len(self._entry) + 64:
            self._states = [(neg, seq, s) for s, (neg, seq) in self._entry.items()]
            heapq.heapify(self._states)

    def push(self, doc: int) -> None:
        idx = self.index
        state = idx.group(doc)
        inner, host = idx.inner(doc), self._table.host_id[doc]
        queue = self.queues.get(state)
        if queue is not None and doc in queue:
            if queue.priority(doc) == inner and queue.host(doc) == host:
                return
            self.remove(doc)
            queue = self.queues.get(state)
        if queue is None:
            queue = self.queues[state] = _StateQueue()
            self.corr[state] = idx.state_key(state)
        self._seq = seq = self._seq + 1
        queue.put(doc, inner, host, seq)
        self._n += 1
        neg, cur = -(self.corr[state] + inner), self._entry.get(state)
        if cur is None or neg < cur[0]:  # the state's new best (a later push loses every tie)
            self._entry[state] = (neg, seq)
            heapq.heappush(self._states, (neg, seq, state))
            self._bound()

    def remove(self, doc: int) -> None:
        state = self.index.group(doc) if self.index.states[doc] is not None else None
        queue = self.queues.get(state) if state is not None else None
        if queue is None or doc not in queue:
            return
        seq = queue._live[doc][1]
        queue.remove(doc)
        self._n -= 1
        cur = self._entry.get(state)  # type: ignore[arg-type]
        if cur is None or cur[1] == seq:  # it was the state's best
            self._announce(state)  # type: ignore[arg-type]

    def rekey(self, state: str) -> None:
        """c(x) of ``state`` (with the directory term: d(D) of the group ``state``) moved: one state-heap
        entry."""
        if state in self.queues:
            self.corr[state] = self.index.state_key(state)
            self._announce(state)

    def rebuild(self) -> None:
        """The calibration moved (a re-fit or a new table): every inner_i and c(x) anew, push numbers kept."""
        idx = self.index
        base, anchor, fit = idx.base, idx.anchor, idx.fit
        a, wp, wa = fit.a, fit.wp, fit.wa
        for state, old in self.queues.items():
            queue = _StateQueue()
            if state == SEED_STATE:
                queue._live = {doc: (SEED_KEY, seq) for doc, (_p, seq) in old._live.items()}
            elif idx.dirs:  # idx.inner(doc) with d(D), inlined as below
                pub, directory = idx.published, idx.directory
                queue._live = {
                    doc: (
                        (
                            a
                            + wp * (base[doc] - anchor[doc])
                            + wa * anchor[doc]
                            + TIE_WEIGHT * base[doc]
                            + pub.get(directory[doc], 0.0)  # type: ignore[arg-type]
                            + GRID
                        )
                        - GRID,
                        seq,
                    )
                    for doc, (_p, seq) in old._live.items()
                }
            else:  # idx.inner(doc), inlined (the same operations in the same order: the same floats)
                queue._live = {
                    doc: (
                        (
                            a
                            + wp * (base[doc] - anchor[doc])
                            + wa * anchor[doc]
                            + TIE_WEIGHT * base[doc]
                            + GRID
                        )
                        - GRID,
                        seq,
                    )
                    for doc, (_p, seq) in old._live.items()
                }
            queue._host_of = old._host_of
            queue.compact()
            self.queues[state] = queue
            self.corr[state] = idx.state_key(state)
        self._states, self._entry = [], {}
        for state in list(self.queues):
            self._announce(state)

    def _best(self) -> tuple[float, int, str] | None:
        states, entry = self._states, self._entry
        while states:
            neg, seq, state = states[0]
            if entry.get(state) == (neg, seq):
                return states[0]
            heapq.heappop(states)
        return None

    def peek(self) -> float | None:
        """The best key over every host (None if the fringe is empty)."""
        best = self._best()
        return None if best is None else -best[0]

    def pop(self, host_ready: HostReady | None) -> int | None:
        """Remove and return the best document whose host is ready (None if there is none)."""
        if host_ready is None:
            best = self._best()
            if best is None:
                return None
            state = best[2]
            doc = self.queues[state].pop()
            assert doc is not None
        else:
            found: tuple[float, int, str, int] | None = None
            states, entry, held = self._states, self._entry, []
            while states:
                neg, seq, state = states[0]
                if entry.get(state) != (neg, seq):
                    heapq.heappop(states)
                    continue
                if found is not None and (neg, seq) >= (found[0], found[1]):
                    break  # no document of this state (nor of any later one) beats the best ready one
                held.append(heapq.heappop(states))
                top = self.queues[state].best_ready(host_ready)
                if top is not None:
                    cand = (-(self.corr[state] - top[0]), top[1], state, top[2])
                    if found is None or cand < found:
                        found = cand
            for item in held:
                heapq.heappush(states, item)
            if found is None:
                return None
            state, doc = found[2], found[3]
            self.queues[state].remove(doc)
        self._n -= 1
        self._announce(state)
        return doc

    def ordered(self) -> list[int]:
        """Queued documents in the order ``pop`` returns them with every host ready (O(n log n))."""
        keyed = [
            (-(self.corr[state] + p), seq, doc)
            for state, queue in self.queues.items()
            for doc, (p, seq) in queue._live.items()
        ]
        return [doc for _neg, _seq, doc in sorted(keyed)]

    def fringe_order(self) -> list[int]:
        status = self._table.status
        return self.ordered() + [d for d, s in enumerate(status) if s == FLIGHT]

    def is_fringe(self, doc: int) -> bool:
        return self._table.status[doc] == FRINGE


def residual_controller_class() -> type:
    """The controller class (built on first use: ``controller`` imports this module lazily)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_class()
    return _CLASS


_CLASS: type | None = None


def _make_class() -> type:
    from oasis.robot.scheduling.controller import _Controller

    class ResidualWhittleController(_Controller):
        """The Whittle controller with the residual index (``ControllerConfig.index == "residual"``): every
        fringe document keyed by its estimate + c(x) (module docstring), in a :class:`ResidualFringe`."""

        name = "whittle"

        def __init__(self, *, q: QTable | None = None, **kw: Any) -> None:
            super().__init__(**kw)
            self.index = ResidualIndex(self.config, self.docs, q)
            self.fringe = ResidualFringe(self.index, self.docs)
            self._restore_anchor: dict[int, float] = {}  # doc -> anchor part, during load_state only
            self._restore_fit: list[float] | None = None  # (a, wp, wa, next re-fit), during load_state only
            self._restore_published: dict[str, float] = {}  # c(x) as of the last re-fit, during load_state
            self._restore_sums: dict[str, tuple[float, float]] = {}  # leave-self-out sums, during load_state
            self._restore_links: dict[int, list[float]] = {}  # in-link sums per queued page, in load_state
            self._restore_select: list[float] | None = None  # mask, the two calibrations: during load_state
            self._restore_duel: list[float] | None = None  # the duel's state, during load_state
            self._restore_link: list[float] | None = None  # in-link weight and exploration, during load_state

        @property
        def q(self) -> QTable:
            return self.index.q

        def _enqueue(
            self, doc: int, url: str, parent_url: str | None, parent_rel: float, anchor_rel: float, depth: int
        ) -> None:
            idx = self.index
            idx.states[doc] = idx.state_of(doc, url, parent_url, parent_rel, anchor_rel, depth)
            b = parent_rel + anchor_rel
            idx.base[doc] = b
            idx.anchor[doc] = anchor_rel
            if idx.links_kept:
                idx.first_link(doc, parent_rel, anchor_rel)
            self.docs.key[doc] = b  # checkpoints carry b_i in the key column
            self.fringe.push(doc)
            if idx.shadowing and parent_url is not None:
                idx.shadow_push(doc)

        def _requeue(self, doc: int) -> None:
            self.fringe.push(doc)
            idx = self.index
            if idx.shadowing and idx.states[doc] != SEED_STATE:
                idx.shadow_push(doc)

        def _remove_fringe(self, doc: int) -> None:
            self.fringe.remove(doc)

        def _pop_fringe(self, host_ready: HostReady | None) -> int | None:
            doc = self.fringe.pop(host_ready)
            idx = self.index
            if doc is not None and idx.explore_every and idx.states[doc] != SEED_STATE:
                doc = self._explore(doc, host_ready)
            if doc is not None and idx.duel:
                idx.popped(doc)
            return doc

        def _explore(self, doc: int, host_ready: HostReady | None) -> int:
            """Every ``explore_every``-th pop at which greedy-anchor's page (host ready) is not the index's,
            greedy-anchor's page instead (the index's goes back to the fringe)."""
            idx = self.index
            g = idx.shadow_top()
            if g is None or g == doc or (host_ready is not None and not host_ready(self.docs.host_id[g])):
                return doc
            idx.disagreements += 1
            if idx.disagreements % idx.explore_every:
                return doc
            self.fringe.push(doc)
            self.fringe.remove(g)
            return g

        def _relink(self) -> None:
            """The learned in-link weight moved: every fringe page with two or more in-links gets its mixed
            estimate (and its state) anew."""
            idx, docs = self.index, self.docs
            for doc, status in enumerate(docs.status):
                if status != FRINGE or idx.states[doc] in (None, SEED_STATE) or idx.links[doc] < 2.0:
                    continue
                p, a = idx.mixed(doc)
                # (a host-keyed state keeps the state of its last discovery)
                state = idx._key(p, a, docs.depth[doc]) if idx._key is not None else idx.states[doc]
                self._re_estimate(doc, p, a, state)  # type: ignore[arg-type]

        def _re_estimate(self, doc: int, p: float, a: float, state: str) -> None:
            """Re-queue fringe document ``doc`` with the estimate p + a (anchor part a) in ``state``."""
            idx = self.index
            self.fringe.remove(doc)
            idx.base[doc] = p + a
            idx.anchor[doc] = a
            self.docs.key[doc] = p + a
            idx.states[doc] = state
            self.fringe.push(doc)

        def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
            # a better link raises b_i (link_mean: every new link moves the mixed estimate, up or down); the
            # state is re-derived from the estimate
            idx, docs = self.index, self.docs
            if idx.states[doc] == SEED_STATE:
                return
            if idx.links_kept:  # the mixed estimate over every link: it may fall as well as rise
                if parent_rel > docs.parent_rel[doc]:
                    docs.set_parent_rel(doc, parent_rel)
                better = parent_rel + anchor_rel > idx.ga_key(doc)
                parent_rel, anchor_rel = idx.more_link(doc, parent_rel, anchor_rel)
                if better and idx.shadowing:  # greedy-anchor's key rose
                    idx.shadow_push(doc)
                b = parent_rel + anchor_rel
                if b == idx.base[doc]:
                    return
            else:
                b = parent_rel + anchor_rel
                if b <= idx.base[doc]:
                    return
                if parent_rel > docs.parent_rel[doc]:
                    docs.set_parent_rel(doc, parent_rel)
            state = idx.state_of(doc, docs.urls[doc], parent_url, parent_rel, anchor_rel, docs.depth[doc])
            self._re_estimate(doc, parent_rel, anchor_rel, state)
            if idx.shadowing and not idx.links_kept:
                idx.shadow_push(doc)

        def report(self, outcome: FetchOutcome, now: float) -> list[str]:
            added = super().report(outcome, now)
            if self.index.known is not None:
                self._know(outcome)
            return added

        def _know(self, outcome: FetchOutcome) -> None:
            """Record a fetched page in the known web (its first record holds: a live robot restarted without
            it learns the web again from its re-crawls); once the fringe is empty (the web fetched), replay it
            for the next crawl's in-link weight (``link_replay``, LINK_ROW)."""
            idx, docs = self.index, self.docs
            known = idx.known
            assert known is not None
            doc = docs.ids.get(outcome.url)
            if doc is None or docs.status[doc] != RETRIEVED or doc in known:
                return
            ids = docs.ids
            links = (
                (c, link.anchor_relevance) for link in outcome.links if (c := ids.get(link.url)) is not None
            )
            known.add(doc, outcome.relevance, links, seed=idx.states[doc] == SEED_STATE)
            if len(self.fringe) or not self.config.learn or not known.due(self.config.link_min):
                return
            cfg = self.config
            scores = replay_weights(self._frozen, known, docs.urls, ids, LINK_GRID)
            k = known.choose(scores, cfg.link_mean, cfg.link_replay or 0.0)
            idx.q.put(LINK_ROW, (k, float(len(known)), 0.0))

        def _frozen(self, k: float) -> Any:
            """This controller's robot at in-link weight ``k``, its table read only (no learning)."""
            from oasis.robot.scheduling.controller import make_controller

            cfg = replace(self.config, link_mean=k, link_learn=None, link_replay=None, learn=False)
            return make_controller("whittle", rng=random.Random(0), config=cfg, q=self.index.q)

        def _learn(self, doc: int, was_fringe: bool, g: float, children: list[int]) -> None:
            if not was_fringe:
                return
            if self.index.link_weight is not None and self.index.link_sample(doc, g) is not None:
                self._relink()
            state = self.index.states[doc]
            if self.index.learn(doc, g, children, 0.0):
                self.fringe.rebuild()
            elif state is not None:
                self.fringe.rekey(self.index.group(doc))

        def _fringe_value(self) -> float:
            """b_i + c(x) = Q_i(1) = v_i / (1 - gamma) of the best fringe document (relevance per fetch, the
            re-crawl index's unit), floored by recent first-retrieval rewards (as every policy)."""
            top = self.fringe.peek()
            return max(top if top is not None else 0.0, super()._fringe_value())

        def frontier_size(self) -> int:
            return len(self.fringe)

        def _fringe_order(self) -> list[int]:
            return self.fringe.fringe_order()

        def _doc_state(self, doc: int) -> str | None:
            return self.index.states[doc]

        def state_dict(self) -> dict[str, Any]:
            """The common checkpoint plus each fringe document's anchor part of b_i (the key column holds
            only b_i; without it a restored key would move from the calibrated estimate)."""
            out = super().state_dict()
            idx = self.index
            out["fit"] = [*idx.fit, idx._next_fit]  # the calibration in use (re-fitted only at doublings)
            if idx.dirs:  # and the corrections c(x) as of that re-fit
                out["published"] = dict(idx.published)
                if idx.self_out:  # and the directories' sums the leave-self-out d(D) subtracts from
                    out["published_sums"] = {k: list(v) for k, v in idx.published_sums.items()}
            if idx.select or idx.duel:  # the components in use and the candidates' two calibrations
                out["select"] = [idx.mask, *idx.fit_two, *idx.fit_common]
            if idx.duel:
                duel = [float(idx.fallen), idx.duel_sum, idx.duel_sq, float(idx.duel_n), float(idx._fitted)]
                out["duel"] = duel
            if idx.link_weight is not None or idx.explore_every:  # the learned in-link weight, exploration
                lw = idx.link_weight.state() if idx.link_weight is not None else []
                out["link"] = [idx.link_mean, float(idx.disagreements), *lw]
            anchor, status = idx.anchor, self.docs.status
            out["anchor"] = [
                [doc, anchor[doc]] for doc, st in enumerate(status) if st in (FRINGE, FLIGHT) and anchor[doc]
            ]
            if idx.links_kept:  # the in-link evidence of every queued page reached by more than one link
                out["links"] = [
                    [doc, idx.best_p[doc], idx.best_a[doc], idx.sum_p[doc], idx.sum_a[doc], idx.links[doc]]
                    for doc, st in enumerate(status)
                    if st in (FRINGE, FLIGHT) and idx.links[doc] > 1.0
                ]
            return out

        def load_state(self, state: dict[str, Any]) -> None:
            # a checkpoint written before "anchor" existed restores with anchor part 0 (pr_i = b_i)
            self._restore_anchor = {int(doc): float(a) for doc, a in state.get("anchor", [])}
            fit = state.get("fit")
            self._restore_fit = [float(v) for v in fit] if isinstance(fit, list) and len(fit) == 4 else None
            self._restore_published = {str(k): float(v) for k, v in state.get("published", {}).items()}
            sums = state.get("published_sums", {})
            if not isinstance(sums, dict) or not all(
                isinstance(v, list) and len(v) == 2 for v in sums.values()
            ):
                raise ValueError("a checkpoint's published_sums must map directory rows to [sum, n]")
            self._restore_sums = {str(k): (float(v[0]), float(v[1])) for k, v in sums.items()}
            links = state.get("links", [])
            if not isinstance(links, list) or not all(isinstance(v, list) and len(v) == 6 for v in links):
                raise ValueError("a checkpoint's links must list [doc, best p, best a, sum p, sum a, n]")
            self._restore_links = {int(v[0]): [float(x) for x in v[1:]] for v in links}
            # finite, and at least one link each (a page's mixed estimate divides by its link count)
            if not all(math.isfinite(sum(v)) and v[4] >= 1.0 for v in self._restore_links.values()):
                raise ValueError("a checkpoint's links must be finite, each page with one link or more")
            select = state.get("select")
            ok = isinstance(select, list) and len(select) == 7
            self._restore_select = [float(v) for v in select] if ok else None  # type: ignore[union-attr]
            duel = state.get("duel")
            ok = isinstance(duel, list) and len(duel) == 5
            self._restore_duel = [float(v) for v in duel] if ok else None  # type: ignore[union-attr]
            link = state.get("link")
            ok = isinstance(link, list) and len(link) >= 2
            self._restore_link = [float(v) for v in link] if ok else None  # type: ignore[union-attr]
            try:
                super().load_state(state)
            finally:
                self._restore_anchor, self._restore_fit, self._restore_published = {}, None, {}
                self._restore_sums, self._restore_links = {}, {}
                self._restore_select = self._restore_duel = self._restore_link = None

        def _restore_fringe(self, doc: int, dstate: str | None) -> None:
            self.index.states[doc] = dstate if dstate is not None else SEED_STATE
            if self.index.dirs:
                self.index.set_directory(doc, self.docs.urls[doc])
            self.index.base[doc] = self.docs.key[doc]
            self.index.anchor[doc] = self._restore_anchor.get(doc, 0.0)
            if self.index.links_kept:  # its best link and link sums (a page reached once: its one link)
                saved = self._restore_links.get(doc)
                if saved is None:
                    ar = self.index.anchor[doc]
                    self.index.first_link(doc, self.index.base[doc] - ar, ar)
                else:
                    idx = self.index
                    idx.best_p[doc], idx.best_a[doc], idx.sum_p[doc], idx.sum_a[doc], idx.links[doc] = saved
            self.fringe.push(doc)
            if self.index.shadowing and self.index.states[doc] != SEED_STATE:
                self.index.shadow_push(doc)

        def index_of(self, url: str) -> float:
            """v_i = (1 - gamma)(b_i + c(x)) of a known fringe document (Eq. 9; diagnostics)."""
            return (1.0 - self.config.gamma) * self.index.value(self.docs.ids[url])

        def _q_dict(self) -> dict[str, Any] | None:
            return self.index.q.to_dict()

        def _load_q_dict(self, data: Any) -> None:
            if data is not None:
                self.index.use(QTable.from_dict(data))
            if self._restore_fit is not None:  # a checkpoint: the calibration that was in use, not a re-fit
                a, wp, wa, next_fit = self._restore_fit
                self.index.fit, self.index._next_fit = Calibration(a, wp, wa), next_fit
                self.index.published = dict(self._restore_published)
                self.index.published_sums = dict(self._restore_sums)
            idx = self.index
            if self._restore_select is not None and (idx.select or idx.duel):
                sel = self._restore_select
                idx.mask = int(sel[0])
                idx.fit_two, idx.fit_common = Calibration(*sel[1:4]), Calibration(*sel[4:7])
            if self._restore_duel is not None and idx.duel:
                fallen, idx.duel_sum, idx.duel_sq, n, fitted = self._restore_duel
                idx.fallen, idx.duel_n, idx._fitted = bool(fallen), int(n), bool(fitted)
            link = self._restore_link
            if link is not None and (idx.link_weight is not None or idx.explore_every):
                if link[0] in LINK_GRID or idx.link_weight is None:
                    idx.link_mean = link[0]
                idx.disagreements = int(link[1])
                if idx.link_weight is not None and len(link) == 6 + 3 * len(LINK_GRID):
                    idx.link_weight.restore(link[2:])

        def save_q(self, path: str | os.PathLike[str]) -> None:
            self.index.save(path)

        def load_q(self, path: str | os.PathLike[str]) -> None:
            self.index.use(QTable.load(path))
            self.fringe.rebuild()

    return ResidualWhittleController
