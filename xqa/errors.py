"""Errors a user can fix.

A leaf module: ``retriever`` and ``reader`` may raise these. The CLI prints an
error as one line (no traceback) and exits 1. A malformed record in a user's
file is an :class:`InputError` naming ``file:line`` (the decoding that raises
it is :mod:`xqa.io`'s). A warning raised by xqa's own code is printed as one line
too (:func:`warnings_as_lines`).
"""
from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Iterator

# the project's packages: a warning raised from a file below one of them is xqa's own
_OWN = tuple(str(Path(__file__).resolve().parents[1] / pkg) + os.sep for pkg in ("xqa", "retriever", "reader", "apps"))


class XqaError(Exception):
    """Bad input, a missing artifact, an unknown language: something the user can fix."""


class InputError(XqaError, ValueError):
    """A malformed input record; the message names ``file:line``."""

    def __init__(self, path: object, line: int | None, message: str):
        self.path, self.line = str(path), line
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")


def os_error_message(e: OSError) -> str:
    """One line for an operating-system error while writing: what failed, where, and what to do."""
    import errno

    where = f"{e.filename}: " if e.filename else ""
    text = f"{where}{e.strerror or e}"
    hint = {errno.ENOSPC: "the disk is full: free space, then run the same command again, which keeps finished work",
            errno.EDQUOT: "the disk quota is used up: free space, then run the same command again",
            errno.EROFS: "the folder is on a read-only file system: choose another output folder",
            errno.EACCES: "no permission to write there: choose another output folder",
            errno.EPERM: "no permission to write there: choose another output folder",
            errno.ENOTDIR: "a part of that path is a file, not a folder: choose another output folder"}.get(e.errno)
    if e.errno == errno.EEXIST and e.filename and os.path.isfile(e.filename):
        hint = "a file is there where a folder is to be written: choose another output folder"
    return f"{text} ({hint}; earlier artifacts there are left as they were)" if hint else text


@contextlib.contextmanager
def warnings_as_lines(prefix: str) -> Iterator[None]:
    """While it lasts, a warning raised from xqa's own code is printed as ``{prefix}: warning:
    {message}`` on one line, as errors are, not as Python's ``file:line: Category: message``
    followed by the source line; other libraries' warnings print as Python prints them."""
    python_format = warnings.formatwarning

    def one_line(message, category, filename, lineno, line=None):
        if str(Path(filename).resolve()).startswith(_OWN):
            return f"{prefix}: warning: {message}\n"
        return python_format(message, category, filename, lineno, line)

    warnings.formatwarning = one_line
    try:
        yield
    finally:
        warnings.formatwarning = python_format
