"""The garbage-collector policy of a process that holds a request controller (the robot, the benchmarks).

A controller keeps a few per-document Python lists (the URL of every document, the state of every queued
one): one container each, but a full (generation-2) collection walks every element of every list it
examines, a cache miss per element; at 10^6 documents one full collection cost 0.1-0.5 s of CPU in the
scheduler benchmark (docs/replay.md "Session 6"; the robot holds the same lists), however little of it
was garbage. These lists live as long as the controller and only grow in place, so once the controller is
built (and restored from its checkpoint) the process moves everything alive into the collector's permanent
generation (:func:`gc.freeze`): later full collections walk only the objects made after that. Frozen
objects are still freed when their reference count drops to zero; only a reference cycle among them is
never reclaimed (the controller's parts hold none).
"""

from __future__ import annotations

import gc
import logging

logger = logging.getLogger(__name__)


def freeze_long_lived() -> int:
    """Collect the garbage there is now, then freeze every object alive (call it once the process's
    long-lived state is built: after the controller is made and resumed). Returns the number of objects
    the collector no longer examines."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.debug("garbage collector: %d long-lived objects frozen", frozen)
    return frozen
