"""Errors a user can fix. A leaf module: ``retriever`` and ``reader`` may raise these.

The CLI prints them as one line (no traceback) and exits 1.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator


class XqaError(Exception):
    """Bad input, a missing artifact, an unknown language: something the user can fix."""


class InputError(XqaError, ValueError):
    """A malformed input record; the message names ``file:line``."""

    def __init__(self, path: object, line: int | None, message: str):
        self.path, self.line = str(path), line
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")


def open_text(path: str | Path):
    """A UTF-8 text file, read through gzip when its name ends in ``.gz``."""
    if str(path).endswith(".gz"):
        import gzip

        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file; a line that is not a
    JSON object is an :class:`InputError` naming ``file:line`` (here, beside the error it
    raises, so that every reader of JSONL input, leaf packages included, shares it)."""
    with open_text(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(path, n, f"invalid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise InputError(path, n, f"expected a JSON object, found {type(obj).__name__}")
            yield n, obj
