"""Reading a JSON input file with a clear error (shared by the model loaders)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: str | Path, what: str) -> Any:
    """The parsed contents of ``path``; ValueError naming the ``what`` file if unreadable or not JSON."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"cannot read {what} file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} file {path} is not valid JSON: {exc}") from exc
