"""Reading and writing xqa's records in the formats the field uses.

Passages: JSONL ``{"id","title","text","lang"}`` (also Pyserini's ``{"id","contents"}``)
and DPR's TSV (``id, text, title``). Question sets: the XOR-TyDi / MIA / MKQA
JSONL layout, SQuAD JSON (XQuAD, MLQA, TyDi GoldP), NQ-open JSONL and
EntityQuestions JSON lists. Results: the DPR / FiD JSON layout with ``ctxs``, and
TREC run files.

Every malformed line is an :class:`~xqa.errors.InputError` naming ``file:line``;
nothing is skipped silently. Large passage files also load through HF ``datasets``
(Arrow, memory-mapped): see :func:`passages_dataset`.
"""
from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

from xqa.artifacts import write_text_atomic
from xqa.errors import InputError, XqaError, open_text
from xqa.errors import jsonl_objects as _jsonl
from xqa.records import Context, Passage, Question, RetrievalResult


def _load_json(path: str | Path) -> Any:
    with open_text(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise InputError(path, e.lineno, f"invalid JSON ({e.msg})") from None


def _require(obj: dict, key: str, path, line, kinds: type | tuple = str) -> Any:
    if key not in obj:
        raise InputError(path, line, f"missing field {key!r}")
    val = obj[key]
    if not isinstance(val, kinds):
        raise InputError(path, line, f"field {key!r} should be {kinds}, found {type(val).__name__}")
    return val


def _is_json_document(path: str | Path) -> bool:
    """True for one JSON document (a list or an object); False for JSONL."""
    path = Path(path)
    with open_text(path) as f:
        head = f.read(4096).lstrip()
    if head.startswith("["):
        return True
    if not head.startswith("{"):
        return False
    with open_text(path) as f:
        first = f.readline()
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        return True  # an object spread over several lines
    # A whole object on the first line: JSONL, unless it is a one-line SQuAD document.
    return isinstance(obj, dict) and isinstance(obj.get("data"), list)


# --------------------------------------------------------------------------- passages


def read_passages(path: str | Path, lang: str | None = None) -> Iterator[Passage]:
    """Passages from JSONL (xqa or Pyserini layout) or DPR TSV (``.tsv``).

    ``lang`` is used for records that carry none (DPR TSV has no language column).
    """
    path = Path(path)
    if not path.is_file():
        raise XqaError(f"{path}: no such passage file")
    if path.suffix == ".tsv":
        yield from _read_dpr_tsv(path, lang)
        return
    for n, obj in _jsonl(path):
        pid = obj.get("id", obj.get("_id", obj.get("docid")))
        if pid is None:
            raise InputError(path, n, "missing field 'id'")
        if "text" in obj:
            text = _require(obj, "text", path, n)
            title = obj.get("title") or ""
        elif "contents" in obj:
            title, _, text = _require(obj, "contents", path, n).partition("\n")
            if not text:
                title, text = "", title
        else:
            raise InputError(path, n, "missing field 'text' (or Pyserini's 'contents')")
        plang = obj.get("lang") or obj.get("language") or lang
        if not plang:
            raise InputError(path, n, "missing field 'lang' (pass --lang for a one-language file)")
        yield Passage(id=str(pid), title=str(title), text=str(text), lang=str(plang))


def _read_dpr_tsv(path: Path, lang: str | None) -> Iterator[Passage]:
    if not lang:
        raise XqaError(f"{path}: DPR TSV has no language column; pass the passages' language (--lang)")
    csv.field_size_limit(sys.maxsize)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        for n, row in enumerate(reader, 1):
            if n == 1 and row[:1] == ["id"]:
                continue  # header
            if len(row) < 3:
                raise InputError(path, n, f"expected 3 tab-separated columns (id, text, title), found {len(row)}")
            yield Passage(id=row[0], text=row[1], title=row[2], lang=lang)


def write_passages(path: str | Path, passages: Iterable[Passage]) -> int:
    lines = [json.dumps(p.to_dict(), ensure_ascii=False) for p in passages]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


# --------------------------------------------------------------------------- questions

_SQUAD_LANG = [
    (re.compile(r"question-([a-z]{2}(?:_[a-z]{2})?)\.json$"), 1),  # MLQA: dev-context-de-question-en.json
    (re.compile(r"goldp\.([a-z]{2})\."), 1),  # TyDi GoldP: tydiqa.goldp.ko.train.json
    (re.compile(r"xquad\.([a-z]{2})\.json$"), 1),  # XQuAD
]


def _guess_lang(path: Path) -> str | None:
    for pattern, group in _SQUAD_LANG:
        m = pattern.search(path.name)
        if m:
            return m.group(group)
    return None


def read_questions(path: str | Path, lang: str | None = None) -> list[Question]:
    """A question set in any supported layout, by content.

    - XOR-TyDi / MIA / MKQA JSONL: ``{"id","question","answers","lang"}``;
    - NQ-open JSONL: ``{"question","answer"}`` (ids are ``{file}:{line}``, lang ``en``);
    - SQuAD JSON (XQuAD, MLQA, TyDi GoldP, SQuAD): language from ``lang`` or the file name;
    - EntityQuestions JSON list: ``[{"question","answers"}]`` (lang ``en``).
    """
    path = Path(path)
    if not path.is_file():
        raise XqaError(f"{path}: no such question file")
    if path.stat().st_size == 0:
        return []
    if _is_json_document(path):
        data = _load_json(path)
        if isinstance(data, dict) and "data" in data:
            return read_squad(path, lang=lang)[0]
        if isinstance(data, list):
            return _read_json_list(path, data, lang)
        raise InputError(path, 1, "unrecognised JSON layout (expected SQuAD {'data': ...} or a list of questions)")
    return [_question_from_jsonl(obj, path, n, lang) for n, obj in _jsonl(path)]


def _answers(obj: dict, path, line) -> tuple[str, ...]:
    raw = obj.get("answers", obj.get("answer", []))
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise InputError(path, line, f"field 'answers' should be a list, found {type(raw).__name__}")
    out = []
    for a in raw:
        if isinstance(a, dict):  # MKQA-style {"text": ...}
            a = a.get("text")
        if not isinstance(a, str):
            raise InputError(path, line, f"answer {a!r} is not a string")
        out.append(a)
    return tuple(out)


_KNOWN = {"id", "question", "answers", "answer", "lang", "answers_en"}


def _question_from_jsonl(obj: dict, path: Path, n: int, lang: str | None) -> Question:
    text = _require(obj, "question", path, n)
    qlang = obj.get("lang") or lang
    if not qlang:
        if "answer" in obj and "id" not in obj:
            qlang = "en"  # NQ-open
        else:
            raise InputError(path, n, "missing field 'lang' (pass --lang for a one-language file)")
    qid = obj.get("id")
    if qid is None:
        qid = f"{path.stem}:{n}"
    answers_en = obj.get("answers_en") or ()
    if not isinstance(answers_en, (list, tuple)):
        raise InputError(path, n, "field 'answers_en' should be a list")
    meta = {k: v for k, v in obj.items() if k not in _KNOWN}
    return Question(id=str(qid), question=text, lang=str(qlang), answers=_answers(obj, path, n),
                    answers_en=tuple(answers_en), meta=meta)


def _read_json_list(path: Path, data: list, lang: str | None) -> list[Question]:
    out = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict) or "question" not in obj:
            raise InputError(path, None, f"item {i}: expected an object with a 'question'")
        q = obj.get("lang") or lang or "en"
        out.append(Question(id=str(obj.get("id", f"{path.stem}:{i}")), question=obj["question"], lang=q,
                            answers=_answers(obj, path, None)))
    return out


