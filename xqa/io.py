"""Reading and writing xqa's records in the formats the field uses, and the decoding of a user's files.

A leaf module: ``retriever`` and ``reader`` may read JSON with :func:`jsonl_objects` /
:func:`json_document`.

Passages: JSONL ``{"id","title","text","lang"}`` (also Pyserini's ``{"id","contents"}``)
and DPR's TSV (``id, text, title``). Question sets: the XOR-TyDi / MIA / MKQA
JSONL layout, SQuAD JSON (XQuAD, MLQA, TyDi GoldP), NQ-open JSONL,
EntityQuestions JSON lists, DPR's question TSV and plain text (a question a line). Results: the DPR / FiD JSON layout with ``ctxs``, and
TREC run files.

A user's file is UTF-8 (or UTF-16 declared by its byte-order mark); anything else,
and every malformed line, is an :class:`~xqa.errors.InputError` naming ``file:line``;
nothing is skipped silently. Large passage files also load through HF ``datasets``
(Arrow, memory-mapped): see :func:`passages_dataset`.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

from xqa.artifacts import write_text_atomic
from xqa.errors import InputError, XqaError
from xqa.records import AUTO_LANG, UNKNOWN_LANG, Context, Passage, Question, RetrievalResult


# ---------------------------------------------------------------- decoding a user's file

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


def json_error(e: json.JSONDecodeError) -> str:
    """``invalid JSON (Expecting ',' delimiter at column 9)``: the decoder's message and the column
    (its "Unterminated string starting at" takes the column without a second "at")."""
    return f"invalid JSON ({e.msg}{' ' if e.msg.endswith(' at') else ' at '}column {e.colno})"


def _decode_error(path: object, raw: bytes, e: UnicodeDecodeError, first_line: int = 1) -> InputError:
    line = first_line + raw.count(b"\n", 0, e.start)
    column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
    return InputError(path, line, f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {column}); "
                                  "save the file as UTF-8")


def open_bytes(path: str | Path):
    """The file's bytes, through gzip when its name ends in ``.gz`` (one that is not gzip'd is
    an :class:`InputError`)."""
    if str(path).endswith(".gz"):
        import gzip

        with open(path, "rb") as f:
            magic = f.read(2)
        if magic and magic != b"\x1f\x8b":
            raise InputError(path, None, "named .gz, but not gzip-compressed: gzip it, or name it without .gz")
        return gzip.open(path, "rb")
    return open(path, "rb")


def count_records(path: str | Path) -> int:
    """About how many records a JSONL or DPR TSV file holds, read as bytes (a pass at disk
    speed, for a progress bar's total): its non-blank lines, less a TSV's ``id`` header row.
    A quoted TSV field spanning lines counts once per line."""
    with open_bytes(path) as f:
        n = sum(1 for raw in f if raw.strip())
    return n - (format_suffix(path) == ".tsv" and _tsv_header(Path(path)) is not None)


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


def jsonl_objects(path: str | Path, keep_going: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for each non-blank line of a JSONL file; a line that is not
    UTF-8 or not a JSON object is an :class:`InputError` naming ``file:line`` (here, beside
    the error it raises, so that every reader of JSONL input, leaf packages included, shares it).
    ``keep_going``: a line that is no JSON object is yielded as ``(line, InputError)`` and the
    lines after it are read (each line of JSONL stands alone), to say every problem at once."""
    for n, line in text_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line.rstrip("\r\n"), object_pairs_hook=_unique_keys)  # columns of this line
            if not isinstance(obj, dict):
                raise InputError(path, n, f"expected a JSON object, found {json_type(obj)}")
            _check_surrogates(path, n, line, obj)
        except json.JSONDecodeError as e:
            error = InputError(path, n, json_error(e))
        except _DuplicateKey as e:
            error = InputError(path, n, f"key {e.key!r} occurs twice in one object")
        except InputError as e:
            error = e
        else:
            yield n, obj
            continue
        if not keep_going:
            raise error from None
        yield n, error


# A JSON escape of one half of a surrogate pair (\ud83d): JSON allows it alone, text does not.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in the strings and keys of a decoded JSON value, or None."""
    if isinstance(value, str):
        m = _SURROGATE.search(value)
        return m.group() if m else None
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _lone_surrogate(item)
        if found is not None:
            return found
    return None


def _check_surrogates(path: str | Path, line: int | None, raw: str, value: Any) -> None:
    """An :class:`InputError` where a string of ``value`` (decoded from ``raw``) holds a lone
    surrogate, which no text has and the tokenizers refuse; a quick look at ``raw`` first."""
    if "\\u" not in raw or not _SURROGATE_ESCAPE.search(raw):
        return
    found = _lone_surrogate(value)
    if found is None:
        return
    escape = f"\\u{ord(found):04x}"
    if line is None:   # a whole document: the line of the escape
        at = raw.lower().find(escape)
        line = raw.count("\n", 0, at) + 1 if at >= 0 else None
    raise InputError(path, line, f"holds {escape}, one half of a surrogate pair without the other: not text "
                                 "(an emoji or other character cut in two?)")


