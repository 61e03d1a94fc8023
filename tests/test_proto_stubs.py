"""The committed stubs are exactly what ``python proto/generate.py`` produces."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "proto" / "oasis" / "v1"


def _load_generator() -> object:
    spec = importlib.util.spec_from_file_location("oasis_proto_generate", ROOT / "proto" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_regenerating_changes_nothing(tmp_path: Path) -> None:
    generator = _load_generator()
    generator.generate(tmp_path)  # type: ignore[attr-defined]
    fresh = sorted((tmp_path / "oasis" / "v1").glob("*_pb2*"))
    assert fresh, "protoc produced no stubs"
    committed = sorted(STUBS.glob("*_pb2*"))
    assert [p.name for p in fresh] == [p.name for p in committed]
    for new in fresh:
        old = STUBS / new.name
        assert new.read_text() == old.read_text(), f"{old.name} is stale: run python proto/generate.py"


def test_every_service_is_defined() -> None:
    from oasis.v1 import broker_pb2, directory_pb2, engine_pb2, robot_pb2

    names = {
        broker_pb2.DESCRIPTOR.services_by_name["Broker"].full_name,
        directory_pb2.DESCRIPTOR.services_by_name["Directory"].full_name,
        engine_pb2.DESCRIPTOR.services_by_name["Engine"].full_name,
        robot_pb2.DESCRIPTOR.services_by_name["Robot"].full_name,
    }
    assert names == {"oasis.v1.Broker", "oasis.v1.Directory", "oasis.v1.Engine", "oasis.v1.Robot"}
