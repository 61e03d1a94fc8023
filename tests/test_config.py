from __future__ import annotations

from pathlib import Path

import pytest

from oasis.cluster.config import ConfigError, load_config, parse_config


def test_builtin_default_has_three_topics_and_a_web() -> None:
    config = load_config(None)
    assert [t.name for t in config.topics] == ["databases", "python", "web"]
    assert all(t.keywords for t in config.topics)
    assert config.web_corpus is not None and config.web_corpus.startswith("synthetic:")
    assert config.heartbeat_seconds < config.lease_seconds


def test_file_overrides(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[cluster]\nlease_seconds = 3.0\nheartbeat_seconds = 0.5\n[[topic]]\nname = "a"\nkeywords = ["x"]\n'
    )
    config = load_config(path)
    assert config.lease_seconds == 3.0
    assert [t.name for t in config.topics] == ["a"]
    assert config.web_corpus is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "at least one"),
        ({"topic": [{"name": "a"}]}, "missing 'keywords'"),
        ({"topic": [{"name": "a", "keywords": []}]}, "at least one keyword"),
        ({"topic": [{"name": "a b", "keywords": ["x"]}]}, "alphanumeric"),
        ({"topic": [{"name": "a", "keywords": ["x"]}, {"name": "a", "keywords": ["y"]}]}, "unique"),
        ({"topic": [{"name": "broker", "keywords": ["x"]}]}, "taken"),
        ({"topic": [{"name": "robot-x", "keywords": ["x"]}]}, "taken"),
        ({"cluster": {"lease_seconds": 1, "heartbeat_seconds": 2},
          "topic": [{"name": "a", "keywords": ["x"]}]}, "heartbeat"),
        ({"cluster": {"lease_seconds": "soon"}, "topic": [{"name": "a", "keywords": ["x"]}]}, "bad value"),
    ],
)  # fmt: skip
def test_bad_configs_get_clear_errors(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_unparsable_toml(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[[topic]\nname=")
    with pytest.raises(ConfigError, match=r"bad\.toml"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")