def json_document(path: str | Path) -> Any:
    """The one JSON value in a user's file (decoded as :func:`read_text` decodes it); an empty
    file, invalid JSON or a key repeated in one object is an :class:`InputError` naming
    ``file:line``."""
    text = read_text(path)
    if not text.strip():
        raise InputError(path, None, "the file is empty")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, json_error(e)) from None
    except _DuplicateKey as e:
        needle = json.dumps(e.key, ensure_ascii=False)
        first = text.find(needle)
        second = text.find(needle, first + 1) if first >= 0 else -1
        line = text.count("\n", 0, second) + 1 if second >= 0 else None
        raise InputError(path, line, f"key {e.key!r} occurs twice in one object") from None
    _check_surrogates(path, None, text, value)
    return value


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
        raise InputError(path, e.lineno, json_error(e)) from None
    except _DuplicateKey as e:
        raise InputError(path, line, f"key {e.key!r} occurs twice in one object") from None
    _check_surrogates(path, None, text, [item for _, item in items])
    return items


# ---------------------------------------------------------------- records

def _load_json(path: str | Path) -> Any:
    return json_document(path)


def _require(obj: dict, key: str, path, line, kinds: type | tuple = str) -> Any:
    if key not in obj:
        raise InputError(path, line, f"missing field {key!r}")
    val = obj[key]
    if val is None:
        raise InputError(path, line, f"field {key!r} is null")
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(val, allowed) or isinstance(val, bool) and bool not in allowed:  # JSON true is no number
        want = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in allowed)
        raise InputError(path, line, f"field {key!r} should be {want}, found {json_type(val)}")
    return val


_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object",
               bool: "true or false"}


def file_stem(path: str | Path) -> str:
    """The name a file's made-up ids begin with: its name without ``.gz`` and then its format's
    suffix (``NQ-open.dev.jsonl.gz`` → ``NQ-open.dev``, as ``NQ-open.dev.jsonl``), so that a
    compressed copy numbers its questions as the file does."""
    name = Path(path).name
    name = name[:-3] if name.lower().endswith(".gz") else name
    return Path(name).stem


