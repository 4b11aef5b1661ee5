"""A generated battery of malformed user files, over every reader of a user's file.

Each reader (questions and passages in every layout, retrieval results,
predictions, gold, ``pipeline.json``, the answer label table) gets a valid
file of three records, then the same file spoiled one way at a time: bytes
that are not UTF-8, binary junk, empty, truncated, a huge line, a record of
the wrong type, a missing, null, empty or repeated id, a field of the wrong
type, an unknown language code. A spoiled file must raise one user error
(``XqaError``) naming the file, the line where the reader can know it, and
what is wrong; a file the reader can take (UTF-16 declared by its byte-order
mark, a UTF-8 byte-order mark, a 1 MB line) must read as its plain twin.
The readers run in-process; a few cases go through the CLI to check that the
command prints one line, exits 1 and writes nothing.
"""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from xqa.errors import XqaError

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- renderers


def _jsonl(records: list) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _json_list(records: list) -> str:  # item i on line i + 2
    return "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n"


def _json_object(records: list) -> str:  # records are (key, value) pairs; pair i on line i + 2
    return "{\n" + ",\n".join(f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
                              for k, v in records) + "\n}\n"


def _tsv(records: list) -> str:  # header on line 1, row i on line i + 2
    return "id\ttext\ttitle\n" + "".join("\t".join(map(str, r)) + "\n" for r in records)


def _squad(records: list) -> str:  # records are qas of one paragraph; pretty-printed, no line per record
    return json.dumps({"version": "1", "data": [{"title": "Genève", "paragraphs": [
        {"context": "Genève est une ville de Suisse. Zürich aussi.", "qas": records}]}]},
        ensure_ascii=False, indent=1)


def _pipeline(records: list) -> str:
    return json.dumps(records[0], ensure_ascii=False, indent=1)


# ----------------------------------------------------------------------------- readers


def _read_passages(path, **kw):
    from xqa.io import read_passages

    return list(read_passages(path, **kw))


def _read_questions(path):
    from xqa.io import read_questions

    return read_questions(path)


def _read_results(path):
    from xqa.io import read_results

    return read_results(path)


def _load_predictions(path):
    from xqa.evaluation.inputs import load_predictions

    return dict(load_predictions([path]))


def _load_gold(path):
    from xqa.evaluation.inputs import load_gold

    return load_gold([path])


def _load_eval_results(path):
    from xqa.evaluation.inputs import load_retrieval_results

    return load_retrieval_results(path)


def _load_pipeline(path):
    from xqa.config import PipelineConfig

    return PipelineConfig.load(path).to_dict()


def _load_labels(path):
    from xqa.world.labels import AnswerLabels

    return AnswerLabels.load(path).labels


# ----------------------------------------------------------------------------- formats


def _q(i: int, **kw) -> dict:
    return {"id": f"q{i}", "question": f"Où est Genève {i} ?", "answers": ["Suisse"], "lang": "fr", **kw}


def _ctx(i: int) -> dict:
    return {"id": f"p{i}", "title": "Genève", "text": "Genève est en Suisse.", "lang": "fr", "score": 1.5,
            "source": "sparse"}


@dataclass
class Format:
    name: str
    suffix: str
    records: list
    render: Callable[[list], str]
    read: Callable[[Path], Any]
    line_of: Callable[[int], int | None]  # record index -> line where it starts (None: not told)
    text_key: str | None = None  # a string field of record 1 for the huge-but-valid line
    mutations: list[tuple[str, Callable[[Any], Any], str]] = field(default_factory=list)  # (label, record 1 -> record 1, expected)
    stem: str = "input"  # SQuAD files name their language: xquad.fr.json

    def path(self, folder: Path, stem: str | None = None) -> Path:
        return folder / f"{stem or self.stem}{self.suffix}"


def _set(key, value):
    def f(rec):
        rec = dict(rec)
        rec[key] = value
        return rec
    return f


def _drop(key):
    def f(rec):
        rec = dict(rec)
        rec.pop(key, None)
        return rec
    return f


_ID_CASES = [("id-missing", _drop("id"), "'id'"), ("id-null", _set("id", None), "'id' is null"),
             ("id-list", _set("id", ["q"]), "'id'"), ("id-bool", _set("id", True), "'id'"),
             ("id-empty", _set("id", "  "), "'id' is empty"), ("id-object", _set("id", {"a": 1}), "'id'")]
_LANG_CASES = [("lang-unknown", _set("lang", "xx"), "unknown language code 'xx'"),
               ("lang-number", _set("lang", 7), "unknown language code 7"),
               ("lang-typo-jp", _set("lang", "jp"), "unknown language code 'jp'")]
