"""``oasis crawl`` flags that name a time it cannot use: a usage error naming the flag, before any work."""

from __future__ import annotations

import pytest

from oasis.cli import main


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--time-limit", "-5"], "error: --time-limit must be > 0 seconds, got -5.0"),
        (["--time-limit", "0"], "error: --time-limit must be > 0 seconds, got 0.0"),
        (
            ["--recrawl", "whittle", "--recrawl-period", "0"],
            "error: the re-crawl period must be > 0 seconds, got 0.0",
        ),
    ],
)
def test_a_crawl_given_a_time_it_cannot_use_says_which_flag(
    capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    """``--time-limit -5`` ran a crawl that stopped at once and printed an empty summary;
    ``--recrawl-period 0`` said "period must be > 0", naming no flag."""
    argv = ["crawl", "--keywords", "sql", "--seeds", "http://127.0.0.1:1/", "--no-progress", *flags]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == says
