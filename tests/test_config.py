from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from oasis.cluster.config import ConfigError, WebChanges, load_config, parse_config


def test_builtin_default_has_three_topics_and_a_living_web() -> None:
    config = load_config(None)
    assert [t.name for t in config.topics] == ["networking", "text", "concurrency"]
    assert all(t.keywords for t in config.topics)
    assert config.web_corpus is not None and config.web_corpus.startswith("pydoc:")
    assert config.heartbeat_seconds < config.lease_seconds
    # the main job's web changes and its robots maintain their topics on a page budget, not a page total
    w, r = config.web_changes, config.robot
    assert w.modify_rate > 0 and w.delete_rate > 0 and w.create_rate > 0
    assert r.recrawl == "whittle" and r.pages_per_second > 0 and r.max_pages == 0


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
        # misspelt or unknown keys and tables: silently ignored before (the default kept without a word)
        ({"robot": {"max_in_fligth": 8}, "topic": [{"name": "a", "keywords": ["x"]}]},
         "^\\[robot\\]: unknown key 'max_in_fligth'; did you mean 'max_in_flight'\\?$"),
        ({"topics": [{"name": "a", "keywords": ["x"]}]},
         "^top level: unknown key 'topics'; did you mean 'topic'\\?$"),
        ({"topic": [{"name": "a", "keywords": ["x"], "keyword": ["y"]}]},
         "^\\[\\[topic\\]\\] 'a': unknown key 'keyword'; did you mean 'keywords'\\?$"),
        ({"web": {"zzz": 1}, "topic": [{"name": "a", "keywords": ["x"]}]},
         "^\\[web\\]: unknown key 'zzz'; known: change_seed, "),
        ({"robot": 5, "topic": [{"name": "a", "keywords": ["x"]}]}, "^\\[robot\\] must be a table, got 5$"),
        ({"topic": {"name": "a", "keywords": ["x"]}}, "^topic must be \\[\\[topic\\]\\] tables"),
        ({"topic": ["a"]}, "^\\[\\[topic\\]\\] must be a table, got 'a'$"),
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
    binary = tmp_path / "binary.toml"  # a UnicodeDecodeError traceback from `oasis up --config`, before
    binary.write_bytes(b"[cluster]\n\xa2\x00\xff")
    with pytest.raises(ConfigError) as info:
        load_config(binary)
    assert (
        str(info.value)
        == f"cannot read {binary}: not UTF-8 text (byte 0xa2 at offset 10); a cluster TOML is UTF-8"
    )


def _learning_toml(tmp_path: Path, robot: str, topics: str) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "ctl.json").write_text('{"alpha": 0.25}')
    (conf / "q0.json").write_text('{"format": "oasis-qtable/1", "q": {}}')
    (conf / "ctl-b.toml").write_text("gamma = 0.75\n")
    path = conf / "cluster.toml"
    path.write_text(f"[robot]\n{robot}\n{topics}")
    return path


def test_robot_learning_files_relative_to_the_toml_reach_the_robot_flags(tmp_path: Path) -> None:
    from oasis.cluster.launcher import robot_argv
    from oasis.robot.__main__ import build_parser
    from oasis.robot.app import config_from_args

    path = _learning_toml(
        tmp_path,
        'controller_config = "ctl.json"\ninitial_q_table = "q0.json"',
        '[[topic]]\nname = "a"\nkeywords = ["x"]\n'
        '[[topic]]\nname = "b"\nkeywords = ["y"]\n'
        'controller_config = "ctl-b.toml"\nq_table = "tables/qb.json"\n',
    )
    conf = path.parent.resolve()
    config = load_config(path)
    assert config.robot_files("a") == {
        "controller_config": conf / "ctl.json",
        "initial_q_table": conf / "q0.json",
    }
    assert config.robot_files("b") == {
        "controller_config": conf / "ctl-b.toml",  # the topic overrides [robot]
        "q_table": conf / "tables" / "qb.json",  # need not exist yet: the robot writes it
        "initial_q_table": conf / "q0.json",
    }
    # the launcher's argv parses with the robot's own parser into the robot's config
    for topic, alpha, gamma, q_table in (
        ("a", 0.25, 0.5, tmp_path / "state-a" / "q_table.json"),  # default: the robot's state dir
        ("b", 0.2, 0.75, conf / "tables" / "qb.json"),  # alpha: the shipped robot's (SHIPPED.alpha)
    ):
        state = tmp_path / f"state-{topic}"
        argv = robot_argv(config, topic, "127.0.0.1:1", state_dir=state, seeds=["http://h/"], log_level="X")
        args = build_parser().parse_args(argv[2:])
        rc = config_from_args(args, name=args.name, state_dir=state, default_q_table=state / "q_table.json")
        assert (rc.controller.alpha, rc.controller.gamma) == (alpha, gamma)
        assert rc.q_table == q_table and rc.initial_q_table == conf / "q0.json"