def split_spec(spec: str | Path) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:LANG`` (``LANG`` a language code xqa knows, and ``FILE:LANG`` not itself a
    file): the file, and the language of its records that carry none."""
    from xqa.langid.codes import LANGUAGE_NAMES

    spec = str(spec)
    path, sep, lang = spec.rpartition(":")
    if sep and path and lang in LANGUAGE_NAMES and not Path(spec).exists():
        return Path(path), lang
    return Path(spec), None


def missing_file(spec: str | Path, what: str = "file") -> XqaError:
    """The error for a ``FILE`` or ``FILE:LANG`` that names no file: one whose ``LANG`` is no code
    xqa knows says so (``train.json:jp``)."""
    from xqa.langid.codes import LANGUAGE_NAMES

    spec = str(spec)
    head, sep, code = spec.rpartition(":")
    if sep and head and Path(head).is_file():
        return XqaError(f"{spec}: {code!r} after the file name (FILE:LANG) is no language code xqa knows; "
                        f"known codes: {' '.join(sorted(LANGUAGE_NAMES))}")
    return XqaError(f"{split_spec(spec)[0]}: no such {what}")


def format_suffix(path: str | Path) -> str:
    """The suffix that names a file's format, lower case, a trailing ``.gz`` set aside
    (``psgs_w100.tsv.gz`` → ``.tsv``, as ``psgs_w100.tsv``)."""
    name = Path(path).name.lower()
    return Path(name[:-3] if name.endswith(".gz") else name).suffix


def record_id(obj: dict, path, line, key: str = "id") -> str:
    """The record's id: a non-empty string or an integer (as a string); missing, null, empty or
    any other type is an :class:`InputError` naming ``file:line`` and the field."""
    val = _require(obj, key, path, line, (str, int))
    val = str(val)
    if not val.strip():
        raise InputError(path, line, f"field {key!r} is empty")
    return val


def known_language(code: Any, path=None, line: int | None = None, field: str = "lang") -> str:
    """``code`` as xqa writes it if it is a language code xqa knows (``xqa.langid.LANGUAGE_NAMES``:
    the MIA, XOR-TyDi, MKQA, MLQA and XQuAD languages and more; ``EN`` → ``en``, ``zh-CN`` →
    ``zh_cn``); else an error naming the file, line and field."""
    from xqa.langid.codes import LANGUAGE_NAMES

    if isinstance(code, str) and code in LANGUAGE_NAMES:
        return code
    written = code.strip().lower().replace("-", "_") if isinstance(code, str) else None
    if written in LANGUAGE_NAMES:
        return written
    message = (f"field {field!r}: unknown language code {code!r}; known codes: "
               f"{' '.join(sorted(LANGUAGE_NAMES))}")
    if path is None:
        raise XqaError(message)
    raise InputError(path, line, message)


class _Unique:
    """Remembers ids, and where each was first seen, to report a duplicate by file:line."""

    def __init__(self, path, what: str, lines: bool = True):
        self.path, self.what = path, what
        self.seen: dict[str, int | None] | set[str] = {} if lines else set()

    def add(self, rid: str, line: int | None, where: str = "") -> None:
        if rid in self.seen:
            first = self.seen[rid] if isinstance(self.seen, dict) else None
            at = f" (first at line {first})" if first is not None else " (it occurs earlier in the file)"
            raise InputError(self.path, line, f"{where}duplicate {self.what} id {rid!r}{at}")
        if isinstance(self.seen, dict):
            self.seen[rid] = line
        else:
            self.seen.add(rid)


def _is_json_document(path: str | Path) -> bool:
    """True for one JSON document (a list or an object); False for JSONL."""
    path = Path(path)
    with open_bytes(path) as f:
        head = f.read(4096)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 (by its byte-order mark)
        text = read_text(path)
        head_text, first = text[:4096].lstrip(), text.split("\n", 1)[0]
    else:
        head_text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace").lstrip()
        first = None
    if not head_text.startswith(("[", "{")):
        return False
    rest = ""
    if first is None:
        with open_bytes(path) as f:
            first = f.readline().removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
            while not rest.strip():   # the next line that is not blank
                more = f.readline()
                if not more:
                    break
                rest = more.decode("utf-8", "replace")
    else:
        rest = text.split("\n", 1)[1] if "\n" in text else ""
    if head_text.startswith("["):
        try:   # a whole list on the first line and more lines after it: JSONL whose first line is no object
            json.loads(first)
        except json.JSONDecodeError:
            return True   # a list spread over several lines
        return not rest.strip()
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        return True  # an object spread over several lines
    # A whole object on the first line: JSONL, unless it is a one-line SQuAD document.
    return isinstance(obj, dict) and isinstance(obj.get("data"), list)


def _not_empty(path: Path, what: str) -> None:
    if path.stat().st_size == 0:
        raise InputError(path, None, f"the file is empty (expected {what})")


# --------------------------------------------------------------------------- passages


def read_passages(path: str | Path, lang: str | None = None, text_required: bool = False) -> Iterator[Passage]:
    """Passages from JSONL (xqa or Pyserini layout) or DPR TSV (``.tsv``).

    ``lang`` is used for records that carry none (DPR TSV has no language column).
    Every malformed record, a repeated id, an unknown language code, a file without
    passages and, with ``text_required``, a passage whose text is blank are errors
    (:class:`~xqa.errors.InputError`) naming ``file:line``.
    """
    path = Path(path)
    if not path.is_file():
        raise XqaError(f"{path}: no such passage file")
    if lang is not None:
        lang = known_language(lang, field="--lang")
    _not_empty(path, "passages")
    seen = _Unique(path, "passage", lines=False)
    count = 0
    if format_suffix(path) == ".tsv":
        for count, (n, p) in enumerate(_read_dpr_tsv(path, lang, seen), 1):
            if text_required:
                _has_text(p, path, n)
            yield p
    else:
        if _is_json_document(path) and _parses(path):   # a SQuAD file, a JSON list: not its first line's fault
            raise InputError(path, None, "one JSON document (a list, or an object such as a SQuAD file), not "
                                         "passages: passages are JSONL, a record a line ({\"id\", \"title\", "
                                         "\"text\", \"lang\"}), or DPR TSV; xqa data own makes passages.jsonl "
                                         "of a SQuAD file's contexts")
        for n, obj in jsonl_objects(path):
            count += 1
            p = _passage(obj, path, n, lang, seen)
            if text_required:
                _has_text(p, path, n)
            yield p
    if not count:
        raise InputError(path, None, "holds no passages (only blank lines)")


def _parses(path: Path) -> bool:
    """Whether ``path`` holds one JSON document (a JSONL file whose first line is broken does
    not: its reader names that line)."""
    try:
        json.loads(read_text(path))
    except (ValueError, InputError):
        return False
    return True


def _has_text(p: Passage, path: Path, n: int) -> None:
    if not p.text.strip():
        raise InputError(path, n, f"passage {p.id!r} has an empty text: there is nothing in it to find")


def _passage(obj: dict, path: Path, n: int, lang: str | None, seen: _Unique) -> Passage:
    key = next((k for k in ("id", "_id", "docid") if k in obj), "id")
    pid = record_id(obj, path, n, key)
    seen.add(pid, n)
    if "text" in obj:
        text = _require(obj, "text", path, n)
        title = obj.get("title")
        if title is None:
            title = ""
        elif not isinstance(title, str):
            raise InputError(path, n, f"field 'title' should be a string, found {json_type(title)}")
    elif "contents" in obj:
        title, _, text = _require(obj, "contents", path, n).partition("\n")
        title = title.removesuffix("\r")   # "Title\r\ntext", written on Windows
        if not text:
            title, text = "", title
    else:
        raise InputError(path, n, "missing field 'text' (or Pyserini's 'contents')")
    field = "lang" if "lang" in obj else "language"
    plang = obj.get(field)
    if plang is None:
        if not lang:
            raise InputError(path, n, "missing field 'lang' (pass --lang for a one-language file)")
        plang = lang
    plang = known_language(plang, path, n, field)
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise InputError(path, n, f"field 'meta' should be an object, found {json_type(meta)}")
    return Passage(id=pid, title=title, text=text, lang=plang, meta=meta)


def _tsv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line, columns)`` of a tab-separated file read as DPR reads its files (CSV with tabs: a
    field in double quotes may hold a tab, and ``""`` a quote); blank lines are skipped. A record
    is one line: a field whose opening quote is not closed on its line (it would swallow the
    lines after it, as DPR's reader lets it) is an :class:`InputError` naming the line."""
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader((line for _, line in text_lines(path)), delimiter="\t")
    end = 0
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if end > start:
                raise InputError(path, start, f"a field opened by a double quote runs on to line {end}: a "
                                              f"record is one line (a quote inside a field is doubled, \"\", "
                                              f"where the field is quoted; a field that begins with a quote "
                                              f"ends with one)")
            if "".join(row).strip():
                yield end, row
    except csv.Error as e:
        raise InputError(path, reader.line_num, f"malformed TSV ({e})") from None


