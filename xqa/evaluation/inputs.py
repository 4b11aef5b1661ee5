"""Reading the files the evaluation scores: gold questions, predictions, retrieval results.

Every malformed input raises :class:`~xqa.errors.InputError` naming the file
(and the line where it is known), and so does an empty file (an empty JSON
object ``{}`` is a valid prediction file that answers nothing).
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from xqa.errors import InputError, XqaError

from xqa.io import file_stem, format_suffix, json_document, json_list_items, json_type, read_text
from xqa.io import jsonl_objects as _jsonl_objects
from xqa.evaluation.languages import KNOWN_LANGUAGES, check_language
from xqa.io import nonempty_files, read_questions, record_id
from xqa.records import Question

_SUFFIXES = (".json", ".jsonl")
#: Gold files in a folder: xqa's JSON layouts and DPR's question TSV (``nq-test.qa.csv``).
_GOLD_SUFFIXES = (".json", ".jsonl", ".tsv", ".csv", ".jsonl.gz", ".tsv.gz", ".csv.gz")


def expand_paths(paths: Iterable[str | Path], what: str,
                 suffixes: tuple[str, ...] = _SUFFIXES) -> list[Path]:
    """Files named by ``paths``; a folder stands for its files ending in ``suffixes`` (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file()
                           and f.name.lower().endswith(suffixes))
            if not found:
                raise XqaError(f"{p}: folder holds no {what} files (none ends in {', '.join(suffixes)})")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such {what} file or folder")
    return out


# ----------------------------------------------------------------------------- gold


def load_gold(paths: Iterable[str | Path], lang: str | None = None) -> list[Question]:
    """Gold questions from files or folders (any layout ``xqa.io.read_questions`` reads).

    ``lang``: the language of records that carry none; ``"auto"``: each one's identified
    (:func:`xqa.cli_options.identify_languages`; ``und`` where none is). Every question's language
    is a code :func:`xqa.io.read_questions` knows (a typo such as ``jp`` is an error naming the
    file and line); one the metric has no rule for (``und``, ``uk``) is kept here and left out of
    the scores by :func:`unscored`. Duplicate ids across files are an error: they would be scored
    twice.
    """
    from xqa.records import AUTO_LANG

    read: list[tuple[Path, Question]] = []
    seen: dict[str, Path] = {}
    for path in nonempty_files(expand_paths(paths, "gold", _GOLD_SUFFIXES)):
        for q in read_questions(path, lang=lang, auto=True):
            if q.id in seen:
                raise InputError(path, None, f"question id {q.id!r} also appears in {seen[q.id]}")
            seen[q.id] = path
            read.append((path, q))
    if lang == AUTO_LANG:
        from xqa.cli_options import identify_languages

        read = list(zip([path for path, _ in read], identify_languages([q for _, q in read])))
    return [q for _, q in read]


def unscored(gold: Sequence[Question]) -> tuple[list[Question], dict[str, int]]:
    """``gold`` less the questions of a language the metric has no rule for (``und``, of no
    identified language; a code xqa reads that neither the MIA scripts nor MLQA/XQuAD score, such
    as ``uk``), and how many of each language those were: how answers are split into words is
    defined per language, and a wrong split would score them wrong."""
    kept = [q for q in gold if q.lang in KNOWN_LANGUAGES]
    left = Counter(q.lang for q in gold if q.lang not in KNOWN_LANGUAGES)
    return kept, dict(sorted(left.items()))


# ----------------------------------------------------------------------------- predictions


class Predictions(Mapping[str, "str | None"]):
    """Question id → predicted answer, merged from one or more files.

    A key given different answers by two files (MKQA files keyed by the bare
    number, merged across languages) is *ambiguous*: looking it up is an error
    rather than a silent pick of one language's answer.
    """

    def __init__(self) -> None:
        self._answers: dict[str, str | None] = {}
        self._source: dict[str, str] = {}
        self._ambiguous: dict[str, tuple[str, str]] = {}

    def add(self, key: str, answer: str | None, source: str) -> None:
        if key in self._answers and self._answers[key] != answer:
            self._ambiguous[key] = (self._source[key], source)
            return
        self._answers[key] = answer
        self._source[key] = source

    def __getitem__(self, key: str) -> str | None:
        if key in self._ambiguous:
            a, b = self._ambiguous[key]
            raise XqaError(f"prediction id {key!r} has different answers in {a} and {b}; "
                           "key MKQA predictions by the full id (<number>_<lang>) or score "
                           "one language at a time")
        return self._answers[key]

    def __contains__(self, key: object) -> bool:
        return key in self._answers

    def __iter__(self) -> Iterator[str]:
        return iter(self._answers)

    def __len__(self) -> int:
        return len(self._answers)