@pytest.mark.parametrize(
    ("robot", "topics", "message"),
    [
        ('q_table = "q.json"', "", r"\[robot\]: q_table is per robot"),
        ('controller_config = "nope.json"', "", r"\[robot\]: controller_config .*nope\.json does not exist"),
        ("", 'initial_q_table = "gone.json"', r"topic 'a': initial_q_table .*gone\.json does not exist"),
        ("", "q_table = 3", "q_table must be a file path"),
        ('policy = "bfs"', 'q_table = "qa.json"', "learns no Q-table"),
        ('policy = "bfs"\ninitial_q_table = "q0.json"', "", "learns no Q-table"),
    ],
)
def test_bad_robot_learning_files(tmp_path: Path, robot: str, topics: str, message: str) -> None:
    path = _learning_toml(tmp_path, robot, f'[[topic]]\nname = "a"\nkeywords = ["x"]\n{topics}\n')
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_two_robots_may_not_share_a_q_table(tmp_path: Path) -> None:
    topic = '[[topic]]\nname = "{}"\nkeywords = ["x"]\nq_table = "q.json"\n'
    path = _learning_toml(tmp_path, "", topic.format("a") + topic.format("b"))
    with pytest.raises(ConfigError, match="its own q_table"):
        load_config(path)


def test_living_web_and_robot_settings_reach_the_processes(tmp_path: Path) -> None:
    from oasis.cluster.launcher import robot_argv, web_change_args

    (tmp_path / "rates.json").write_text("{}")
    path = tmp_path / "c.toml"
    path.write_text(
        '[web]\ncorpus = "pydoc:modules=4"\nmodify_rate = 0.5\n'
        '[robot]\npages_per_second = 3.5\nrecrawl = "whittle"\ninitial_rates = "rates.json"\n'
        '[[topic]]\nname = "a"\nkeywords = ["x"]\n'
    )
    config = load_config(path)
    web = web_change_args(config)
    assert web[:3] == ["--living", "--modify-rate", "0.5"]
    argv = robot_argv(config, "a", "127.0.0.1:1", state_dir=tmp_path, seeds=["http://x/"], log_level="INFO")
    flags = dict(itertools.pairwise(argv))
    assert flags["--pages-per-second"] == "3.5" and flags["--recrawl"] == "whittle"
    assert flags["--initial-rates"] == str(tmp_path / "rates.json")
    static = load_config(None)
    assert web_change_args(dataclasses.replace(static, web_changes=WebChanges())) == []
    with pytest.raises(ConfigError, match="recrawl"):
        parse_config({"robot": {"recrawl": "sometimes"}, "topic": [{"name": "a", "keywords": ["x"]}]})
    # a first retrieval's Last-Modified: learned from unless the cluster says its servers' dates lie
    from oasis.robot.__main__ import build_parser
    from oasis.robot.app import config_from_args

    path.write_text(path.read_text().replace("[robot]\n", "[robot]\nlast_modified = false\n"))
    off = robot_argv(load_config(path), "a", "127.0.0.1:1", state_dir=tmp_path, seeds=["x"], log_level="INFO")
    for launched, learns in ((argv, True), (off, False)):
        args = build_parser().parse_args(launched[2:])
        rc = config_from_args(args, name=args.name, state_dir=tmp_path, default_q_table=tmp_path / "q.json")
        assert rc.last_modified is learns
    with pytest.raises(ConfigError, match="last_modified must be true or false, got 'no'"):
        parse_config({"robot": {"last_modified": "no"}, "topic": [{"name": "a", "keywords": ["x"]}]})
