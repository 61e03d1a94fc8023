"""The Whittle controller's learning strategy (papers/004): the local state x of each fringe document, the
Q-table, and its Eq. 10 updates with the child-discovery bonus and the reward of Eq. 11 (the index v(x) of
Eq. 9 ranks the states).

After each active update the passive control of the same state is updated too: a passive fringe arm earns 0
and stays in its state, so its Eq. 10 sample is ``0 + gamma Q(x, 1)`` (step size ``alpha_passive``); hence
``v(x) -> (1 - gamma) Q(x, 1)`` for visited states.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from oasis.robot.scheduling.config import ControllerConfig
from oasis.robot.scheduling.documents import DocumentTable
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import (
    DiscoveryContext,
    GeneralisingState,
    ParentIdentityState,
    StateExtractor,
    UrlIdentityState,
    make_state_extractor,
)

RETRIEVED_STATE = "retrieved"  # local state of every retrieved (re-crawl) arm in the Q-table

LinkState = Callable[[int, str, str, float, float, int], str]


class WhittleLearning:
    """States of fringe documents (``states``, a document-table column), the Q-table ``q`` and Eq. 10."""

    def __init__(self, config: ControllerConfig, table: DocumentTable, q: QTable | None) -> None:
        cfg = self.config = config
        # the config is frozen: its Eq. 10 parameters, read per fetch, as attributes
        self._learning, self._alpha, self._gamma = cfg.learn, cfg.alpha, cfg.gamma
        self._alpha_passive = cfg.alpha_passive
        self._child_weight = cfg.state_child_weight
        self._table = table
        q_table = q if q is not None else QTable(cfg.q_init)
        self.prior = cfg.prior in ("parent", "anchor")
        self._anchor_prior = cfg.prior == "anchor"  # the prior adds the anchor text's relevance (issue 10)
        # the paper's parent state is the identity of the *first* discovering document, and a url state never
        # changes: only the feature states (generalising, hybrid) are re-derived on rediscovery, and only with
        # the parent prior (with prior "zero" an unseen new state would read 0 and push the document back)
        feature_state = cfg.state in ("generalising", "generalising-host", "hybrid")
        self.restate = cfg.rediscovery == "restate" and feature_state and self.prior
        # learning frozen (learn=False): the given table is read, never changed; unseen states still get the
        # prior (as while learning), seeded into a private working copy so that a transferred table is never
        # worse than the untrained robot for lack of data. save_q writes the untouched table.
        self._frozen: QTable | None = None
        if not cfg.learn and self.prior:
            self._frozen, q_table = q_table, q_table.copy()
        self.q = q_table
        self._rows = q_table.rows()  # the table's dict, read per discovered link (kept with self.q)
        self.hybrid = cfg.state == "hybrid"
        self._own_rows, self._writes = False, 0
        self._own_rows_possible()
        self.extract: StateExtractor = make_state_extractor(
            cfg.state, relevance_bins=cfg.relevance_bins, anchor_bins=cfg.anchor_bins, max_depth=cfg.max_depth
        )
        self.states: list[str | None] = table.list_column()  # per document: its state while queued
        # hybrid: per document, the generalising key beside the queue key
        self.aux: list[str | None] = table.list_column() if self.hybrid else []
        self.link_state = self._link_state_function()
        # the generalising key without a context object (generalising and hybrid states), else None
        self._gen_key: Callable[[float, float, int], str] | None = None
        if isinstance(self.extract, GeneralisingState) and not self.extract.use_host:
            self._gen_key = self.extract.keyer()

    def _link_state_function(self) -> LinkState:
        """``state(doc, url, parent_url, parent_rel, anchor_rel, depth)``: ``self.extract`` of a discovered
        (non-seed) document's context, without building the context for the built-in extractors (a test
        checks each against the extractor)."""
        extract = self.extract
        if isinstance(extract, GeneralisingState) and not extract.use_host:
            key = extract.keyer()

            def generalising(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
                return key(pr, ar, depth)

            return generalising
        if isinstance(extract, ParentIdentityState):
            last = ["", ""]  # the children of one page share one key string

            def parent(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
                if parent_url != last[0]:
                    last[0], last[1] = parent_url, "p:" + parent_url
                return last[1]

            return parent
        if isinstance(extract, UrlIdentityState):

            def own(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
                return "u:" + url

            return own
        hosts, host_id = self._table.hosts, self._table.host_id

        def generic(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
            return extract(DiscoveryContext(url, parent_url, pr, ar, depth, hosts[host_id[doc]]))

        return generic

    def discovered(
        self, doc: int, url: str, parent_url: str | None, parent_rel: float, anchor_rel: float, depth: int
    ) -> str:
        """The queue state of a newly located document (a seed when ``parent_url`` is None), recorded in
        ``states``; with the parent prior an unseen state starts at Q(x, 1) = parent relevance (1 for a seed),
        Q(x, 0) = gamma Q(x, 1), the fixed point of the passive update."""
        gen_key = self._gen_key
        if gen_key is not None and parent_url is not None:  # link_state of the generalising states, one call
            state = gen_key(parent_rel, anchor_rel, depth)  # shorter (the first test: once per link)
        elif parent_url is None:
            table = self._table
            host = table.hosts[table.host_id[doc]]
            state = self.extract(DiscoveryContext(url, None, parent_rel, anchor_rel, depth, host))
        else:
            state = self.link_state(doc, url, parent_url, parent_rel, anchor_rel, depth)
        rows = self._rows
        if self.hybrid:
            self.aux[doc] = state
            if self.q.writes != self._writes:  # a row written by someone else: it may be this URL's own
                self._own_rows = True
            # the URL's own learned entry, if the table can hold one (see _own_rows_possible); else the
            # generalising one (also aux: seeded once)
            if self._own_rows:
                own = "u:" + url
                if own in rows:
                    state = own
        if self.prior and state not in rows:
            p = parent_rel if parent_url is not None else 1.0
            if self._anchor_prior:
                p += anchor_rel
            self.q.seed(state, self.config.gamma * p, p)
            if self.hybrid:  # (checked above)
                self._writes = self.q.writes
        self.states[doc] = state
        return state

    def rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> str:
        """The state of a fringe document that a more relevant page links to (``restate`` only): re-derived
        from that page, except a hybrid document ranked by its URL's own entry. Does not record it."""
        old = self.states[doc]
        assert old is not None
        if self.hybrid and old.startswith("u:"):
            return old  # the URL's own learned entry is what ranks it
        table = self._table
        state = self.link_state(doc, table.urls[doc], parent_url, parent_rel, anchor_rel, table.depth[doc])
        if self.hybrid:
            self.aux[doc] = state
        if self.prior and state not in self._rows:
            p = parent_rel + anchor_rel if self._anchor_prior else parent_rel
            q = self.q
            if self.hybrid and q.writes != self._writes:  # (see _own_rows_possible)
                self._own_rows = True
            q.seed(state, self.config.gamma * p, p)
            self._writes = q.writes
        return state

    def _own_rows_possible(self) -> None:
        """Whether the table may hold a hybrid own row (``"u:" + URL``) of a URL this controller has not
        located yet: only a table given, loaded or written by someone else can. This learner writes own
        rows only for pages it fetched, and a fetched page's URL stays known (evict_fringe forgets only
        unfetched ones), so a link to a new URL finds no own row of it unless the table came with own rows
        or was written through other hands (``QTable.writes`` counts every write; this learner notes the
        count after each of its own). While neither happened, ``discovered`` skips the own-row lookup (a
        string built and looked up in a table of up to one row per fetched page, per link) with the same
        result."""
        q = self.q
        self._writes = q.writes
        if self.hybrid:
            self._own_rows = any(state.startswith("u:") for state in q.rows())

    def index(self, state: str) -> float:
        """v(x), Eq. 9."""
        return self.q.index(state)

    def learn(
        self, doc: int, was_fringe: bool, g: float, children: Sequence[int], q_next: float
    ) -> list[tuple[str, float]]:
        """Eq. 10 after a fetch of ``doc`` with reward ``g`` (Eq. 11) that newly discovered ``children``;
        ``q_next`` is the value of the arm's next state. Returns the fringe states whose index changed, with
        their new index (the caller re-keys their groups)."""
        if not self._learning:
            return []
        states = self.states
        state = states[doc] if was_fringe else RETRIEVED_STATE
        if state is None:  # reported without ever being queued (redirect target): nothing to credit
            return []
        q, rows = self.q, self._rows
        # Eq. 10's child-discovery bonus: sum_j max_u Q(x^j, u) over the newly discovered children, added in
        # order from 0.0 (the same bits as q_update summing the values); a missing state reads q_init
        q_init, bonus = q.q_init, 0.0
        for c in children:
            crow = rows.get(states[c])  # type: ignore[arg-type]
            if crow is None:
                bonus += q_init
            else:  # max(crow[0], crow[1]) (the first of equals, as max returns it)
                p, a = crow[0], crow[1]
                bonus += a if a > p else p
        bonus *= self._child_weight  # (x 1.0 is exact: Eq. 10 as written keeps the sum's bits)
        xs: tuple[str, ...] = (state,)
        if self.hybrid:
            if was_fringe:
                # learn the URL's own entry and the generalising one from the same sample
                own, aux = "u:" + self._table.urls[doc], self.aux[doc]
                xs = (own,) if aux is None or aux == own else (own, aux)
            if q.writes != self._writes:  # (see _own_rows_possible)
                self._own_rows = True
            out = q.learn(
                xs, g, q_next, bonus, self._alpha, self._gamma, self._alpha_passive if was_fringe else None
            )
            self._writes = q.writes
            return out if was_fringe else []
        if not was_fringe:
            q.learn(xs, g, q_next, bonus, self._alpha, self._gamma)
            return []
        return q.learn(xs, g, q_next, bonus, self._alpha, self._gamma, self._alpha_passive)

    # -- Q-table persistence ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return self.q.to_dict()

    def load_dict(self, data: Any) -> None:
        if data is not None:
            self._use(QTable.from_dict(data))

    def save(self, path: str | os.PathLike[str]) -> None:
        (self._frozen if self._frozen is not None else self.q).save(path)

    def load(self, path: str | os.PathLike[str]) -> None:
        table = QTable.load(path)
        if self._frozen is not None:
            self._frozen, table = table, table.copy()
        self._use(table)

    def _use(self, table: QTable) -> None:
        """Learn in ``table`` from now on."""
        self.q = table
        self._rows = table.rows()
        self._own_rows_possible()
