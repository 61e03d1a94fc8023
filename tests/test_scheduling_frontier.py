"""The indexed, host-aware priority queue against a brute-force model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling.frontier import Frontier


def test_pop_order_ties_fifo_and_updates() -> None:
    f = Frontier()
    f.push(1, 0.5)
    f.push(2, 0.9)
    f.push(3, 0.5)
    f.push(4, 0.1)
    f.push(4, 0.95)  # increase
    f.push(2, 0.2)  # decrease
    assert f.remove(3) and not f.remove(3)
    assert len(f) == 3 and f.peek() == (4, 0.95)
    assert [f.pop(), f.pop(), f.pop(), f.pop()] == [4, 1, 2, None]


def test_blocked_hosts_are_skipped_and_kept() -> None:
    f = Frontier()
    f.push(1, 0.9, host=7)
    f.push(2, 0.8, host=7)
    f.push(3, 0.1, host=8)
    asked: list[int] = []

    def ready(h: int) -> bool:
        asked.append(h)
        return h != 7

    assert f.pop(ready) == 3
    assert asked.count(7) == 1  # the blocked host was looked at once, its items never scanned
    assert f.pop(lambda h: False) is None
    assert [f.pop(), f.pop(), f.pop()] == [1, 2, None]


ops = st.lists(
    st.tuples(
        st.sampled_from(["push", "remove", "pop"]), st.integers(0, 15), st.integers(0, 20), st.integers(0, 2)
    ),
    max_size=120,
)


@settings(max_examples=80)
@given(ops, st.sets(st.integers(0, 2)))
def test_matches_brute_force(script: list[tuple[str, int, int, int]], blocked: set[int]) -> None:
    f = Frontier()
    model: dict[int, tuple[float, int, int]] = {}  # item -> (priority, seq, host)
    seq = 0
    for op, item, prio, host in script:
        if op == "push":
            old = model.get(item)
            if old is None or old[0] != prio or old[2] != host:
                seq += 1
                model[item] = (float(prio), seq, host)
            f.push(item, float(prio), host)
        elif op == "remove":
            assert f.remove(item) == (model.pop(item, None) is not None)
        else:
            cands = [(-p, s, i) for i, (p, s, h) in model.items() if h not in blocked]
            got = f.pop(lambda h: h not in blocked)
            if not cands:
                assert got is None
            else:
                want = min(cands)[2]
                assert got == want
                del model[want]
        assert len(f) == len(model)
    f.compact()
    rest = []
    while (x := f.pop()) is not None:
        rest.append(x)
    assert rest == [i for _, _, i in sorted((-p, s, i) for i, (p, s, h) in model.items())]
