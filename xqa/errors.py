"""Errors a user can fix.

A leaf module: ``retriever`` and ``reader`` may raise these. The CLI prints an
error as one line (no traceback) and exits 1. A malformed record in a user's
file is an :class:`InputError` naming ``file:line`` (the decoding that raises
it is :mod:`xqa.io`'s).
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


def os_error_message(e: OSError) -> str:
    """One line for an operating-system error while writing: what failed, where, and what to do."""
    import errno

    where = f"{e.filename}: " if e.filename else ""
    text = f"{where}{e.strerror or e}"
    hint = {errno.ENOSPC: "the disk is full: free space, then run the same command again, which keeps finished work",
            errno.EDQUOT: "the disk quota is used up: free space, then run the same command again",
            errno.EROFS: "the folder is on a read-only file system: choose another output folder",
            errno.EACCES: "no permission to write there: choose another output folder",
            errno.EPERM: "no permission to write there: choose another output folder"}.get(e.errno)
    return f"{text} ({hint}; earlier artifacts there are left as they were)" if hint else text
