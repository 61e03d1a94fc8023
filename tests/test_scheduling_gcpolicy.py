"""The robot process's garbage-collector policy (scheduling.gcpolicy): a controller built before the freeze
is no longer walked by collections, and is still freed when dropped."""

from __future__ import annotations

import gc
import random
import weakref

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.gcpolicy import freeze_long_lived


def test_freeze_moves_the_controllers_lists_out_of_the_collectors_generations() -> None:
    ctl = make_controller("whittle", rng=random.Random(0), config=ControllerConfig(state="hybrid"))
    assert isinstance(ctl, WhittleController)
    urls, states = ctl.docs.urls, ctl.learning.states
    try:
        frozen = freeze_long_lived()
        assert frozen >= 2 and gc.get_freeze_count() == frozen
        tracked = {id(o) for o in gc.get_objects()}  # every generation; the permanent one is not listed
        assert id(urls) not in tracked and id(states) not in tracked
        # the lists keep growing in place (the same objects): a crawl after the freeze works as before
        ctl.add_seeds(["http://h/0"])
        for step in range(20):
            for url in ctl.next_batch(1, float(step)):
                links = [Discovered(f"http://h/{step}-{i}", "", 0.5) for i in range(3)]
                ctl.report(FetchOutcome(url, "new", 0.5, links), float(step))
        assert ctl.docs.urls is urls and len(urls) == 61 and id(urls) not in {id(o) for o in gc.get_objects()}
        # a frozen controller is still freed once dropped (reference counts; it holds no cycles)
        gone = weakref.ref(ctl.learning)
        del ctl, urls, states
        assert gone() is None
    finally:
        gc.unfreeze()