def _add_prediction(preds: Predictions, path: Path, key: Any, value: Any, line: int | None) -> None:
    if value is not None and not isinstance(value, str):
        raise InputError(path, line, f"answer for id {key!r} is {json_type(value)}, "
                         "expected a string (or null for no answer)")
    preds.add(str(key), value, str(path))


def load_predictions(paths: Iterable[str | Path]) -> Predictions:
    """Read predictions in the MIA layout from files and folders.

    Accepted per file:

    * a JSON object ``{id: answer}`` (the MIA prediction file; one per language
      or one for everything);
    * a JSON object of such objects (the MIA eval.ai submission:
      ``{"xor-tydi": {...}, "mkqa-ja": {...}}``);
    * JSONL of answer records ``{"id": ..., "answer": ...}`` (``Answer.to_dict``);

    a folder holds such files, and an ``xqa answer`` folder stands for its ``predictions.json``.

    ``null`` answers count as missing. An empty file, an id given twice in one
    file (a repeated key in a JSON object included) and an empty id are errors.
    """
    preds = Predictions()
    # an xqa answer folder (records.jsonl, run.json, ...) stands for its predictions.json
    paths = list(paths)
    for p in paths:
        if (Path(p) / "run.json").is_file() and not (Path(p) / "predictions.json").is_file():
            raise XqaError(f"{p}: an xqa answer run that has not finished (no predictions.json, which it writes "
                           f"when every question is answered): run the same xqa answer command again to finish it")
    paths = [Path(p) / "predictions.json" if (Path(p) / "records.jsonl").is_file()
             and (Path(p) / "predictions.json").is_file() else p for p in paths]
    for path in expand_paths(paths, "prediction"):
        if path.stat().st_size == 0:
            raise InputError(path, None, "the file is empty")
        if format_suffix(path) == ".jsonl":
            seen: dict[str, int] = {}
            for line_no, obj in _jsonl_objects(path):
                if "answer" not in obj:
                    raise InputError(path, line_no, "prediction record needs 'id' and 'answer'")
                key = record_id(obj, path, line_no)
                if key in seen:
                    raise InputError(path, line_no, f"duplicate prediction id {key!r} (first at line {seen[key]})")
                seen[key] = line_no
                _add_prediction(preds, path, key, obj["answer"], line_no)
            if not seen:
                raise InputError(path, None, "holds no predictions (only blank lines)")
            continue
        data = _json_document(path)
        if not isinstance(data, dict):
            raise InputError(path, 1, f"expected a JSON object id -> answer, found {json_type(data)}")
        for key, value in data.items():
            if isinstance(value, dict):  # a submission file: one object per part/language
                fields = [k for k in ("text", "answer", "prediction_text", "prediction") if isinstance(value.get(k), str)]
                if fields and not any(isinstance(v, str) and k not in fields for k, v in value.items()):
                    raise InputError(path, _line_of_key(path, key), f"the prediction for {key!r} is an object "
                                     f"with {fields[0]!r}; a prediction file maps each id to its answer text "
                                     f"({{\"{key}\": \"...\"}}), or is JSONL of {{\"id\", \"answer\"}} records")
                for k, v in value.items():
                    _add_keyed_prediction(preds, path, k, v)
            else:
                _add_keyed_prediction(preds, path, key, value)
    return preds


def _add_keyed_prediction(preds: Predictions, path: Path, key: str, value: Any) -> None:
    """One ``"id": answer`` pair of a JSON object; an error names the line of its key."""
    try:
        if not key.strip():
            raise InputError(path, None, "a prediction has an empty id (key \"\")")
        _add_prediction(preds, path, key, value, None)
    except InputError as e:
        raise InputError(path, _line_of_key(path, key), str(e).split(": ", 1)[1]) from None