PASSAGE_COLUMNS = ("id", "text", "title")


def _tsv_header(path: Path, first: str = "id") -> list[str] | None:
    """The names of a TSV's header row (its first line, when its first column is ``first``), or None."""
    for n, row in _tsv_rows(path):
        if n == 1 and row[0].strip().lower() == first:
            return [c.strip().lower() for c in row]
        break
    return None


def passage_columns(path: str | Path) -> list[str]:
    """The columns of a DPR TSV passage file: its header's names (a first row starting with
    ``id``), else ``id, text, title``."""
    return _tsv_header(Path(path)) or list(PASSAGE_COLUMNS)


def _read_dpr_tsv(path: Path, lang: str | None, seen: _Unique) -> Iterator[tuple[int, Passage]]:
    """DPR's passage TSV: ``id``, ``text``, ``title`` a row; a first row starting with ``id`` is a
    header, whose names then place the columns (a ``lang`` column gives each passage its
    language; other named columns are not read). Every row has the columns its header names
    (without one, three): a tab inside an unquoted text would shift the title."""
    header = _tsv_header(path)
    columns = header or list(PASSAGE_COLUMNS)
    for n, row in _tsv_rows(path):
        if n == 1 and header:
            missing = [c for c in PASSAGE_COLUMNS if c not in columns]
            if missing:
                raise InputError(path, n, f"the header names no column {', '.join(map(repr, missing))} "
                                          f"(DPR TSV: id, text, title)")
            continue
        if "lang" not in columns and not lang:
            raise XqaError(f"{path}: DPR TSV has no language column; pass the passages' language (--lang), "
                           f"or name a 'lang' column in its header (id, text, title, lang)")
        if len(row) != len(columns):
            raise InputError(path, n, f"expected {len(columns)} tab-separated columns ({', '.join(columns)}), "
                                      f"found {len(row)}" + (" (a tab inside a text: put the text in double "
                                                             "quotes)" if len(row) > len(columns) else ""))
        cells = dict(zip(columns, row))
        if not cells["id"].strip():
            raise InputError(path, n, "column 'id' is empty")
        plang = lang
        if "lang" in cells and cells["lang"].strip():
            plang = known_language(cells["lang"].strip(), path, n, "lang")
        if not plang:
            raise InputError(path, n, "no language: the row's 'lang' column is empty; pass --lang for "
                                      "passages without one")
        seen.add(cells["id"], n)
        yield n, Passage(id=cells["id"], text=cells["text"], title=cells["title"], lang=plang)


def write_passages(path: str | Path, passages: Iterable[Passage]) -> int:
    lines = [json.dumps(p.to_dict(), ensure_ascii=False) for p in passages]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


# --------------------------------------------------------------------------- questions

def _english_squad(path: Path) -> bool:
    """Whether ``path`` names SQuAD itself (English): a word of it begins with ``squad``, and no
    ``squad`` is followed by another language's code. JSQuAD (``jsquad_ja/valid.json``), SQuAD-it
    (``squad_it/SQuAD_it-test.json``), SQuAD-es and the like are SQuAD's layout in another
    language."""
    from xqa.langid.codes import LANGUAGE_NAMES

    found = re.findall(r"(?<![a-z])squad(?:[^a-z]+([a-z]+))?", str(path).lower())
    return bool(found) and not any(word in LANGUAGE_NAMES and word != "en" for word in found)


_SQUAD_LANG = [
    (re.compile(r"question-([a-z]{2}(?:_[a-z]{2})?)\.json(?:\.gz)?$"), 1),  # MLQA: dev-context-de-question-en.json
    (re.compile(r"goldp\.([a-z]{2})\."), 1),  # TyDi GoldP: tydiqa.goldp.ko.train.json
    (re.compile(r"xquad\.([a-z]{2})\.json(?:\.gz)?$"), 1),  # XQuAD
]


def _guess_lang(path: Path) -> str | None:
    for pattern, group in _SQUAD_LANG:
        m = pattern.search(path.name)
        if m:
            return m.group(group)
    return None