_QUESTION_CASES = [
    ("answers-string", _set("answers", "Paris"), "'answers' should be a list of strings, found a string"),
    ("answers-number", _set("answers", 3), "'answers' should be a list"),
    ("answers-null", _set("answers", None), "'answers' should be a list"),
    ("answers-item-number", _set("answers", ["a", 3]), "answer 1"),
    ("answers-item-null", _set("answers", [None]), "answer 0"),
    ("answers-en-string", _set("answers_en", "Paris"), "'answers_en' should be a list"),
    ("question-missing", _drop("question"), "missing field 'question'"),
    ("question-null", _set("question", None), "'question' is null"),
    ("question-number", _set("question", 5), "'question' should be a string"),
    ("question-list", _set("question", ["a"]), "'question' should be a string"),
    ("lang-missing", _drop("lang"), "missing field 'lang'"),
]
_PASSAGE_CASES = [
    ("text-missing", _drop("text"), "missing field 'text'"),
    ("text-null", _set("text", None), "'text' is null"),
    ("text-number", _set("text", 1.5), "'text' should be a string"),
    ("text-list", _set("text", ["a"]), "'text' should be a string"),
    ("title-number", _set("title", 2), "'title' should be a string"),
    ("lang-missing", _drop("lang"), "missing field 'lang'"),
]
_CTX_CASES = [
    ("ctxs-missing", _drop("ctxs"), "'ctxs'"),
    ("ctxs-object", _set("ctxs", {"id": "p"}), "'ctxs'"),
    ("ctx-not-object", _set("ctxs", ["p1"]), "ctxs[0]"),
    ("ctx-id-null", _set("ctxs", [{**_ctx(1), "id": None}]), "ctxs[0]: field 'id' is null"),
    ("ctx-id-missing", _set("ctxs", [{k: v for k, v in _ctx(1).items() if k != "id"}]), "ctxs[0]: missing field 'id'"),
    ("ctx-score-string", _set("ctxs", [{**_ctx(1), "score": "high"}]), "'score' should be a number"),
    ("ctx-text-number", _set("ctxs", [{**_ctx(1), "text": 3}]), "'text' should be a string"),
]


def _duplicate_of_first(key="id"):
    return ("id-duplicate", None, "duplicate")  # record 1 takes record 0's id (handled in _spoil)


