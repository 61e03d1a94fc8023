"""Logging of every Oasis process: one handler on the root logger, as text or as JSON lines.

``--log-format json`` (every service; the launcher passes the cluster TOML's ``log_format``) writes one JSON
object per line: ``{"ts", "level", "logger", "msg", "service"}``, plus ``"exc"`` (the traceback) when the
record carries one and the fields of ``extra={"fields": {...}}`` (e.g. the robot's progress line), so a log
shipper needs no parsing rules. Entry points call :func:`configure_logging`; modules only
``logging.getLogger(__name__)``.
"""

from __future__ import annotations

import argparse
import json
import logging
from datetime import UTC, datetime
from typing import Any

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"
RESERVED = frozenset({"ts", "level", "logger", "msg", "service", "exc"})


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON (ts in ISO 8601 UTC with milliseconds)."""

    def __init__(self, service: str = "") -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            "service": self.service,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update({str(k): v for k, v in fields.items() if str(k) not in RESERVED})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.stack_info:
            entry["exc"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str = "INFO", fmt: str = "text", service: str = "") -> None:
    """Entry points only: one handler on the root logger, text (default) or JSON lines."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}, got {fmt!r}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter(service) if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """``--log-format text|json`` (every service already has its ``--log-level``)."""
    parser.add_argument(
        "--log-format", choices=LOG_FORMATS, default="text", help="log lines as text (default) or JSON"
    )