def read_questions(path: str | Path, lang: str | None = None, *, auto: bool = False) -> list[Question]:
    """A question set in any supported layout, by content.

    - XOR-TyDi / MIA / MKQA JSONL: ``{"id","question","answers","lang"}``;
    - NQ-open JSONL: ``{"question","answer"}`` (ids are ``{file}:{line}``, lang ``en``);
    - SQuAD JSON (XQuAD, MLQA, TyDi GoldP, SQuAD): language from ``lang`` or the file name;
    - EntityQuestions JSON list: ``[{"question","answers"}]`` (ids ``{file}:{item}``, lang ``en``);
    - DPR question TSV (``.tsv``/``.csv``: DPR's ``nq-test.qa.csv`` and the like):
      ``question<TAB>['answer', ...]`` (ids ``{file}:{line}``, lang ``en``);
    - plain text (``.txt``): a question a line, no answers (ids ``{file}:{line}``; ``lang`` required).

    ``lang``: the language of records that carry none. With ``auto`` (a caller that identifies
    languages next: :func:`xqa.cli_options.identify_languages`), ``"auto"``
    (:data:`xqa.records.AUTO_LANG`) leaves those records' language to be identified from each
    question's text, SQuAD files whose name gives no language included; elsewhere it is an
    unknown code.

    Only the two layouts that carry no ids get them made up; elsewhere a missing,
    null, empty or repeated id is an error, as are answers that are not a list of
    strings, an unknown language code and a file without questions.
    """
    path = Path(path)
    if path.is_dir():
        raise XqaError(f"{path} is a folder; name the question files in it ({path}/*.jsonl)")
    if not path.is_file():
        raise XqaError(f"{path}: no such question file")
    if lang == AUTO_LANG and not auto:
        raise XqaError(f"{path}: lang 'auto' leaves each question's language to identify: pass auto=True as "
                       f"well, then xqa.cli_options.identify_languages(questions, pipe.config.languages) "
                       f"identifies them (as xqa answer --lang auto does)")
    if lang is not None and not (auto and lang == AUTO_LANG):
        lang = known_language(lang, field="--lang")
    _not_empty(path, "questions")
    seen = _Unique(path, "question")
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".tsv", ".csv")):
        out = _read_dpr_questions(path, lang)
    elif name.endswith(".txt"):
        out = _read_question_lines(path, lang)
    elif _is_json_document(path):
        if read_text(path).lstrip().startswith("["):
            out = _read_json_list(path, json_list_items(path), lang, seen)
        else:
            data = _load_json(path)
            if not (isinstance(data, dict) and "data" in data):
                raise InputError(path, 1, "unrecognised JSON layout (expected SQuAD {'data': ...} "
                                          "or a list of questions)")
            out = read_squad(path, lang=lang, auto=auto)[0]
    else:
        out = [_question_from_jsonl(obj, path, n, lang, seen) for n, obj in jsonl_objects(path)]
    if not out:
        raise InputError(path, None, "holds no questions")
    return out


def _read_dpr_questions(path: Path, lang: str | None) -> list[Question]:
    """DPR's question files: ``question<TAB>answers`` a row (read as DPR reads them: tab-separated
    CSV), the answers a Python or JSON list of strings (``['Wilhelm Conrad Röntgen']``); no
    header, ids ``{file stem}:{line}``, English unless ``lang`` says otherwise."""
    import ast

    qlang, stem = lang or "en", file_stem(path)   # read_questions checked lang
    out = []
    for n, row in _tsv_rows(path):
        if n == 1 and row[0].strip().lower() == "question":
            continue
        if len(row) > 2:
            raise InputError(path, n, f"expected a question, a tab and its answers; found {len(row)} "
                                      f"tab-separated columns (a tab inside a question: put the question "
                                      f"in double quotes)")
        if len(row) < 2:
            comma = "," in row[0] and path.suffix.lower() in (".csv", ".gz")
            raise InputError(path, n, "expected a question, a tab and its answers (DPR's ['answer', ...]); "
                                      "found no tab" + (" (a .csv question file is read as DPR's, tab-separated; "
                                                        "a spreadsheet's comma-separated questions: save them "
                                                        "as JSONL, {\"id\", \"question\", \"answers\", "
                                                        "\"lang\"} a line)" if comma else ""))
        question, answers = row[0].strip(), row[1].strip()
        if not question:
            raise InputError(path, n, "the question is empty")
        try:
            parsed = ast.literal_eval(answers) if answers else []
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise InputError(path, n, f"the answers ({answers[:60]}) are not a list such as "
                                      "['answer one', 'answer two']") from None
        if not isinstance(parsed, list) or not all(isinstance(a, str) for a in parsed):
            raise InputError(path, n, f"the answers ({answers[:60]}) are not a list of strings")
        out.append(Question(id=f"{stem}:{n}", question=question, lang=qlang, answers=tuple(parsed)))
    return out


def _read_question_lines(path: Path, lang: str | None) -> list[Question]:
    """A question a line, nothing else: ids ``{file stem}:{line}``, every question in ``lang``."""
    if not lang:
        raise InputError(path, None, "a text file of questions says nothing of their language: pass --lang "
                                     "(or --lang auto to identify each question's; from Python: lang=...)")
    stem = file_stem(path)
    return [Question(id=f"{stem}:{n}", question=line.strip(), lang=lang)
            for n, line in text_lines(path) if line.strip()]


def _answers(obj: dict, path, line, key: str | None = None) -> tuple[str, ...]:
    key = key or ("answers" if "answers" in obj else "answer")
    raw = obj.get(key, [])
    if isinstance(raw, str):
        raise InputError(path, line, f"field {key!r} should be a list of strings, found a string "
                                     f"(write [{json.dumps(raw, ensure_ascii=False)[:60]}])")
    if not isinstance(raw, list):
        raise InputError(path, line, f"field {key!r} should be a list of strings, found {json_type(raw)}")
    out = []
    for i, a in enumerate(raw):
        if isinstance(a, dict):  # MKQA-style {"text": ...}
            a = a.get("text")
        if not isinstance(a, str):
            raise InputError(path, line, f"field {key!r}: answer {i} ({json.dumps(a)[:40]}) is not a string")
        out.append(a)
    return tuple(out)