def _formats() -> list[Format]:
    passages = [{"id": f"p{i}", "title": "Genève", "text": f"Genève est en Suisse {i}.", "lang": "fr"} for i in range(3)]
    pyserini = [{"id": f"p{i}", "contents": f"Zürich\nZürich est en Suisse {i}.", "lang": "de"} for i in range(3)]
    questions = [_q(i) for i in range(3)]
    results = [{**_q(i), "ctxs": [_ctx(i)]} for i in range(3)]
    eval_results = [{"id": f"q{i}", "answers": ["Suisse"], "lang": "fr", "ctxs": [_ctx(i)]} for i in range(3)]
    labels = [{"id": f"city/{i}", "labels": {"fr": f"Genève{i}", "de": f"Genf{i}"}} for i in range(3)]
    id_lang = _ID_CASES + _LANG_CASES
    return [
        Format("passages-jsonl", ".jsonl", passages, _jsonl, _read_passages, lambda i: i + 1, "text",
               id_lang + _PASSAGE_CASES),
        Format("passages-pyserini", ".jsonl", pyserini, _jsonl, _read_passages, lambda i: i + 1, "contents",
               id_lang + [("contents-number", _set("contents", 4), "'contents' should be a string"),
                          ("contents-null", _set("contents", None), "'contents' is null")]),
        Format("passages-dpr-tsv", ".tsv", [[f"p{i}", f"Genève est en Suisse {i}.", "Genève"] for i in range(3)],
               _tsv, lambda p: _read_passages(p, lang="fr"), lambda i: i + 2, None,
               [("two-columns", lambda r: r[:2], "expected 3 tab-separated columns"),
                ("id-empty", lambda r: ["", *r[1:]], "'id' is empty")]),
        Format("questions-xor-jsonl", ".jsonl", questions, _jsonl, _read_questions, lambda i: i + 1, "question",
               id_lang + _QUESTION_CASES),
        Format("questions-nq-open", ".jsonl", [{"question": f"where is genève {i}", "answer": ["Switzerland"]}
                                                for i in range(3)],
               _jsonl, _read_questions, lambda i: i + 1, "question",
               [("answer-string", _set("answer", "Switzerland"), "'answer' should be a list of strings"),
                ("answer-number", _set("answer", 1), "'answer' should be a list"),
                ("question-number", _set("question", 1), "'question' should be a string"),
                ("id-null", _set("id", None), "'id' is null")]),
        Format("questions-squad", ".json", [{"id": f"s{i}", "question": f"Où {i} ?",
                                             "answers": [{"text": "Suisse", "answer_start": 25}]} for i in range(3)],
               _squad, _read_questions, lambda i: None, "question",
               [("qa-id-null", _set("id", None), "qas[1]: field 'id' is null"),
                ("qa-id-missing", _drop("id"), "qas[1]: missing field 'id'"),
                ("qa-question-missing", _drop("question"), "qas[1].question should be a string"),
                ("qa-question-number", _set("question", 1), "qas[1].question should be a string"),
                ("qa-answers-text-number", _set("answers", [{"text": 1}]), "qas[1].answers[0].text"),
                ("qa-answer-not-object", _set("answers", ["Suisse"]), "qas[1].answers[0] should be an object")],
               stem="xquad.fr"),
        Format("questions-entityquestions", ".json", [{"question": f"Where is {i}?", "answers": ["Zürich"]}
                                                      for i in range(3)],
               _json_list, _read_questions, lambda i: i + 2, "question",
               [("answers-string", _set("answers", "Zürich"), "'answers' should be a list of strings"),
                ("id-null", _set("id", None), "'id' is null"),
                ("question-missing", _drop("question"), "missing field 'question'"),
                ("lang-unknown", _set("lang", "xx"), "unknown language code 'xx'")]),
        Format("results-jsonl", ".jsonl", results, _jsonl, _read_results, lambda i: i + 1, "question",
               id_lang + _QUESTION_CASES[:5] + _CTX_CASES),
        Format("results-json", ".json", results, _json_list, _read_results, lambda i: i + 2, "question",
               _ID_CASES[:3] + _CTX_CASES[:4]),
        Format("predictions-json", ".json", [(f"q{i}", "Genève") for i in range(3)], _json_object,
               _load_predictions, lambda i: i + 2, None,
               [("answer-number", lambda kv: (kv[0], 3), "answer for id 'q1' is a number"),
                ("answer-list", lambda kv: (kv[0], ["a"]), "is a list"),
                ("answer-object-in-submission", lambda kv: (kv[0], {"x": 1}), "is a number"),
                ("key-empty", lambda kv: ("", kv[1]), "empty id")]),
        Format("predictions-jsonl", ".jsonl", [{"id": f"q{i}", "answer": "Genève"} for i in range(3)], _jsonl,
               _load_predictions, lambda i: i + 1, "answer",
               _ID_CASES + [("answer-missing", _drop("answer"), "needs 'id' and 'answer'"),
                            ("answer-number", _set("answer", 3), "is a number")]),
        Format("gold-jsonl", ".jsonl", questions, _jsonl, _load_gold, lambda i: i + 1, "question",
               id_lang + _QUESTION_CASES),
        # (a record without an id is DPR's own output: numbered, test_evaluation)
        Format("eval-results-jsonl", ".jsonl", eval_results, _jsonl, _load_eval_results, lambda i: i + 1, None,
               _ID_CASES[1:] + [("answers-string", _set("answers", "Suisse"), "'answers' should be a list of strings"),
                            ("lang-unknown", _set("lang", "xx"), "unknown language code 'xx'"),
                            ("ctx-text-missing", _set("ctxs", [{"id": "p"}]), "'ctxs' must be a list"),
                            ("ctxs-string", _set("ctxs", "p1"), "'ctxs' must be a list")]),
        Format("eval-results-json", ".json", eval_results, _json_list, _load_eval_results, lambda i: i + 2, None,
               _ID_CASES[1:3] + [("answers-string", _set("answers", "Suisse"), "'answers' should be a list")]),
        Format("pipeline-json", ".json", [{"passages": "p.jsonl", "retrieval": {"method": "sparse", "k": 10},
                                           "reader": {"n_passages": 2}, "languages": ["fr", "de"]}],
               _pipeline, _load_pipeline, lambda i: None, None, []),
        Format("labels-jsonl", ".jsonl", labels, _jsonl, _load_labels, lambda i: i + 1, None,
               _ID_CASES[:3] + [
                   ("labels-missing", _drop("labels"), "'labels' should map"),
                   ("labels-list", _set("labels", ["Genève"]), "'labels' should map"),
                   ("labels-empty", _set("labels", {}), "'labels' is empty"),
                   ("labels-name-number", _set("labels", {"fr": 1}), "'labels' should map"),
                   ("labels-key-not-a-code", _set("labels", {"French!": "Genève"}), "not a language code"),
                   ("female-string", _set("female", "x"), "'female' should map")]),
    ]