def _line_of_key(path: Path, key: str) -> int | None:
    """The line where ``"key":`` first appears in the JSON file ``path`` (for messages)."""
    import re

    text = read_text(path)
    m = re.search(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:", text)
    if m is None:
        m = re.search(re.escape(json.dumps(key)) + r"\s*:", text)
    return text.count("\n", 0, m.start()) + 1 if m else None


# ----------------------------------------------------------------------------- retrieval results


def load_retrieval_results(path: str | Path, default_lang: str | None = None) -> list[dict[str, Any]]:
    """Retrieval results (DPR/FiD layout) as plain dicts, from a JSON list (``.json``) or JSONL.

    Each record needs ``answers`` and ``ctxs`` (a list of objects with at least ``text``);
    ``lang`` falls back to ``default_lang`` and must be a known code. Unlike
    ``xqa.io.read_results`` this accepts records without an ``id``, a ``question`` or ``lang``
    (DPR's own result files: a record without ``id`` is ``{file stem}:{n}``, n its place from
    0, as a JSON list of questions without ids numbers them) and keeps every extra field
    (``positive_ids``, ``positive_ctxs``) as it is.
    """
    path = Path(path)
    if path.is_dir():
        raise XqaError(f"{path}: expected a retrieval-result file, found a folder")
    if format_suffix(path) == ".jsonl":
        if path.stat().st_size == 0:
            raise InputError(path, None, "the file is empty")
        records = list(_jsonl_objects(path))
        if not records:
            raise InputError(path, None, "holds no retrieval results (only blank lines)")
    else:
        records = json_list_items(path)
    out = []
    seen: dict[str, int | None] = {}
    for i, (line_no, obj) in enumerate(records):
        where = "record"
        if not isinstance(obj, dict):
            raise InputError(path, line_no, f"{where}: expected an object, found {json_type(obj)}")
        for key in ("answers", "ctxs"):
            if key not in obj:
                raise InputError(path, line_no, f"{where}: retrieval result lacks {key!r}")
        if "id" not in obj:   # DPR's dense_retriever writes none
            obj["id"] = f"{file_stem(path)}:{i}"
        rid = record_id(obj, path, line_no)
        if rid in seen:
            raise InputError(path, line_no, f"duplicate question id {rid!r} (first at line {seen[rid]})")
        seen[rid] = line_no
        if not isinstance(obj["ctxs"], list) or not all(
                isinstance(c, dict) and isinstance(c.get("text"), str) for c in obj["ctxs"]):
            raise InputError(path, line_no, f"{where}: 'ctxs' must be a list of objects with a string 'text'")
        if not isinstance(obj["answers"], list) or not all(isinstance(a, str) for a in obj["answers"]):
            raise InputError(path, line_no, f"field 'answers' should be a list of strings, found "
                                            f"{json_type(obj['answers'])}")
        lang = obj.get("lang") or default_lang
        if lang is None:
            raise InputError(path, line_no, f"{where}: no 'lang'; pass a default language")
        try:
            obj["lang"] = check_language(lang)
        except XqaError as e:
            raise InputError(path, line_no, f"{where}: {e}") from None
        out.append(obj)
    return out


# ----------------------------------------------------------------------------- JSON helpers


def _json_document(path: Path) -> Any:
    """The JSON value in ``path``: UTF-8, not empty, no key twice in one object."""
    return json_document(path)


def parse_sweep(specs: list[str]) -> dict[int, Path]:
    """Predictions per number of passages read: ``N=PATH`` specs, ``xqa answer`` folders (N from
    their ``run.json``), or JSON files ``{"N": "predictions path"}`` (paths relative to that file)."""
    out: dict[int, Path] = {}

    def put(n: Any, path: Path, where: str) -> None:
        try:
            k = int(n)
        except (TypeError, ValueError):
            raise XqaError(f"{where}: number of passages {n!r} is not an integer") from None
        if k < 1 or k in out:
            raise XqaError(f"{where}: number of passages {k} is not positive or given twice")
        out[k] = path

    for spec in specs:
        n, sep, path = spec.partition("=")
        if sep:
            put(n, Path(path), f"--sweep {spec}")
            continue
        p = Path(spec)
        if p.is_dir():   # an xqa answer folder: its run.json says how many passages it read
            try:
                settings = json.loads((p / "run.json").read_text(encoding="utf-8"))["settings"]
                n = settings["answer"]["n_passages"]
            except (OSError, ValueError, KeyError, TypeError):
                raise XqaError(f"{p}: a folder without an xqa answer run.json saying how many passages were "
                               f"read; give it as N={p}") from None
            put(n, p, f"--sweep {spec} (its run.json)")
            continue
        if not p.is_file():
            raise FileNotFoundError(f"{p}: --sweep expects N=PATH, an xqa answer folder or a JSON file; no such file")
        try:
            mapping = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise InputError(p, e.lineno, f"invalid JSON: {e.msg}") from None
        if not isinstance(mapping, dict):
            raise InputError(p, 1, "expected a JSON object {number of passages: predictions path}")
        for n, rel in mapping.items():
            if not isinstance(rel, str):
                raise InputError(p, None, f"value for {n!r} must be a path string")
            put(n, p.parent / rel, str(p))
    return out