_KNOWN = {"id", "question", "answers", "answer", "lang", "answers_en"}


_NO_LANG = "pass --lang for a one-language file, or --lang auto to identify each question's"


def _question_from_jsonl(obj: dict, path: Path, n: int | None, lang: str | None,
                         seen: _Unique | None = None, made_up_ids: bool = False, item: int | None = None,
                         no_lang: str = _NO_LANG) -> Question:
    """One question record, at line ``n``. ``made_up_ids``: a layout without ids (EntityQuestions),
    whose records get ``{file}:{item}``; an NQ-open record (``answer``, no ``lang``) gets ``{file}:{n}``.
    ``no_lang``: what to do for a record without ``lang`` and no ``lang`` given."""
    qid = record_id(obj, path, n) if "id" in obj else None
    text = _require(obj, "question", path, n)
    nq_open = "answer" in obj and "answers" not in obj and "lang" not in obj
    qlang = obj.get("lang")
    if qlang is None:
        qlang = lang or ("en" if nq_open or made_up_ids else None)
        if not qlang:
            raise InputError(path, n, f"missing field 'lang' ({no_lang})")
    if qlang != AUTO_LANG or "lang" in obj:
        qlang = known_language(qlang, path, n)
    if qid is None:
        if not (nq_open or made_up_ids):
            raise InputError(path, n, "missing field 'id'")
        qid = f"{file_stem(path)}:{item if item is not None else n}"
    if seen is not None:
        seen.add(qid, n)
    answers_en = obj.get("answers_en")
    answers_en = _answers(obj, path, n, "answers_en") if answers_en is not None else ()
    meta = {k: v for k, v in obj.items() if k not in _KNOWN}
    return Question(id=qid, question=text, lang=qlang, answers=_answers(obj, path, n),
                    answers_en=answers_en, meta=meta)


def _read_json_list(path: Path, items: list[tuple[int, Any]], lang: str | None, seen: _Unique) -> list[Question]:
    out = []
    for i, (line, obj) in enumerate(items):
        if not isinstance(obj, dict):
            raise InputError(path, line, f"expected an object with a 'question', found {json_type(obj)}")
        out.append(_question_from_jsonl(obj, path, line, lang, seen, made_up_ids=True, item=i))
    return out


def read_squad(path: str | Path, lang: str | None = None, *,
               auto: bool = False) -> tuple[list[Question], list[Passage]]:
    """Questions and their contexts from a SQuAD-layout JSON file.

    Each context becomes a passage (id ``{file}:{article}:{paragraph}``) and each
    question records it in ``meta["positive_ids"]``. A malformed part is an error
    naming the file and where in the document (``data[a].paragraphs[p].qas[q].id``).
    Some published files number questions per paragraph (TyDi GoldP's ``"0"``,
    ``"1"``...): when ids repeat, every question's id becomes
    ``{file}:{article}:{paragraph}:{id}``, with a warning on stderr.
    """
    path = Path(path)
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(path, 1, "not a SQuAD-layout file (no 'data' list)")
    if lang == AUTO_LANG and not auto:
        known_language(lang, field="--lang")
    given = None if lang == AUTO_LANG else lang  # auto: the file name's language, else each question's
    squad = "en" if _english_squad(path) and lang != AUTO_LANG else None   # auto: each question's
    qlang = given or _guess_lang(path) or squad or lang
    if not qlang:
        raise XqaError(f"{path}: cannot tell the language from the file name; pass --lang")
    if qlang != AUTO_LANG:
        qlang = known_language(qlang, field="--lang")
    clang = UNKNOWN_LANG if qlang == AUTO_LANG else qlang
    m = re.search(r"context-([a-z]{2}(?:_[a-z]{2})?)-question", path.name)
    if m:
        clang = known_language(m.group(1), field="context language in the file name")
    questions, passages, places = [], [], []

    def where(*parts: object) -> str:
        return "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in parts).lstrip(".")

    def need(obj: Any, key: str, kind: type, *at: object) -> Any:
        if not isinstance(obj, dict):
            raise InputError(path, None, f"{where(*at)} should be an object, found {json_type(obj)}")
        val = obj.get(key)
        if not isinstance(val, kind) or isinstance(val, bool):
            raise InputError(path, None, f"{where(*at, key)} should be {_KIND_NAMES[kind]}, found "
                                         f"{'nothing' if key not in obj else json_type(val)}")
        return val

    for a, article in enumerate(data["data"]):
        title = article.get("title", "") if isinstance(article, dict) else None
        if not isinstance(title, str):
            raise InputError(path, None, f"{where('data', a, 'title')} should be a string, found {json_type(title)}")
        for p, para in enumerate(need(article, "paragraphs", list, "data", a)):
            context = need(para, "context", str, "data", a, "paragraphs", p)
            pid = f"{file_stem(path)}:{a}:{p}"
            passages.append(Passage(id=pid, title=title, text=context, lang=clang))
            for i, qa in enumerate(need(para, "qas", list, "data", a, "paragraphs", p)):
                at = ("data", a, "paragraphs", p, "qas", i)
                if not isinstance(qa, dict):
                    raise InputError(path, None, f"{where(*at)} should be an object, found {json_type(qa)}")
                try:
                    qid = record_id(qa, path, None)
                except InputError as e:
                    raise InputError(path, None, f"{where(*at)}: {str(e).split(': ', 1)[1]}") from None
                places.append((a, p, i))
                question = need(qa, "question", str, *at)
                texts = []
                answers = qa.get("answers") or []
                if not isinstance(answers, list):
                    raise InputError(path, None, f"{where(*at, 'answers')} should be a list of objects "
                                                 f'{{"text", "answer_start"}}, found {json_type(answers)}')
                for j, x in enumerate(answers):
                    texts.append(need(x, "text", str, *at, "answers", j))
                questions.append(Question(id=qid, question=question, lang=qlang,
                                          answers=tuple(dict.fromkeys(t for t in texts if t)),
                                          meta={"positive_ids": [pid]}))
    if len({q.id for q in questions}) < len(questions):
        first: set[tuple[int, int, str]] = set()   # repeated within one paragraph: no way to tell them apart
        for q, (a, p, i) in zip(questions, places):
            if (a, p, q.id) in first:
                raise InputError(path, None, f"{where('data', a, 'paragraphs', p, 'qas', i)}: duplicate question id "
                                             f"{q.id!r} in one paragraph")
            first.add((a, p, q.id))
        print(f"xqa: warning: {path}: question ids repeat (numbered per paragraph?); using "
              f"'{file_stem(path)}:<article>:<paragraph>:<id>' as ids", file=sys.stderr)
        questions = [dataclasses.replace(q, id=f"{file_stem(path)}:{a}:{p}:{q.id}")
                     for q, (a, p, _) in zip(questions, places)]
    return questions, passages


