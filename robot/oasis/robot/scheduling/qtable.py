"""A tabular Q-function over (local state, control) that persists across crawls as JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oasis.robot.scheduling.equations import whittle_index

FORMAT = "oasis-qtable/1"


class QTable:
    """``Q(x, u)`` for string states x and controls u in {0 (passive), 1 (active)}; unknown states read as
    ``q_init``. Also counts the active updates per state (useful for diagnostics and step sizes).

    A row is a tuple, replaced on every update: a tuple of floats is no work for the garbage collector once
    a young collection has seen it, where a list row stays a tracked container (the parent and hybrid states
    add a row per fetched page: 10^5-10^6 rows that every full collection walked)."""

    __slots__ = ("_q", "q_init", "writes")

    def __init__(self, q_init: float = 0.0) -> None:
        self.q_init = float(q_init)
        self._q: dict[str, tuple[float, float, float]] = {}  # state -> (Q(x,0), Q(x,1), visits)
        # calls that changed (or may have changed) rows: a learner that makes every write itself can tell
        # from it that nobody else wrote a row it did not expect (learning.WhittleLearning, hybrid state)
        self.writes = 0

    def __len__(self) -> int:
        return len(self._q)

    def __contains__(self, state: object) -> bool:
        return state in self._q

    def get(self, state: str, u: int) -> float:
        row = self._q.get(state)
        if row is None:
            return self.q_init
        return row[1 if u else 0]

    def value(self, state: str) -> float:
        """``max_u Q(x, u)``: the value of a state under the greedy control."""
        row = self._q.get(state)
        if row is None:
            return self.q_init
        return max(row[0], row[1])

    def index(self, state: str) -> float:
        """Eq. 9: the Whittle index of the state."""
        row = self._q.get(state)
        if row is None:
            return whittle_index(self.q_init, self.q_init)
        return row[1] - row[0]  # whittle_index(row[1], row[0]), written out (once per decision)

    def set(self, state: str, u: int, value: float) -> None:
        self.writes += 1
        row = self._q.get(state)
        p, a, visits = (self.q_init, self.q_init, 0.0) if row is None else row
        if u:
            self._q[state] = (p, float(value), visits + 1.0)
        else:
            self._q[state] = (float(value), a, visits)

    def put(self, state: str, row: tuple[float, float, float]) -> None:
        """Replace a state's whole row (for learners that keep their own statistics in the table's three
        numbers, e.g. ``scheduling.residual``)."""
        self.writes += 1
        self._q[state] = (float(row[0]), float(row[1]), float(row[2]))

    def rows(self) -> dict[str, tuple[float, float, float]]:
        """The live table, ``state -> (Q(x,0), Q(x,1), visits)``, for reads on the controller's hot path (a
        missing state reads as ``q_init``). Change it only through this class's methods."""
        return self._q

    def learn(
        self,
        states: Iterable[str],
        g: float,
        q_next: float,
        bonus: float,
        alpha: float,
        gamma: float,
        alpha_passive: float | None = None,
    ) -> list[tuple[str, float]]:
        """Eq. 10 (papers/004) for the active control of each of ``states`` (one more visit each): reward
        ``g``, next value ``q_next`` and the children's summed values ``bonus``; then, when ``alpha_passive``
        is given, for its passive control (reward 0, same state, next control active). Returns each state
        with its new Whittle index (Eq. 9). Parameters are not checked (see
        :func:`~oasis.robot.scheduling.equations.q_update`)."""
        q, q_init = self._q, self.q_init
        self.writes += 1
        out: list[tuple[str, float]] = []
        # Eq. 10 written out as equations.q_update_summed computes it, term for term (the same bits: a test
        # compares the two); the sample's part that does not depend on the state is computed once
        keep, target = 1.0 - alpha, g + gamma * (q_next + bonus)
        for state in states:
            row = q.get(state)
            p, a, visits = (q_init, q_init, 0.0) if row is None else row  # a missing row as set()
            # Eq. 10, active control, with the child-discovery bonus (q_update_summed(a, g, q_next, bonus))
            a = keep * a + alpha * target
            if alpha_passive is not None:
                # Eq. 10, passive control: reward 0, same state, next control active:
                # q_update_summed(p, 0.0, a, 0.0, alpha_passive, gamma)
                p = (1.0 - alpha_passive) * p + alpha_passive * (0.0 + gamma * (a + 0.0))
            q[state] = (p, a, visits + 1.0)
            out.append((state, a - p))  # Eq. 9: whittle_index(a, p)
        return out

    def seed(self, state: str, q_passive: float, q_active: float) -> None:
        """Initial values for a state the table does not know yet (a prior); no-op for known states."""
        if state not in self._q:
            self.writes += 1
            self._q[state] = (float(q_passive), float(q_active), 0.0)

    def visits(self, state: str) -> int:
        row = self._q.get(state)
        return 0 if row is None else int(row[2])

    def copy(self) -> QTable:
        """An independent table with the same values (rows are immutable tuples: changes to one table never
        reach the other)."""
        table = QTable(self.q_init)
        table._q = dict(self._q)
        return table

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "q_init": self.q_init, "q": {k: list(v) for k, v in self._q.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QTable:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a Q-table (expected format {FORMAT!r})")
        table = cls(float(data.get("q_init", 0.0)))
        raw = data.get("q", {})
        if not isinstance(raw, dict):
            raise ValueError("Q-table field 'q' must be an object")
        for state, row in raw.items():
            if not (isinstance(row, list) and len(row) == 3):
                raise ValueError(f"bad Q-table row for state {state!r}: {row!r}")
            table._q[str(state)] = (float(row[0]), float(row[1]), float(row[2]))
        return table

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically and durably (temp file, fsync, rename) so a crash never leaves half a table."""
        from oasis.runtime.files import write_json_atomic  # here: keeps this module's imports unchanged

        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> QTable:
        """A table written by :meth:`save`. ValueError naming the file when it is not one (not UTF-8 text, not
        valid JSON, another format, a bad row); OSError when it cannot be read."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"cannot load Q-table {path}: not UTF-8 text (byte {exc.start})") from exc
        except json.JSONDecodeError as exc:
            raise ValueError(f"cannot load Q-table {path}: not valid JSON: {exc}") from exc
        try:
            return cls.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"cannot load Q-table {path}: {exc}") from exc