_PIPELINE_CASES = [  # (label, config, expected)
    ("k-string", {"retrieval": {"k": "60"}}, "'retrieval.k' should be an integer, found a string"),
    ("k-float", {"retrieval": {"k": 1.5}}, "'retrieval.k' should be an integer"),
    ("alpha-string", {"retrieval": {"alpha": "1"}}, "'retrieval.alpha' should be a number"),
    ("fusion-number", {"reader": {"evidence_fusion": 1}}, "'reader.evidence_fusion' should be true or false"),
    ("passages-number", {"passages": 3}, "'passages' should be a string or null"),
    ("languages-string", {"languages": "fr"}, "'languages' should be a list"),
    ("languages-unknown", {"languages": ["fr", "xx"]}, "unknown language code 'xx'"),
    ("method-unknown", {"retrieval": {"method": "magic"}}, "retrieval.method 'magic'"),
    ("key-unknown", {"retreival": {}}, "unknown pipeline config keys"),
    ("key-base-dir", {"base_dir": "/data"}, "unknown pipeline config keys: ['base_dir'] (relative paths"),
    ("k-zero", {"retrieval": {"k": 0}}, "'retrieval.k' should be at least 1, found 0"),
    ("n-passages-zero", {"reader": {"n_passages": 0}}, "'reader.n_passages' should be at least 1, found 0"),
    ("beams-negative", {"readers": {"other": {"beams": -1}}}, "'readers.other.beams' should be at least 1"),
    ("reader-key-unknown", {"reader": {"n_pasages": 2}}, "unknown keys in pipeline config 'reader'"),
    ("retrieval-list", {"retrieval": []}, "'retrieval' must be an object"),
    ("duplicate-key", None, "key 'k' occurs twice"),
    ("order-unknown", {"retrieval": {"corroborated_order": "foo"}},
     "'retrieval.corroborated_order' should be one of dense, sparse, found 'foo'"),
    ("max-frac-over-one", {"retrieval": {"max_frac": 1.5}}, "'retrieval.max_frac' should be a fraction in [0, 1]"),
    ("alpha-nan", {"retrieval": {"alpha": float("nan")}}, "'retrieval.alpha' should be a finite number, found nan"),
    ("miss-zero", {"reader": {"miss": 0}}, "'reader.miss' should be in (0, 1], found 0"),
    ("beta-infinite", {"readers": {"other": {"beta": float("inf")}}}, "'readers.other.beta' should be a finite number"),
    ("settings-unknown", {"retrieval": {"settings": {"bogus": 1}}},
     "'retrieval.settings': 'bogus' is a setting of no retrieval method"),
    ("example-string", {"examples": ["what?"]}, "'examples[0]' should be an object"),
    ("example-no-question", {"examples": [{"lang": "en"}]}, "'examples[0]': 'question' should be the text"),
    ("about-passages-string", {"about": {"passages": "many"}}, "'about.passages' should be a count of passages"),
    ("reader-a-file", {"reader": {"model": "pipeline.json"}, "readers": {"fid": {"model": "readers/fid"}}},
     "field 'reader.model': pipeline.json is a file, not a reader"),
]


# ----------------------------------------------------------------------------- spoiling

_GENERIC = ["invalid-utf8", "latin-1", "binary", "empty", "blank-lines", "truncated", "huge-garbage-line",
            "record-list", "record-number", "record-string", "record-null", "id-duplicate", "lone-surrogate"]
_READABLE = ["utf-16-bom", "utf-8-bom", "huge-valid-line"]


def _bytes_with_byte_at(text: str, line: int, junk: bytes = b"\xff\xfe") -> bytes:
    """``text`` as UTF-8 with ``junk`` inserted inside the first string of ``line`` (1-based)."""
    lines = text.encode("utf-8").split(b"\n")
    at = lines[line - 1].find(b'"') + 1  # 0 when the line has no string (TSV)
    lines[line - 1] = lines[line - 1][:at] + junk + lines[line - 1][at:]
    return b"\n".join(lines)


def _replace_line(fmt: Format, text: str, replacement: str) -> str:
    line = fmt.line_of(1)
    lines = text.split("\n")
    tail = "," if fmt.render in (_json_list, _json_object) else ""
    lines[line - 1] = replacement + tail
    return "\n".join(lines)