def nonempty_files(paths: Iterable[str | Path], what: str = "questions") -> list[Path]:
    """``paths`` without the empty files among them, each passed over with a warning, where
    another holds something (MIA's ``mkqa-pt.jsonl`` is empty); all empty: ``paths`` as they are
    (reading the first is the error)."""
    import warnings

    paths = [Path(p) for p in paths]
    empty = [p for p in paths if p.is_file() and p.stat().st_size == 0]
    if not empty or len(empty) == len(paths):
        return paths
    for p in empty:
        warnings.warn(f"{p}: the file is empty; no {what} from it", stacklevel=3)
    return [p for p in paths if p not in empty]


def read_question_files(paths: Iterable[str | Path], lang: str | None = None, *,
                        auto: bool = False) -> list[Question]:
    """The questions of several files (:func:`read_questions`, ``lang`` and ``auto``); an id in two
    of them is an error naming both. Of several files, an empty one (MIA's ``mkqa-pt.jsonl``) is
    passed over with a warning; one file, or every file, empty is an error."""
    out: list[Question] = []
    where: dict[str, Path] = {}
    for path in nonempty_files(paths):
        for q in read_questions(path, lang=lang, auto=auto):
            if q.id in where:
                raise InputError(path, None, f"question id {q.id!r} also occurs in {where[q.id]}")
            where[q.id] = path
            out.append(q)
    return out


def write_questions(path: str | Path, questions: Iterable[Question]) -> int:
    lines = [json.dumps(q.to_dict(), ensure_ascii=False) for q in questions]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


# --------------------------------------------------------------------------- results


