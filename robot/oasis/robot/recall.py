"""The robot's own recall estimate, without ground truth (papers/004 Eq. 1: R = S_CV / S_V).

The robot holds S_C, the relevance of the pages it indexed (r >= its ``min_relevance``), and estimates the
fresh part S_CV = F_est S_C from its change rates (:func:`oasis.robot.rates.freshness_estimate`; all of it
when it does not re-crawl). The web's relevant mass S_V is S_C plus what the fringe still holds: pages
located and not yet retrieved, whose relevance the request controller estimates by the relevance of the
page that links to them (``fringe_relevance``). That estimate is not the child's relevance: most links of a
relevant page lead to pages that are not (navigation, indexes, other topics), so the raw sum overstates
what the fringe holds and the recall estimate reads low.

:class:`FringeCalibration` scales it by what first retrievals found: rho = (relevance of the newly
retrieved pages that the robot indexes, r >= threshold) / (their estimates when they were retrieved),
exponentially weighted over about the last 1 / (1 - ``RHO_DECAY``) first retrievals (the fringe left is
like the last pages taken from it more than like the first). Then

    R_est = F_est S_C / (S_C + rho x fringe_relevance).

Chosen offline on training runs of the replay (``docs/living.md`` "The robot's recall estimate"): over a
first traversal, the raw estimate's mean absolute error against acc / total was 0.141 (reading low by 0.109
on average), the cumulative ratio's 0.087 and the weighted one's 0.080.
"""

from __future__ import annotations

RHO_DECAY = 0.98  # weight of the previous first retrievals at each new one (about the last 50 count)


class FringeCalibration:
    """rho: relevance found / relevance estimated, over recent first retrievals (module docstring)."""

    def __init__(self, threshold: float = 0.0, decay: float = RHO_DECAY) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        self.threshold = threshold
        self.decay = decay
        self._estimated = 0.0
        self._found = 0.0
        self.observed = 0  # first retrievals seen

    def observe(self, estimate: float, relevance: float) -> None:
        """A located page was retrieved for the first time: estimated ``estimate``, scored ``relevance``."""
        if not (estimate >= 0.0 and relevance >= 0.0):  # (NaN too)
            return
        self.observed += 1
        self._estimated = self.decay * self._estimated + estimate
        self._found = self.decay * self._found + (relevance if relevance >= self.threshold else 0.0)

    @property
    def ratio(self) -> float:
        """rho; 1 (the raw estimate) until a retrieved page had a positive estimate."""
        return self._found / self._estimated if self._estimated > 1e-12 else 1.0


def recall_estimate(held: float, fresh: float, fringe: float) -> float:
    """R_est = ``fresh`` (S_CV estimated) / (``held`` (S_C) + ``fringe`` (calibrated)); 0 with nothing."""
    web = held + max(0.0, fringe)
    return min(1.0, max(0.0, fresh) / web) if web > 0 else 0.0
