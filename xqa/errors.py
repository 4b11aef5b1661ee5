"""Errors a user can fix. A leaf module: ``retriever`` and ``reader`` may raise these.

The CLI prints them as one line (no traceback) and exits 1.
"""
from __future__ import annotations


class XqaError(Exception):
    """Bad input, a missing artifact, an unknown language: something the user can fix."""


class InputError(XqaError, ValueError):
    """A malformed input record; the message names ``file:line``."""

    def __init__(self, path: object, line: int | None, message: str):
        self.path, self.line = str(path), line
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
