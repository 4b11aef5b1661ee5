"""Errors a user can fix, and the decoding of a user's files that raises them.

A leaf module: ``retriever`` and ``reader`` may raise these and read JSON with
:func:`jsonl_objects` / :func:`json_document`. The CLI prints an error as one
line (no traceback) and exits 1. A user's file is UTF-8 (or UTF-16 declared by
its byte-order mark); anything else is an :class:`InputError` naming
``file:line``.
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


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


def _decode_error(path: object, raw: bytes, e: UnicodeDecodeError, first_line: int = 1) -> InputError:
    line = first_line + raw.count(b"\n", 0, e.start)
    column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
    return InputError(path, line, f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {column}); "
                                  "save the file as UTF-8")


def open_bytes(path: str | Path):
    """The file's bytes, through gzip when its name ends in ``.gz``."""
    if str(path).endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    return open(path, "rb")


def _read_bytes(path: str | Path) -> bytes:
    with open_bytes(path) as f:
        return f.read()


def read_text(path: str | Path) -> str:
    """The text of a user's file: UTF-8 (a leading byte-order mark is dropped), or UTF-16 when
    the file declares it with its byte-order mark. Bytes that are not valid UTF-8 are an
    :class:`InputError` naming ``file:line`` and the column."""
    raw = _read_bytes(path)
    if raw.startswith(_UTF16_BOMS):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise InputError(path, None, "starts with a UTF-16 byte-order mark but is not valid UTF-16") from None
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _decode_error(path, raw, e) from None


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a user's text file, decoded as :func:`read_text` decodes it,
    streamed line by line for UTF-8 (a file of any size)."""
    with open_bytes(path) as f:
        head = f.read(3)
        if head.startswith(_UTF16_BOMS):
            yield from enumerate(read_text(path).splitlines(keepends=True), 1)
            return
        if head != _UTF8_BOM:
            f.seek(0)
        for n, raw in enumerate(f, 1):
            try:
                yield n, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise _decode_error(path, raw, e, first_line=n) from None


def jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file; a line that is not
    UTF-8 or not a JSON object is an :class:`InputError` naming ``file:line`` (here, beside
    the error it raises, so that every reader of JSONL input, leaf packages included, shares it)."""
    for n, line in text_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as e:
            raise InputError(path, n, f"invalid JSON ({e.msg} at column {e.colno})") from None
        except _DuplicateKey as e:
            raise InputError(path, n, f"key {e.key!r} occurs twice in one object") from None
        if not isinstance(obj, dict):
            raise InputError(path, n, f"expected a JSON object, found {json_type(obj)}")
        yield n, obj


def json_document(path: str | Path) -> Any:
    """The one JSON value in a user's file (decoded as :func:`read_text` decodes it); an empty
    file, invalid JSON or a key repeated in one object is an :class:`InputError` naming
    ``file:line``."""
    text = read_text(path)
    if not text.strip():
        raise InputError(path, None, "the file is empty")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, f"invalid JSON ({e.msg} at column {e.colno})") from None
    except _DuplicateKey as e:
        needle = json.dumps(e.key, ensure_ascii=False)
        first = text.find(needle)
        second = text.find(needle, first + 1) if first >= 0 else -1
        line = text.count("\n", 0, second) + 1 if second >= 0 else None
        raise InputError(path, line, f"key {e.key!r} occurs twice in one object") from None


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def json_type(value: Any) -> str:
    """``"a string"``, ``"a list"``, ``"null"``...: how an error names a JSON value's type."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)



def json_list_items(path: str | Path) -> list[tuple[int, Any]]:
    """``(line number, item)`` for each item of the JSON list that is a user's whole file, the
    line being where the item starts; errors as :func:`json_document`'s."""
    text = read_text(path)
    data = json_document(path) if not text.lstrip().startswith("[") else None
    if data is not None:
        raise InputError(path, 1, f"expected a JSON list, found {json_type(data)}")
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    ws = " \t\r\n"
    i = len(text) - len(text.lstrip(ws)) + 1  # after the opening bracket
    items: list[tuple[int, Any]] = []
    line, counted = 1, 0
    try:
        while True:
            while i < len(text) and text[i] in ws:
                i += 1
            if i < len(text) and text[i] == "]" and not items:
                break
            line += text.count("\n", counted, i)
            counted = i
            item, i = decoder.raw_decode(text, i)
            items.append((line, item))
            while i < len(text) and text[i] in ws:
                i += 1
            if i < len(text) and text[i] == ",":
                i += 1
                continue
            if i < len(text) and text[i] == "]":
                break
            raise json.JSONDecodeError("Expecting ',' delimiter", text, i)
        if text[i + 1:].strip():
            raise json.JSONDecodeError("Extra data", text, i + 1 + len(text[i + 1:]) - len(text[i + 1:].lstrip()))
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, f"invalid JSON ({e.msg} at column {e.colno})") from None
    except _DuplicateKey as e:
        raise InputError(path, line, f"key {e.key!r} occurs twice in one object") from None
    return items