def _spoil(fmt: Format, case: str) -> tuple[bytes, int | None, str]:
    """(file bytes, line the error must name or None, a regex the message must match)."""
    records = copy.deepcopy(fmt.records)
    text = fmt.render(records)
    line = fmt.line_of(1)
    if case == "invalid-utf8":
        target = line or 3
        return _bytes_with_byte_at(text, target), target, r"not valid UTF-8 \(byte 0xff"
    if case == "lone-surrogate":   # a JSON escape of half a surrogate pair: valid JSON, not text
        target = line or 3
        return _bytes_with_byte_at(text, target, b"\\ud83d"), target, r"holds \\ud83d, one half of a surrogate pair"
    if case == "latin-1":
        data = text.encode("latin-1")
        first = next(i for i, ch in enumerate(text) if ord(ch) > 127)
        return data, text.count("\n", 0, first) + 1, "not valid UTF-8"
    if case == "binary":
        return bytes(range(256)) * 4, None, r"not valid UTF-8|invalid JSON|expected"
    if case == "empty":
        return b"", None, "the file is empty"
    if case == "blank-lines":
        return b"\n   \n\t\n", None, r"empty|holds no"
    if case == "truncated":
        data = text.rstrip("\n").encode("utf-8")
        cut = data[: len(data) - max(2, len(data) // 4)]  # inside the last record
        return cut.decode("utf-8", "ignore").encode("utf-8"), None, r"invalid JSON|expected"
    if case == "huge-garbage-line":
        return (_replace_line(fmt, text, "{" + "x" * 2_000_000).encode("utf-8"), line,
                "expected 3 tab-separated columns" if fmt.render is _tsv else "invalid JSON")
    if case.startswith("record-"):
        value = {"record-list": [1, 2], "record-number": 42, "record-string": "q", "record-null": None}[case]
        # in a JSON object (predictions) a bare value where a "key": value pair belongs is invalid JSON
        return _replace_line(fmt, text, json.dumps(value)).encode("utf-8"), line, r"expected|should be|invalid JSON"
    if case == "id-duplicate":
        if fmt.render is _json_object:
            records[1] = (records[0][0], "autre")
            return fmt.render(records).encode("utf-8"), line, "occurs twice"
        if fmt.render is _tsv:
            records[1][0] = records[0][0]
        elif fmt.name == "questions-nq-open" or fmt.name == "questions-entityquestions":
            for r in records[:2]:
                r["id"] = "same"
        else:
            records[1]["id"] = records[0]["id"]
        return fmt.render(records).encode("utf-8"), line, "duplicate .*id|(first at line|earlier)"
    raise AssertionError(case)


def _generic_cases():
    for fmt in _formats():
        if fmt.name == "pipeline-json":
            continue
        for case in _GENERIC:
            if fmt.name == "passages-dpr-tsv" and case in ("truncated", "record-list", "record-number",
                                                           "record-string", "record-null", "lone-surrogate"):
                continue  # a TSV line is not JSON: covered by its own cases
            if fmt.name == "questions-squad" and case in ("huge-garbage-line", "record-list", "record-number",
                                                          "record-string", "record-null", "id-duplicate"):
                continue  # one pretty-printed document: covered by its own cases (ids: below)
            yield pytest.param(fmt.name, case, id=f"{fmt.name}-{case}")


def _field_cases():
    for fmt in _formats():
        for label, _, _ in fmt.mutations:
            yield pytest.param(fmt.name, label, id=f"{fmt.name}-{label}")


def _readable_cases():
    for fmt in _formats():
        for case in _READABLE:
            if case == "huge-valid-line" and fmt.text_key is None:
                continue
            yield pytest.param(fmt.name, case, id=f"{fmt.name}-{case}")


_BY_NAME = {f.name: f for f in _formats()}


def _check(path: Path, fmt: Format, data: bytes, line: int | None, pattern: str) -> None:
    path.write_bytes(data)
    with pytest.raises(XqaError) as e:
        fmt.read(path)
    message = str(e.value)
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(str(path)), message[:300]
    if line is not None:
        assert message.startswith(f"{path}:{line}:"), message[:300]
    assert re.search(pattern, message), message[:300]


@pytest.mark.parametrize("fmt_name, case", list(_generic_cases()))
def test_spoiled_file_is_a_clear_error(tmp_path, fmt_name, case):
    fmt = _BY_NAME[fmt_name]
    data, line, pattern = _spoil(fmt, case)
    _check(fmt.path(tmp_path), fmt, data, line, pattern)


@pytest.mark.parametrize("fmt_name, label", list(_field_cases()))
def test_spoiled_field_is_named(tmp_path, fmt_name, label):
    fmt = _BY_NAME[fmt_name]
    mutate, expected = next((m, e) for name, m, e in fmt.mutations if name == label)
    records = copy.deepcopy(fmt.records)
    records[1] = mutate(records[1])
    _check(fmt.path(tmp_path), fmt, fmt.render(records).encode("utf-8"), fmt.line_of(1), re.escape(expected))


@pytest.mark.parametrize("fmt_name, case", list(_readable_cases()))
def test_declared_encodings_and_huge_lines_read_as_their_plain_twin(tmp_path, fmt_name, case):
    fmt = _BY_NAME[fmt_name]
    records = copy.deepcopy(fmt.records)
    if case == "huge-valid-line":
        records[1][fmt.text_key] = records[1][fmt.text_key] + " Genève" * 150_000  # ~1 MB
    text = fmt.render(records)
    (tmp_path / "plain").mkdir()
    plain, spoiled = fmt.path(tmp_path / "plain"), fmt.path(tmp_path)
    plain.write_text(text, encoding="utf-8")
    data = {"utf-16-bom": lambda: text.encode("utf-16"),  # Python writes the byte-order mark
            "utf-8-bom": lambda: b"\xef\xbb\xbf" + text.encode("utf-8"),
            "huge-valid-line": lambda: text.encode("utf-8")}[case]()
    spoiled.write_bytes(data)
    got, want = fmt.read(spoiled), fmt.read(plain)
    assert got == want
    if case == "huge-valid-line":
        assert len(json.dumps(got, default=str)) > 1_000_000


@pytest.mark.parametrize("label, config, expected", _PIPELINE_CASES, ids=[c[0] for c in _PIPELINE_CASES])
def test_spoiled_pipeline_config_names_the_file_and_field(tmp_path, label, config, expected):
    path = tmp_path / "pipeline.json"
    if config is None:
        path.write_text('{"retrieval": {"k": 1,\n "k": 2}}', encoding="utf-8")
        line = 2
    else:
        path.write_text(json.dumps(config), encoding="utf-8")
        line = None
    _check(path, _BY_NAME["pipeline-json"], path.read_bytes(), line, re.escape(expected))


def test_the_battery_is_large():
    n = (len(list(_generic_cases())) + len(list(_field_cases())) + len(list(_readable_cases()))
         + len(_PIPELINE_CASES))
    assert n >= 200, n


def test_questions_repeated_across_files_name_both(tmp_path):
    from xqa.io import read_question_files

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(_jsonl([_q(1)]), encoding="utf-8")
    b.write_text(_jsonl([_q(2), _q(1)]), encoding="utf-8")
    with pytest.raises(XqaError, match=r"b\.jsonl: question id 'q1' also occurs in .*a\.jsonl"):
        read_question_files([a, b])


def test_an_empty_file_among_question_files_is_passed_over_with_a_warning(tmp_path):
    """MIA's test questions hold an empty mkqa-pt.jsonl beside the others: the set is read,
    saying so; an empty file alone is still an error, for answering and for scoring."""
    from xqa.evaluation.inputs import load_gold
    from xqa.io import read_question_files

    a, empty = tmp_path / "a.jsonl", tmp_path / "mkqa-pt.jsonl"
    a.write_text(_jsonl([_q(1), _q(2)]), encoding="utf-8")
    empty.write_text("")
    for read in (read_question_files, load_gold):
        with pytest.warns(UserWarning, match=r"mkqa-pt\.jsonl: the file is empty; no questions from it"):
            assert [q.id for q in read([a, empty])] == ["q1", "q2"]
        with pytest.raises(XqaError, match="the file is empty"):
            read([empty])
    with pytest.warns(UserWarning, match="the file is empty"):
        assert len(load_gold([tmp_path])) == 2   # a folder of them, as MIA ships it


def test_squad_ids_numbered_per_paragraph_become_unique_with_a_warning(tmp_path, capsys):
    path = tmp_path / "xquad.fr.json"
    doc = json.loads(_squad([{"id": "0", "question": "Où ?", "answers": []}]))
    doc["data"][0]["paragraphs"].append(copy.deepcopy(doc["data"][0]["paragraphs"][0]))
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert [q.id for q in _read_questions(path)] == ["xquad.fr:0:0:0", "xquad.fr:0:1:0"]
    assert "question ids repeat" in capsys.readouterr().err
    doc["data"][0]["paragraphs"][1]["qas"].append({"id": "0", "question": "Quand ?", "answers": []})
    path.write_text(json.dumps(doc), encoding="utf-8")  # repeated within one paragraph: no way to tell them apart
    capsys.readouterr()
    with pytest.raises(XqaError, match=r"xquad\.fr\.json: data\[0\]\.paragraphs\[1\]\.qas\[1\]: duplicate question id '0'"):
        _read_questions(path)
    assert "question ids repeat" not in capsys.readouterr().err   # no fallback promised that is not taken


@pytest.mark.parametrize("answers, found", [(42, "a number"), ("Paris", "a string"), ({"text": "Paris"}, "an object")])
def test_squad_answers_that_are_no_list_are_named(tmp_path, answers, found):
    path = tmp_path / "xquad.fr.json"
    path.write_text(_squad([{"id": "0", "question": "Où ?", "answers": answers}]), encoding="utf-8")
    with pytest.raises(XqaError, match=rf"xquad\.fr\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\]\.answers should "
                                       rf"be a list of objects .*, found {found}"):
        _read_questions(path)


def test_span_training_data_given_as_retrieval_results_says_which_reader_trains_on_it(tmp_path):
    from xqa.io import read_results

    path = tmp_path / "train.jsonl"
    path.write_text(_jsonl([{**_q(1), "answers": ["a"], "positive_ids": ["p1"]}]), encoding="utf-8")
    with pytest.raises(XqaError, match=r"train\.jsonl:1: missing field 'ctxs': .*--family span"):
        read_results(path)


def test_a_one_line_json_list_of_questions_gets_one_id_per_item(tmp_path):
    path = tmp_path / "P36.dev.json"
    path.write_text(json.dumps([{"question": "Where?", "answers": ["a"]}, {"question": "When?", "answers": []}]),
                    encoding="utf-8")
    assert [q.id for q in _read_questions(path)] == ["P36.dev:0", "P36.dev:1"]


def test_an_unknown_lang_option_is_an_error(tmp_path):
    p = tmp_path / "p.tsv"
    p.write_text(_tsv([["1", "t", "T"]]), encoding="utf-8")
    with pytest.raises(XqaError, match="'--lang': unknown language code 'french'"):
        _read_passages(p, lang="french")


def test_lang_auto_identifies_the_records_that_carry_no_language(tmp_path, monkeypatch):
    from xqa.cli_options import identify_languages
    from xqa.io import read_question_files

    jsonl = tmp_path / "mine.jsonl"
    jsonl.write_text(_jsonl([{"id": "a", "question": "Wer schrieb Faust?"},
                             {"id": "b", "question": "Qui a écrit Candide ?"},
                             {"id": "c", "question": "誰が書いた？", "lang": "ja"},
                             {"id": "d", "question": "北京在哪里？"},
                             {"id": "e", "question": "?!"}]), encoding="utf-8")
    squad = tmp_path / "mine.json"  # a SQuAD file whose name gives no language
    squad.write_text(_squad([{"id": "s", "question": "Wer malte die Mona Lisa?", "answers": []}]),
                     encoding="utf-8")
    with pytest.raises(XqaError, match="lang 'auto' leaves each question's language to identify: pass auto=True"):
        read_question_files([jsonl], lang="auto")        # a reader that identifies nothing next
    with pytest.raises(XqaError, match="lang 'auto' leaves each question's language to identify"):
        read_question_files([squad], lang="auto")
    read = read_question_files([jsonl, squad], lang="auto", auto=True)
    assert [q.lang for q in read] == ["auto", "auto", "ja", "auto", "auto", "auto"]  # the record's own kept
    found = {"Wer schrieb Faust?": "de", "Qui a écrit Candide ?": "fr", "北京在哪里？": "zh",
             "?!": "und", "Wer malte die Mona Lisa?": "de"}
    monkeypatch.setattr("xqa.langid.identify", lambda text: found[text])
    said = []
    qs = identify_languages(read, ["de", "ja", "zh_cn"], say=said.append)
    assert [(q.id, q.lang, q.meta.get("identified")) for q in qs] == [
        ("a", "de", None), ("b", "und", "fr"),           # no French index: searched as und, said
        ("c", "ja", None), ("d", "zh_cn", None),         # the pipeline's code for Chinese
        ("e", "und", None), ("s", "de", None)]
    assert said == ["--lang auto: 5 question(s) identified as de 2, und 1, und (fr) 1, zh_cn 1"]
    plain = read_question_files([jsonl], lang="de")  # a one-language --lang is unchanged
    assert [q.lang for q in plain] == ["de", "de", "ja", "de", "de"]
    with pytest.raises(XqaError, match=r"mine\.jsonl:1: missing field 'lang' .*--lang auto"):
        read_question_files([jsonl])


# ----------------------------------------------------------------------------- through the CLI


def _xqa(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "xqa.cli", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


@pytest.mark.parametrize("command, spoiled", [
    ("search", "not-utf8"), ("search", "null-id"), ("search", "duplicate-id"), ("search", "answers-string"),
    ("index-sparse", "not-utf8"), ("index-sparse", "duplicate-id"),
])
def test_cli_prints_one_line_and_writes_nothing(tmp_path, command, spoiled):
    good_q = [_q(i) for i in range(3)]
    if spoiled == "not-utf8":
        data, line, what = _bytes_with_byte_at(_jsonl(good_q), 2), 2, "not valid UTF-8"
    elif spoiled == "null-id":
        good_q[1]["id"] = None
        data, line, what = _jsonl(good_q).encode(), 2, "field 'id' is null"
    elif spoiled == "duplicate-id":
        good_q[2]["id"] = good_q[0]["id"]
        data, line, what = _jsonl(good_q).encode(), 3, "duplicate"
    else:
        good_q[1]["answers"] = "Paris"
        data, line, what = _jsonl(good_q).encode(), 2, "'answers' should be a list of strings"
    bad = tmp_path / "bad.jsonl"
    if command == "search":
        bad.write_bytes(data)
        out = tmp_path / "out.jsonl"
        r = _xqa("search", "--questions", str(bad), "--out", str(out), "--config", str(tmp_path / "none.json"),
                 "--sparse-index", str(tmp_path / "idx"), cwd=tmp_path)
    else:
        passages = [{"id": q["id"], "text": q["question"], "lang": "fr"} for q in good_q]
        text = _jsonl(passages)
        bad.write_bytes(_bytes_with_byte_at(text, 2) if spoiled == "not-utf8" else text.encode())
        out = tmp_path / "bm25"
        r = _xqa("index", "sparse", "--passages", str(bad), "--out", str(out), "--quiet", cwd=tmp_path)
    assert r.returncode == 1, r.stderr[-2000:]
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert err[-1].startswith("xqa ") and f"{bad}:{line}: " in err[-1] and what in err[-1], err
    assert not out.exists() or not (out / "config.json").exists()
    assert not (out.exists() and out.is_file())


def test_an_out_folder_holding_other_files_or_a_file_is_refused_and_left_as_it_was(tmp_path):
    """`xqa convert e5`, `reader unpack|kit`, `train tokenizer`, `index dhr` write their folder
    whole (temp + rename): they refuse an --out that holds what is not theirs to replace, and a
    file where a folder goes is named as such, not as "[Errno 17]"."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    a_file = tmp_path / "a-file"
    a_file.write_text("precious")
    passages = str(ROOT / "xqa" / "corpus" / "passages.jsonl.gz")
    for argv in (["convert", "e5"], ["reader", "unpack", "--base", str(tmp_path / "no-encoder")],
                 ["reader", "kit", "--data", str(tmp_path / "no-data"), "--base", str(tmp_path / "no-encoder")],
                 ["train", "tokenizer", "--passages", passages],
                 ["index", "dhr", "--dense", str(tmp_path / "no-index"), "--passages", passages]):
        r = _xqa(*argv, "--out", str(mine), cwd=tmp_path)
        assert r.returncode == 1, r.stderr[-2000:]
        assert f"{mine} holds other files (notes.txt) that writing" in r.stderr and "Traceback" not in r.stderr
        r = _xqa(*argv, "--out", str(a_file), cwd=tmp_path)
        assert r.returncode == 1 and f"{a_file} is a file;" in r.stderr, r.stderr[-2000:]
    r = _xqa("build", "--passages", passages, "--out",
             str(a_file / "sub"), cwd=tmp_path)
    assert r.returncode == 1 and "[Errno" not in r.stderr, r.stderr[-2000:]
    assert f"{a_file / 'sub'}: Not a directory (a part of that path is a file, not a folder" in r.stderr
    assert (mine / "notes.txt").read_text() == "precious" and a_file.read_text() == "precious"
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_a_tokenizer_too_small_for_its_texts_or_fed_a_bad_record_says_so_in_one_line(tmp_path):
    """SentencePiece's own failures (fewer pieces than characters) and a bad passage record read
    while it trains are xqa errors in words, not SentencePiece's RuntimeError, and leave no folder."""
    from xqa.errors import InputError, XqaError
    from xqa.tokenizer import train_tokenizer

    texts = [chr(c) * 3 for c in range(0x4E00, 0x4E00 + 300)]   # 300 characters, each needs a piece
    with pytest.raises(XqaError, match=r"--vocab-size 100 is too small: these texts need at least [3-9]\d\d pieces"):
        train_tokenizer(texts, tmp_path / "tok", vocab_size=100)

    def spoiled():
        yield from texts[:50]
        raise InputError("passages.jsonl", 51, "invalid JSON")

    with pytest.raises(InputError, match=r"^passages\.jsonl:51: invalid JSON$"):
        train_tokenizer(spoiled(), tmp_path / "tok", vocab_size=1000)
    assert not (tmp_path / "tok").exists()
    tok = train_tokenizer(texts, tmp_path / "tok", vocab_size=1000)
    assert (tok / "config.json").is_file()


def test_a_folder_that_is_not_a_model_or_a_config_that_is_not_a_pipelines_is_named_in_one_line(
        tiny_pipeline, tmp_path, capsys):
    """--init given a world, a file or a path that does not exist, --config given another
    artifact's config.json: one line that says what it is, not transformers' "Unrecognized model"
    traceback or the hub's "Repo id must be in the form" for a local path."""
    from xqa.cli import main

    world = tiny_pipeline.parent / "world"
    q, p = str(world / "test.jsonl"), str(world / "passages.jsonl")
    for init, said in ((world, f"{world}: an xqa 'world' artifact, not the encoder to start from"),
                       (tmp_path / "nope", f"{tmp_path / 'nope'}: no such folder (the encoder to start from)"),
                       (world / "test.jsonl", f"{world / 'test.jsonl'} is a file; the encoder to start from is a "
                                              "model folder")):
        assert main(["train", "retriever", "--init", str(init), "--train", q, "--passages", p,
                     "--out", str(tmp_path / "run"), "--max-steps", "1"]) == 1
        assert said in capsys.readouterr().err
    for family, what in (("span", "the encoder a span reader starts from"), ("fid", "a FiD reader or a T5/mT5 model")):
        own = ["--passages", p] if family == "span" else []   # (FiD's training results hold their passages)
        assert main(["train", "reader", "--family", family, "--init", str(world), "--train", q, *own,
                     "--out", str(tmp_path / "run")]) == 1
        assert f"{world}: an xqa 'world' artifact, not {what}" in capsys.readouterr().err
    # another family's reader, or its training run, is named as such (a FiD reader's config.json
    # has a model_type, and loading it as an encoder failed on its missing weights file)
    fid = tiny_pipeline.parent / "reader"
    for init, said in ((fid / "best", rf"{fid / 'best'}: an xqa 'fid_reader' artifact, not the encoder a span reader"),
                       (fid, rf"{fid}: a training run (of a FiD reader|whose best/ is an xqa 'fid_reader' artifact), "
                             r"not the encoder a span reader starts from")):
        assert main(["train", "reader", "--family", "span", "--init", str(init), "--train", q, "--passages", p,
                     "--out", str(tmp_path / "run")]) == 1
        assert re.search(said, capsys.readouterr().err)
    assert main(["ask", "what?", "--config", str(world / "config.json")]) == 1
    assert (f"{world / 'config.json'}: an xqa 'world' artifact's config, not a pipeline config"
            in capsys.readouterr().err)
    assert not (tmp_path / "run").exists()
