"""Regenerate the committed gRPC stubs: ``python proto/generate.py`` (from anywhere).

The stubs land beside their ``.proto`` sources in ``proto/oasis/v1`` and install as ``oasis.v1``.
``tests/test_proto_stubs.py`` fails if running this would change them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

PROTO_ROOT = Path(__file__).resolve().parent


def generate(out_dir: Path = PROTO_ROOT) -> None:
    import grpc_tools

    include = Path(grpc_tools.__file__).parent / "_proto"
    sources = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "oasis" / "v1").glob("*.proto"))
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *sources,
    ]
    code = protoc.main(args)
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else PROTO_ROOT)