def read_squad(path: str | Path, lang: str | None = None) -> tuple[list[Question], list[Passage]]:
    """Questions and their contexts from a SQuAD-layout JSON file.

    Each context becomes a passage (id ``{file}:{article}:{paragraph}``) and each
    question records it in ``meta["positive_ids"]``.
    """
    path = Path(path)
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(path, 1, "not a SQuAD-layout file (no 'data' list)")
    qlang = lang or _guess_lang(path) or ("en" if "squad" in str(path).lower() else None)
    if not qlang:
        raise XqaError(f"{path}: cannot tell the language from the file name; pass --lang")
    clang = qlang
    m = re.search(r"context-([a-z]{2}(?:_[a-z]{2})?)-question", path.name)
    if m:
        clang = m.group(1)
    questions, passages = [], []
    for a, article in enumerate(data["data"]):
        title = article.get("title", "")
        for p, para in enumerate(article.get("paragraphs", [])):
            if "context" not in para:
                raise InputError(path, None, f"article {a} paragraph {p}: missing 'context'")
            pid = f"{path.stem}:{a}:{p}"
            passages.append(Passage(id=pid, title=title, text=para["context"], lang=clang))
            for qa in para.get("qas", []):
                answers = tuple(dict.fromkeys(x["text"] for x in qa.get("answers", []) if x.get("text")))
                questions.append(Question(id=str(qa["id"]), question=qa["question"], lang=qlang,
                                          answers=answers, meta={"positive_ids": [pid]}))
    return questions, passages


