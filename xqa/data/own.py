"""A user's own question-answer sets as span-reader training data (``xqa data own``).

Three layouts, told apart by the file's name and content:

- **SQuAD JSON**: ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
  "answers": [{"text", "answer_start"}]}]}]}]}`` (``id`` and ``answer_start`` optional);
- **JSONL**, one question a line: ``{"question", "answers", "context"}`` and optionally ``id``,
  ``lang``, ``title`` and ``answer_start``. ``answers`` is a list of strings (or of SQuAD's
  ``{"text", "answer_start"}`` objects, or one string); ``answer_start`` is an offset, or a list of
  offsets beside the answers;
- **CSV/TSV** (``.csv``, ``.tsv``), a spreadsheet's export: the first row names the columns
  (``question``, ``answer`` or ``answers``, ``context``; optionally ``id``, ``lang``, ``title``,
  ``answer_start``), one question a row; an ``answers`` cell holds one answer or a JSON list.

A question's language is its record's ``lang`` (JSONL), else the file's: ``FILE:LANG`` on the
command line, else ``--lang``. Every answer must occur in its context (at ``answer_start`` when
given, else anywhere: an ``answer_start`` that does not point at its answer is replaced by the
answer's first occurrence, and counted); a question must not be empty; a language code must be
one xqa knows. Each problem is an error naming ``file:line`` (for SQuAD JSON the line where the
question's record starts, and its place ``data[a].paragraphs[p].qas[q]``); all of a run's problems
are listed before it stops, and nothing is written.

What :func:`build` writes is the layout ``xqa data train`` writes and ``xqa train reader --family
span`` reads: ``passages.jsonl`` (each distinct context once), ``train.jsonl`` and ``dev.jsonl``
(questions with ``answers``, ``answer_starts``, ``positive_ids`` and, with ``negatives`` > 0,
``negative_ids``: BM25's best other contexts of the language that hold no answer, from ``bm25/``).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from xqa.errors import InputError, XqaError

ROLES = ("train", "dev")
MAX_LISTED = 20   # problems listed before the count of the rest


@dataclass
class OwnDataConfig:
    """What ``xqa data own`` makes (its options, :mod:`xqa.cli_config`); :func:`build`'s arguments."""

    train: list[str] = field(metadata={
        "required": True, "nargs": "+", "metavar": "FILE[:LANG]",
        "help": "your training sets: SQuAD-layout JSON, JSONL (question, answers, context; optionally id, "
                "lang, title, answer_start) or a CSV/TSV table with those columns named in its first row; "
                "':LANG' after a file name gives its language"})
    out: str = field(metadata={"help": "output folder (passages.jsonl, train.jsonl, dev.jsonl, bm25/)"})
    dev: list[str] = field(default_factory=list, metadata={
        "nargs": "+", "metavar": "FILE[:LANG]",
        "help": "your validation sets, the same layouts (xqa train reader keeps the reader that scores best on "
                "them)"})
    lang: str | None = field(default=None, metadata={
        "help": "language of the questions whose record and file name give none (e.g. ja, zh)"})
    negatives: int = field(default=4, metadata={
        "help": "BM25 hard negatives kept per question, from your own contexts (0: none; training then draws "
                "random contexts of the question's language)"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bars"})


@dataclass
class OwnQuestion:
    """One validated question: its answers as they occur in ``context`` at ``starts``."""

    id: str
    question: str
    answers: list[str]
    starts: list[int]
    context: str
    title: str
    lang: str
    where: str          # file:line, for messages


class Problems:
    """The problems found in a user's files: collected, then raised together."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self._lines: list[int] = []   # each error's line (0: none), to list a file's problems in order

    def add(self, e: InputError | str) -> None:
        self.errors.append(str(e))
        self._lines.append(getattr(e, "line", None) or 0)

    def in_line_order(self, start: int) -> None:
        """List the errors added since ``start`` (one file's) by line: its duplicate ids are found
        after its other problems."""
        pairs = sorted(zip(self._lines[start:], self.errors[start:]), key=lambda p: p[0])
        self._lines[start:] = [n for n, _ in pairs]
        self.errors[start:] = [e for _, e in pairs]

    def raise_if_any(self) -> None:
        if not self.errors:
            return
        shown = self.errors[:MAX_LISTED]
        more = len(self.errors) - len(shown)
        tail = f"\n  ... and {more} more" if more else ""
        raise XqaError(f"{len(self.errors)} problem{'s' if len(self.errors) > 1 else ''} in your QA data "
                       f"(nothing written):\n  " + "\n  ".join(shown) + tail)


def read_own(spec: str, lang: str | None = None, problems: Problems | None = None,
             counts: Counter | None = None, name: str | None = None) -> list[OwnQuestion]:
    """The questions of one of a user's files (``FILE`` or ``FILE:LANG``), validated. With ``problems``,
    each bad question is added there and left out; without, the first one raises its :class:`InputError`.
    ``name``: what the id of a question without one starts with (default: the file's stem,
    ``NAME:LINE``; :func:`id_names`)."""
    from xqa.io import _is_json_document, known_language, missing_file, split_spec

    path, file_lang = split_spec(spec)
    if path.is_dir():
        raise XqaError(f"{path} is a folder; name the files in it")
    if not path.is_file():
        raise missing_file(spec)
    if path.name.lower().endswith((".xlsx", ".xls", ".ods", ".numbers")):
        raise XqaError(f"{path}: a spreadsheet workbook; save the sheet as CSV (UTF-8), with the column "
                       f"names in its first row, and give the .csv file")
    if path.stat().st_size == 0:
        raise InputError(path, None, "the file is empty (expected SQuAD-layout JSON, JSONL or CSV questions)")
    if file_lang is None and lang is not None:
        lang = known_language(lang, field="--lang")
    default = file_lang or lang
    counts = Counter() if counts is None else counts
    out: list[OwnQuestion] = []
    before = len(problems.errors) if problems is not None else 0
    stem = name or path.stem
    suffix = path.name.lower().removesuffix(".gz")
    if suffix.endswith((".csv", ".tsv")):
        records = _table_records(path, default, "\t" if suffix.endswith(".tsv") else ",", stem)
    elif _is_json_document(path):
        records = _squad_records(path, default, stem)
    else:
        records = _jsonl_records(path, default, stem)
    for rec in records:
        try:
            if isinstance(rec, InputError):
                raise rec
            out.append(_validate(path, rec, counts))
        except InputError as e:
            if problems is None:
                raise
            problems.add(e)
    if not out and (problems is None or len(problems.errors) == before):
        raise InputError(path, None, "holds no questions")
    seen: dict[str, str] = {}
    kept = []   # a duplicate is said here once, not again as a clash between files
    for q in out:
        if q.id in seen:
            e = InputError(path, _line(q.where), f"duplicate question id {q.id!r} (first at {seen[q.id]})")
            if problems is None:
                raise e
            problems.add(e)
            continue
        seen[q.id] = q.where
        kept.append(q)
    if problems is not None:
        problems.in_line_order(before)
    return kept


# ------------------------------------------------------------------------------- layouts


def _jsonl_records(path: Path, lang: str | None, stem: str) -> Iterator[dict | InputError]:
    from xqa.io import jsonl_objects

    try:
        for n, obj in jsonl_objects(path, keep_going=True):   # each bad line said, and the lines after it read
            if isinstance(obj, InputError):
                yield obj
                continue
            yield {"line": n, "place": "", "id": obj.get("id", f"{stem}:{n}"), **_jsonl_fields(obj, lang)}
    except InputError as e:   # text that is not UTF-8: nothing after it can be read reliably
        yield e


# A table's columns (CSV/TSV, the first row names them): needed, and read where present.
TABLE_NEEDS = ("question", "context")
TABLE_COLUMNS = ("question", "answer", "answers", "context", "id", "lang", "title", "answer_start")


def _table_records(path: Path, lang: str | None, delimiter: str, stem: str) -> Iterator[dict | InputError]:
    """A spreadsheet's export: CSV (``,``, or ``;`` or tab where those separate the first row's
    column names) or TSV (tab), the first row naming the columns (any case and order): ``question``, ``answer`` (or ``answers``: one answer a cell, or a JSON list
    of them), ``context``, and optionally ``id``, ``lang``, ``title``, ``answer_start``. A record's
    line is the line its row starts on (a quoted cell may span lines); an empty optional cell is
    as if the column were not there."""
    import csv
    import io

    from xqa.io import read_text

    text = read_text(path)
    if delimiter == ",":   # Excel writes ';' where the decimal mark is a comma: the one that names the columns
        first = text.split("\n", 1)[0].lower()
        delimiter = max((",", ";", "\t"), key=lambda d: sum(c.strip(' "') in TABLE_COLUMNS for c in first.split(d)))
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    layout = "TSV" if delimiter == "\t" else "CSV"
    try:
        header = [cell.strip().lower() for cell in next(rows)]
    except StopIteration:
        return
    except csv.Error as e:
        yield InputError(path, 1, f"not readable as {layout}: {e}")
        return
    lacking = [c for c in TABLE_NEEDS if c not in header] + ([] if {"answer", "answers"} & set(header)
                                                               else ["answer"])
    repeated = sorted({c for c in header if c and header.count(c) > 1})
    if lacking or repeated:
        yield InputError(path, 1, (f"the first row names no {', '.join(repr(c) for c in lacking)} column"
                                   if lacking else f"the first row names {', '.join(map(repr, repeated))} twice")
                         + f" (it names: {', '.join(repr(c) for c in header)}; a table's columns: "
                           f"{', '.join(TABLE_COLUMNS)})")
        return
    start = rows.line_num + 1
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as e:
            yield InputError(path, start, f"not readable as {layout}: {e}")
            return
        line, start = start, rows.line_num + 1
        if not any(cell.strip() for cell in row):
            continue   # a blank line
        if len(row) != len(header):
            yield InputError(path, line, f"{len(row)} cells, where the first row names {len(header)} columns")
            continue
        obj = {k: v for k, v in zip(header, row) if k and (k in TABLE_NEEDS or v.strip())}
        for key in ("answer", "answers"):
            text = obj.get(key, "").strip()
            if text.startswith("[") and text.endswith("]"):
                try:
                    obj[key] = json.loads(text)
                except ValueError:
                    pass   # an answer that looks like a list
        if "answer_start" in obj:
            try:
                obj["answer_start"] = int(obj["answer_start"])
            except ValueError:
                yield InputError(path, line, f"column 'answer_start' should be an offset, found "
                                             f"{obj['answer_start']!r}")
                continue
        yield {"line": line, "place": "", "id": obj.get("id", f"{stem}:{line}"), **_jsonl_fields(obj, lang)}


def _jsonl_fields(obj: dict, lang: str | None) -> dict:
    answers = obj.get("answers", obj.get("answer"))
    starts = obj.get("answer_start", obj.get("answer_starts"))
    if isinstance(answers, str):
        answers = [answers]
    if isinstance(answers, list) and answers and all(isinstance(a, dict) for a in answers):
        starts = [a.get("answer_start") for a in answers] if starts is None else starts
        answers = [a.get("text") for a in answers]
    if isinstance(starts, int) and not isinstance(starts, bool):
        starts = [starts]
    return {"question": obj.get("question"), "answers": answers, "starts": starts,
            "context": obj.get("context"), "title": obj.get("title", ""),
            "lang": obj.get("lang", lang), "lang_field": "lang" if "lang" in obj else "--lang"}


def _squad_records(path: Path, lang: str | None, stem: str) -> Iterator[dict | InputError]:
    from xqa.io import json_document, json_type, read_text

    data = json_document(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        yield InputError(path, 1, "not a SQuAD-layout file (no 'data' list) and not JSONL")
        return
    text = read_text(path)
    cursor = 0
    for a, article in enumerate(data["data"]):
        if not isinstance(article, dict):
            yield InputError(path, None, f"data[{a}] should be an object, found {json_type(article)}")
            continue
        title = article.get("title") or ""
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list):
            yield InputError(path, None, f"data[{a}].paragraphs should be a list, found {json_type(paragraphs)}")
            continue
        for p, para in enumerate(paragraphs):
            place = f"data[{a}].paragraphs[{p}]"
            if not isinstance(para, dict) or not isinstance(para.get("qas"), list):
                yield InputError(path, None, f"{place} should be an object with a 'qas' list")
                continue
            for i, qa in enumerate(para["qas"]):
                at = f"{place}.qas[{i}]"
                if not isinstance(qa, dict):
                    yield InputError(path, None, f"{at} should be an object, found {json_type(qa)}")
                    continue
                line, cursor = _find_line(text, qa, cursor)
                qid = qa.get("id", f"{stem}:{a}:{p}:{i}")
                answers = qa.get("answers")
                starts = None
                if isinstance(answers, list) and all(isinstance(x, dict) for x in answers):
                    starts = [x.get("answer_start") for x in answers]
                    answers = [x.get("text") for x in answers]
                yield {"line": line, "place": at, "id": qid, "question": qa.get("question"), "answers": answers,
                       "starts": starts, "context": para.get("context"), "title": title, "lang": lang,
                       "lang_field": "--lang"}


def _find_line(text: str, qa: dict, cursor: int) -> tuple[int | None, int]:
    """The line where ``qa``'s record starts in the file's ``text`` (found by its id or question,
    searching on from ``cursor``, as the records come in file order), and the new cursor."""
    for key in ("id", "question"):
        value = qa.get(key)
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            continue
        values = {json.dumps(value, ensure_ascii=False), json.dumps(value)}
        for needle in (f'"{key}"{sep}{v}' for v in sorted(values) for sep in (": ", ":")):
            at = text.find(needle, cursor)
            if at >= 0:
                start = text.rfind("{", 0, at)   # the record's opening brace
                start = at if start < 0 else start
                return text.count("\n", 0, start) + 1, at + len(needle)
    return None, cursor


def _line(where: str) -> int | None:
    tail = where.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


# ------------------------------------------------------------------------------ validation


def _validate(path: Path, rec: dict, counts: Counter) -> OwnQuestion:
    from xqa.data.sets import answer_offsets
    from xqa.io import json_type
    from xqa.io import known_language

    line, place = rec["line"], rec["place"]
    pre = f"{place}: " if place else ""

    def fail(message: str) -> InputError:
        return InputError(path, line, pre + message)

    qid = rec["id"]
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
        raise fail(f"field 'id' should be a non-empty string or an integer, found {json_type(qid)}")
    question = rec["question"]
    if not isinstance(question, str):
        raise fail("missing field 'question'" if question is None else
                   f"field 'question' should be a string, found {json_type(question)}")
    if not question.strip():
        raise fail("the question is empty")
    context = rec["context"]
    if not isinstance(context, str):
        raise fail("missing field 'context' (the paragraph that holds the answer)" if context is None else
                   f"field 'context' should be a string, found {json_type(context)}")
    if not context.strip():
        raise fail("the context is empty")
    title = rec["title"] if isinstance(rec["title"], str) else ""
    lang = rec["lang"]
    if lang is None:
        raise fail("no language: give the record a 'lang', the file a ':LANG' suffix, or pass --lang")
    try:
        lang = known_language(lang, field=rec["lang_field"])
    except XqaError as e:
        raise fail(str(e)) from None
    answers = rec["answers"]
    if answers is None:
        raise fail("missing field 'answers'")
    if not isinstance(answers, list) or not answers:
        raise fail(f"field 'answers' should be a non-empty list, found {json_type(answers)}"
                   if not isinstance(answers, list) else "field 'answers' is empty: a question needs its answer")
    starts = rec["starts"]
    if starts is not None and (not isinstance(starts, list) or len(starts) != len(answers)):
        raise fail("field 'answer_start' should be an offset or a list of offsets, one for each answer")
    kept, at = [], []
    for k, answer in enumerate(answers):
        if not isinstance(answer, str):
            raise fail(f"answer {k + 1} should be a string, found {json_type(answer)}")
        given = starts[k] if starts is not None else None
        if given is not None and (not isinstance(given, int) or isinstance(given, bool)):
            raise fail(f"answer_start of answer {k + 1} should be an integer, found {json_type(given)}")
        if given is not None:
            given += len(answer) - len(answer.lstrip())   # the offset of the answer without its edge spaces
        answer = answer.strip()
        if not answer:
            raise fail(f"answer {k + 1} is empty")
        offset = answer_offsets(context, answer, -1 if given is None else given)
        if offset < 0:
            raise fail(f"answer {answer!r} is not in its context")
        if given is not None and offset != given:
            counts["answer_start did not point at its answer (its first occurrence is used)"] += 1
        if answer not in kept:
            kept.append(answer)
            at.append(offset)
    return OwnQuestion(str(qid), question, kept, at, context, title, lang,
                       f"{path}:{line}" if line is not None else f"{path} {place}")


# --------------------------------------------------------------------------------- writing


def id_names(specs: list[str]) -> dict[str, str]:
    """What the ids of each file's questions without one start with: its stem (``qa`` for
    ``t/qa.jsonl``), or where two different files share a stem, the path without its suffix
    (``t/qa``, ``d/qa``), so that their generated ids do not clash."""
    from xqa.io import split_spec

    paths = {spec: split_spec(spec)[0] for spec in specs}
    stems = Counter(p.stem for p in set(paths.values()))
    return {spec: (p.stem if stems[p.stem] == 1 else str(p.with_suffix(""))) for spec, p in paths.items()}


def collect(specs: list[str], lang: str | None, problems: Problems, counts: Counter,
            names: dict[str, str] | None = None) -> list[OwnQuestion]:
    """The questions of several files; an id in two of them is a problem naming both.
    ``names``: each file's :func:`id_names` (default: those of ``specs``)."""
    out: list[OwnQuestion] = []
    where: dict[str, str] = {}
    names = id_names(specs) if names is None else names
    for spec in specs:
        try:
            qs = read_own(spec, lang, problems, counts, names.get(spec))
        except InputError as e:
            problems.add(e)
            continue
        for q in qs:
            if q.id in where:
                problems.add(f"{q.where}: question id {q.id!r} also occurs at {where[q.id]}")
                continue
            where[q.id] = q.where
            out.append(q)
    return out


def build(cfg: OwnDataConfig) -> dict[str, Any]:
    """Validate the user's files and write ``passages.jsonl``, ``train.jsonl``, ``dev.jsonl`` (and
    ``bm25/`` with negatives) into ``cfg.out``; the summary. Any problem raises before anything is
    written."""
    from xqa.data.sets import passage_id
    from xqa.data.training import add_negatives, write_jsonl

    problems, counts = Problems(), Counter()
    names = id_names([*cfg.train, *(cfg.dev or [])])
    train = collect(list(cfg.train), cfg.lang, problems, counts, names)
    dev = collect(list(cfg.dev or []), cfg.lang, problems, counts, names)
    clash = {q.id for q in train} & {q.id for q in dev}
    for q in dev:
        if q.id in clash:
            problems.add(f"{q.where}: question id {q.id!r} is in both the training and the dev sets")
    problems.raise_if_any()
    if cfg.negatives < 0:
        raise XqaError("--negatives: must be 0 or more")

    passages: dict[str, dict] = {}
    rows: dict[str, list[dict]] = {}
    for role, qs in (("train", train), ("dev", dev)):
        rows[role] = []
        for q in qs:
            pid = passage_id(f"own-{q.lang}", q.context)
            passages.setdefault(pid, {"id": pid, "title": q.title, "text": q.context, "lang": q.lang,
                                      "source": "own"})
            rows[role].append({"id": q.id, "question": q.question, "lang": q.lang, "answers": q.answers,
                               "answer_starts": q.starts, "positive_ids": [pid], "negative_ids": [],
                               "source": f"own-{q.lang}"})
    train_keys = {passages[r["positive_ids"][0]]["text"] for r in rows["train"]}
    shared = sum(1 for r in rows["dev"] if passages[r["positive_ids"][0]]["text"] in train_keys)
    if shared:
        counts["dev questions whose context is also a training context"] = shared
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.negatives and len(passages) > 1:
        add_negatives(rows["train"] + rows["dev"], passages, out / "bm25", depth=cfg.negatives,
                      progress=cfg.progress)
    write_jsonl(out / "passages.jsonl", passages.values())
    write_jsonl(out / "train.jsonl", rows["train"])
    if rows["dev"]:
        write_jsonl(out / "dev.jsonl", rows["dev"])
    elif (out / "dev.jsonl").exists():
        (out / "dev.jsonl").unlink()   # a dev file of an earlier run is not these sets' dev
    summary = {"passages": len(passages), "train": len(rows["train"]), "dev": len(rows["dev"]),
               "languages": dict(Counter(r["lang"] for r in rows["train"] + rows["dev"])),
               "negatives": sum(len(r["negative_ids"]) for r in rows["train"] + rows["dev"]),
               "notes": dict(counts)}
    write_jsonl(out / "summary.jsonl", [summary])
    return summary
