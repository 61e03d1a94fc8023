"""Figures written the way every other file is: rendered in memory, then one atomic write
(:func:`oasis.runtime.files.write_bytes_atomic`). The research packages' one way to write a plot (replay,
freshness and the benchmarks, the layers above this one); not in ``oasis.runtime`` because it imports
matplotlib, which the services never do (the import contract "the services run without the research
extras")."""

from __future__ import annotations

import io
import os
from typing import Any

from oasis.runtime.files import write_bytes_atomic


def write_figure(figure: Any, path: str | os.PathLike[str], *, dpi: int) -> None:
    """Save a matplotlib ``figure`` as a PNG at ``path`` atomically (rendered in memory, then written with
    :func:`oasis.runtime.files.write_bytes_atomic` without the fsyncs) and close it, whether or not the write
    succeeds: a full disk leaves the old file or none, never a truncated image, and raises
    :class:`oasis.runtime.files.FileWriteError` naming ``path``."""
    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format="png", dpi=dpi)
    finally:
        import matplotlib.pyplot as plt  # here: importing this module does not start pyplot

        plt.close(figure)
    write_bytes_atomic(path, buffer.getvalue(), durable=False)
