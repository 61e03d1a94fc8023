"""Session 25 probe (README reliability table, "a damaged parsed-corpus cache"): which exceptions damaged
pickles raise beyond the five kinds ``oasis.web.corpus`` caught before session 25 (OSError, UnpicklingError,
EOFError, AttributeError, TypeError). 3,000 inputs, a third each: random bytes, a small pickle truncated, the
same pickle with one byte altered (seeded).

    .venv/bin/python docs/probes/s25_pickle_fuzz.py
"""

from __future__ import annotations

import collections
import pickle
import random

CAUGHT_BEFORE = (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError)


def main() -> None:
    data = pickle.dumps(
        ({"u": ("a", [1, 2, 3], {"x": 1.5})}, {"u": "/tmp/x"}), protocol=pickle.HIGHEST_PROTOCOL
    )
    rng = random.Random(1)
    escaped: collections.Counter[str] = collections.Counter()
    for i in range(3000):
        kind = i % 3
        if kind == 0:
            b = rng.randbytes(rng.randint(1, 64))
        elif kind == 1:
            b = data[: rng.randint(1, len(data) - 1)]
        else:
            altered = bytearray(data)
            altered[rng.randrange(len(altered))] = rng.randrange(256)
            b = bytes(altered)
        try:
            pickle.loads(b)
        except CAUGHT_BEFORE:
            pass
        except Exception as exc:  # what escaped before
            escaped[type(exc).__name__] += 1
    print(f"escaped the five kinds: {sum(escaped.values())} of 3000: {dict(escaped)}")


if __name__ == "__main__":
    main()