def write_results(path: str | Path, results: Iterable[RetrievalResult | dict]) -> int:
    """Retrieval results in the DPR / FiD layout: JSON list for ``.json``, else JSONL; gzip'd
    where the name ends in ``.gz`` (``.json.gz``: a JSON list)."""
    rows = [r.to_dict() if isinstance(r, RetrievalResult) else r for r in results]
    if str(path).removesuffix(".gz").endswith(".json"):
        write_text_atomic(path, json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    else:
        write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return len(rows)


def read_results(path: str | Path) -> list[RetrievalResult]:
    """Retrieval results from a DPR/FiD JSON list or JSONL file; ``FILE:LANG`` gives the language
    of records that carry none (FiD's and DPR's files carry none).

    Each record is a question (as in :func:`read_questions`, id required) with
    ``ctxs``: a list of objects with an ``id`` and a numeric ``score``. A repeated
    question id, a malformed context and a file without results are errors.
    """
    spec = path
    path, lang = split_spec(spec)
    if not path.is_file():
        raise missing_file(spec, "results file")
    _not_empty(path, "retrieval results")
    if _is_json_document(path):
        rows = json_list_items(path)
    else:
        rows = list(jsonl_objects(path))
    seen = _Unique(path, "question")
    out = []
    for n, r in rows:
        if not isinstance(r, dict):
            raise InputError(path, n, f"expected a result object, found {json_type(r)}")
        q = _question_from_jsonl(r, path, n, lang, seen, no_lang="retrieval results name each question's "
                                 "language, as xqa search writes them; for a DPR or FiD file of one language, "
                                 f"give it after the file's name: {path.name}:en")
        q = Question(id=q.id, question=q.question, lang=q.lang, answers=q.answers, answers_en=q.answers_en,
                     meta={k: v for k, v in q.meta.items() if k != "ctxs"})
        if "ctxs" not in r and "positive_ids" in r:   # xqa data train's questions: their paragraphs by id
            raise InputError(path, n, "missing field 'ctxs': these are questions with their paragraphs' ids "
                                      "(xqa data train), which the span reader trains on (--family span "
                                      "--passages PASSAGES); a FiD reader reads retrieval results (xqa search "
                                      "--out), each question with its passages")
        ctxs = []
        for i, c in enumerate(_require(r, "ctxs", path, n, list)):
            ctxs.append(_context(c, path, n, f"ctxs[{i}]"))
        out.append(RetrievalResult(question=q, ctxs=tuple(ctxs)))
    if not out:
        raise InputError(path, None, "holds no retrieval results")
    return out


def _context(c: Any, path: Path, n: int | None, at: str) -> Context:
    if not isinstance(c, dict):
        raise InputError(path, n, f"{at} should be an object, found {json_type(c)}")
    try:
        cid = record_id(c, path, n)
    except InputError as e:
        raise InputError(path, n, f"{at}: {str(e).split(': ', 1)[1]}") from None
    fields: dict[str, Any] = {}
    for key, kinds, default in (("title", str, ""), ("text", str, ""), ("lang", str, ""), ("source", str, ""),
                                ("score", (int, float), 0.0), ("has_answer", bool, None)):
        val = c.get(key, default)
        if key == "score" and isinstance(val, str):   # DPR writes its scores as strings ("90.1")
            val = _number(val, default=val)
        if val is not None and (not isinstance(val, kinds) or isinstance(val, bool) and kinds is not bool):
            raise InputError(path, n, f"{at}: field {key!r} should be "
                                      f"{'a number' if key == 'score' else _KIND_NAMES[kinds]}, found {json_type(val)}")
        fields[key] = default if val is None and key != "has_answer" else val
    meta = c.get("meta") or {}
    if not isinstance(meta, dict):
        raise InputError(path, n, f"{at}: field 'meta' should be an object, found {json_type(meta)}")
    return Context(id=cid, title=fields["title"], text=fields["text"], lang=fields["lang"],
                   score=float(fields["score"]), source=fields["source"], has_answer=fields["has_answer"],
                   meta=meta)


def _number(text: str, default: Any = None) -> Any:
    """The finite number a string spells (``"90.1"``), else ``default``."""
    try:
        val = float(text)
    except ValueError:
        return default
    return val if math.isfinite(val) else default


def check_trec_id(value: str, what: str) -> None:
    """An error for an id a TREC run file cannot hold: its fields are separated by whitespace."""
    if not value or any(ch.isspace() for ch in value):
        raise XqaError(f"--trec: {what} id {value!r} is empty or holds whitespace, which a TREC run file "
                       f"cannot hold (its fields are separated by whitespace); give ids without it, or leave "
                       f"--trec out (the results file holds any id)")


def write_trec_run(path: str | Path, results: Iterable[RetrievalResult], tag: str = "xqa") -> None:
    """A TREC run file: ``qid Q0 docid rank score tag`` per line (:func:`check_trec_id`), the score
    as the shortest decimal that reads back as the same float: trec_eval orders a query's passages
    by score, so two scores rounded to one number would be ranked by their ids there."""
    lines = []
    for r in results:
        check_trec_id(r.question.id, "question")
        for rank, c in enumerate(r.ctxs, 1):
            check_trec_id(c.id, "passage")
            lines.append(f"{r.question.id} Q0 {c.id} {rank} {float(c.score)!r} {tag}\n")
    write_text_atomic(path, "".join(lines))


# --------------------------------------------------------------------------- HF datasets


def passages_dataset(path: str | Path, lang: str | None = None, cache_dir: str | None = None):
    """Passages as an Arrow-backed, memory-mapped ``datasets.Dataset`` of ``{"id","title","text","lang"}``.

    Read through :func:`read_passages`, so every layout it reads (xqa or Pyserini JSONL, DPR TSV
    with ``lang``) gives the same rows, and a malformed line is an error naming ``file:line``.
    ``datasets`` converts the file once; later loads of the unchanged file map the cached Arrow file.
    """
    import datasets

    path = Path(path)
    if not path.is_file():
        raise XqaError(f"{path}: no such passage file")
    stat = path.stat()
    # a passage's meta (provenance) travels as a JSON string: its keys vary from passage to passage
    features = datasets.Features({k: datasets.Value("string") for k in ("id", "title", "text", "lang", "meta")})
    try:
        # the file's size and time are part of the arguments, so a changed file is converted again
        return datasets.Dataset.from_generator(
            _passage_rows, features=features, cache_dir=cache_dir,
            gen_kwargs={"path": str(path), "lang": lang, "stamp": (stat.st_size, stat.st_mtime_ns)})
    except datasets.exceptions.DatasetGenerationError as e:
        if isinstance(e.__cause__, XqaError):
            raise e.__cause__ from None
        raise


def _passage_rows(path: str, lang: str | None, stamp: tuple[int, int]) -> Iterator[dict[str, str]]:
    for p in read_passages(path, lang):
        yield {**p.to_dict(), "meta": json.dumps(p.meta, ensure_ascii=False) if p.meta else ""}