def write_questions(path: str | Path, questions: Iterable[Question]) -> int:
    lines = [json.dumps(q.to_dict(), ensure_ascii=False) for q in questions]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


# --------------------------------------------------------------------------- results


def write_results(path: str | Path, results: Iterable[RetrievalResult | dict]) -> int:
    """Retrieval results in the DPR / FiD layout: JSON list for ``.json``, else JSONL."""
    rows = [r.to_dict() if isinstance(r, RetrievalResult) else r for r in results]
    if str(path).endswith(".json"):
        write_text_atomic(path, json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    else:
        write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return len(rows)


def read_results(path: str | Path) -> list[RetrievalResult]:
    """Retrieval results from a DPR/FiD JSON list or JSONL file."""
    path = Path(path)
    if not path.is_file():
        raise XqaError(f"{path}: no such results file")
    if path.stat().st_size == 0:
        return []
    if _is_json_document(path):
        data = _load_json(path)
        if not isinstance(data, list):
            raise InputError(path, 1, "expected a JSON list of results")
        rows = [(None, r) for r in data]
    else:
        rows = list(_jsonl(path))
    out = []
    for n, r in rows:
        q = _question_from_jsonl(r, path, n, None)
        q = Question(id=q.id, question=q.question, lang=q.lang, answers=q.answers, answers_en=q.answers_en,
                     meta={k: v for k, v in q.meta.items() if k != "ctxs"})
        ctxs = []
        for c in _require(r, "ctxs", path, n, list):
            try:
                ctxs.append(Context(id=str(c["id"]), title=c.get("title", ""), text=c.get("text", ""),
                                    lang=c.get("lang", ""), score=float(c.get("score", 0.0)),
                                    source=c.get("source", ""), has_answer=c.get("has_answer")))
            except (KeyError, TypeError, ValueError) as e:
                raise InputError(path, n, f"bad context entry {c!r:.80}: {e}") from None
        out.append(RetrievalResult(question=q, ctxs=tuple(ctxs)))
    return out


def write_trec_run(path: str | Path, results: Iterable[RetrievalResult], tag: str = "xqa") -> None:
    """A TREC run file: ``qid Q0 docid rank score tag`` per line."""
    lines = []
    for r in results:
        for rank, c in enumerate(r.ctxs, 1):
            lines.append(f"{r.question.id} Q0 {c.id} {rank} {c.score:.6f} {tag}\n")
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
    features = datasets.Features({k: datasets.Value("string") for k in ("id", "title", "text", "lang")})
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
        yield p.to_dict()
