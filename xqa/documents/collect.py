"""Documents → one passage file, streamed, resumable, with a report.

:func:`write_passages` reads the documents of a folder (or one file) in a fixed order
(:func:`xqa.documents.formats.document_files`), gives each its language and cuts it into
passages by a split rule, and appends the passages to ``OUT.part`` as it goes. Every few
seconds it flushes that file to disk and records how far it got (``OUT.progress.json``: the
file and WikiExtractor line last finished, the part file's length, the counts so far), so a
killed run continues from there when run again with the same documents and settings; a
changed folder or other settings start over. At the end the report is written and
``OUT.part`` becomes ``OUT`` in one rename: ``OUT`` is whole or absent, never half-written.

The report (``passages-report.json`` beside a build's ``passages.jsonl``): files found, read
and skipped (each skipped file, page or line with its reason), pages without text, documents
and passages per language, mixed and unknown-language documents, seconds and documents/s.
``strict``: the first problem stops the run with an error naming the file (and page or line).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from xqa.artifacts import write_json_atomic
from xqa.documents.formats import Document, Problem, document_files, read_file
from xqa.documents.language import MIXED, document_language, identify_text
from xqa.errors import XqaError
from xqa.records import Passage

LISTED = 200   # mixed / unknown documents named in the report (all are counted)


def report_path(out: str | Path) -> Path:
    """``passages.jsonl`` → ``passages-report.json`` (beside it); ``run.v1.jsonl.gz`` →
    ``run.v1-report.json`` (only the passage file's own suffixes go, so that two runs' reports
    never share a name)."""
    out = Path(out)
    name = out.name
    for suffix in (".gz", ".jsonl", ".json", ".tsv"):
        name = name.removesuffix(suffix) if name != suffix else name
    return out.with_name(name + "-report.json")


def file_digests(root: Path, files: list[Path]) -> dict[str, str]:
    """Each file's path under ``root`` and the sha256 of its content (of where it points, for a
    link to nothing), in the order of ``files``."""
    out = {}
    for f in files:
        content = hashlib.sha256()
        if not f.exists():   # a link to nothing: where it points
            content.update(os.readlink(f).encode("utf-8", "surrogateescape"))
        else:
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    content.update(block)
        out[str(f.relative_to(root) if f != root else f.name)] = content.hexdigest()
    return out


def fingerprint(root: Path, files: list[Path], digests: dict[str, str] | None = None) -> str:
    """What a resumed run (and a build resumed on them) must find unchanged: every file's path
    under ``root`` and content (``digests``, where :func:`file_digests` already read them). Not
    its modification time: a copy, a checkout or a ``touch`` leaves the documents what they were."""
    h = hashlib.sha256()
    for rel, digest in (digests if digests is not None else file_digests(root, files)).items():
        h.update(f"{rel}\0{digest}\n".encode())
    return h.hexdigest()


def changed_files(then: dict[str, str], now: dict[str, str], shown: int = 3) -> str:
    """Which documents differ between two :func:`file_digests`, in words ("" where none): the
    first ``shown`` changed, new and gone paths of each kind, and how many more."""
    kinds = (("changed", [k for k in now if k in then and then[k] != now[k]]),
             ("new", [k for k in now if k not in then]), ("gone", [k for k in then if k not in now]))
    return "; ".join(f"{kind}: {', '.join(paths[:shown])}" + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
                     for kind, paths in kinds if paths)


def relative(root: Path, path: Path) -> str:
    return path.name if path == root else path.relative_to(root).as_posix()


def passage_id(doc: Document, n: int) -> str:
    """``{document id}#{n}`` with white space and ``%`` percent-encoded (``my docs/a.txt`` →
    ``my%20docs/a.txt#1``): an id is one token in every file that lists ids (a FAISS index's
    ``ids.txt``, a TREC run), and two documents whose names differ never share one."""
    return re.sub(r"[%\s]", lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), f"{doc.id}#{n}")


def provenance(doc: Document, start: int, end: int) -> dict[str, Any]:
    """A passage's ``meta``: where in which document it is."""
    meta: dict[str, Any] = {"source": doc.source, "doc": doc.id, "format": doc.format, "start": start, "end": end}
    if doc.pages:
        first, last = doc.page_at(start), doc.page_at(max(start, end - 1))
        meta["page"] = first
        if last != first:
            meta["page_end"] = last
    if doc.url:
        meta["url"] = doc.url
    return meta


def language_runs(doc: Document) -> list[tuple[Document, str]]:
    """A mixed document (:data:`~xqa.documents.language.MIXED`) as runs of consecutive paragraphs
    in one language, each identified on its own (a paragraph not identified, a heading or a
    number, joins the run it is in): each run a copy of ``doc`` with the other paragraphs blanked
    out (their newlines kept), so that a split rule packs no passage across two languages and its
    offsets stay the document's. The language of each run is given with it."""
    from xqa.documents.split import paragraphs

    runs: list[tuple[list[tuple[int, int]], str]] = []
    for s, e in paragraphs(doc):
        lang = identify_text(doc.text[s:e])
        if runs and (lang == "und" or lang == runs[-1][1]):
            runs[-1][0].append((s, e))
        elif runs and runs[-1][1] == "und":   # what came first was not identified: it takes this language
            runs[-1] = (runs[-1][0] + [(s, e)], lang)
        else:
            runs.append(([(s, e)], lang))
    out = []
    for spans, lang in runs:
        kept = [" " if ch != "\n" else ch for ch in doc.text]
        for s, e in spans:
            kept[s:e] = doc.text[s:e]
        out.append((replace(doc, text="".join(kept)), lang))
    return out


@dataclass
class Collector:
    """One run of :func:`write_passages`; its counts are the report."""

    root: Path
    out: Path
    rule: Any
    lang: str | None = None
    strict: bool = False
    every: float = 5.0
    log: Callable[[str], None] = print

    def __post_init__(self) -> None:
        self.part = self.out.with_name(self.out.name + ".part")
        self.progress = self.out.with_name(self.out.name + ".progress.json")
        self.report = report_path(self.out)

    def _fresh_counts(self, files: int) -> dict[str, Any]:
        return {"files": {"found": files, "read": 0, "skipped": 0}, "documents": 0, "passages": 0,
                "too_short": 0, "records_skipped": 0, "pages_without_text": 0,
                "documents_per_language": {}, "passages_per_language": {},
                "mixed": {"count": 0, "documents": []}, "unknown": {"count": 0, "documents": []},
                "skipped": [], "warnings": []}

    def _written_documents(self) -> dict[str, int]:
        """The ids of the documents whose passages the partial output holds (a resumed run's),
        each with -1 (:meth:`run`'s mark of "an earlier part of this run")."""
        out: dict[str, int] = {}
        with open(self.part, encoding="utf-8") as f:
            for line in f:
                doc = (json.loads(line).get("meta") or {}).get("doc")
                if isinstance(doc, str):
                    out[doc] = -1
        return out

    def _problem(self, p: Problem, c: dict[str, Any]) -> None:
        if self.strict:
            raise XqaError(f"{self.root if self.root.is_file() else self.root / p.source}"
                           f"{':' + str(p.line) if p.line else ''}{' page ' + str(p.page) if p.page else ''}: "
                           f"{p.reason} (--strict stops at the first problem; without it the "
                           f"{'file' if p.skipped and not p.line else 'page' if p.page else 'line'} is left "
                           f"out and reported)")
        self.log(f"  skipped {p}" if p.skipped else f"  warning {p}")
        if not p.skipped:
            c["pages_without_text"] += 1
            c["warnings"].append(p.to_dict())
        elif p.line:
            c["records_skipped"] += 1
            c["skipped"].append(p.to_dict())
        else:
            c["files"]["skipped"] += 1
            c["skipped"].append(p.to_dict())

    def _note(self, c: dict[str, Any], what: str, doc: Document) -> None:
        c[what]["count"] += 1
        if len(c[what]["documents"]) < LISTED:
            c[what]["documents"].append(doc.id)

    def passages_of(self, doc: Document, c: dict[str, Any]) -> list[Passage]:
        lang = self.lang
        if lang is None:
            lang = document_language(doc.text)
            if lang == MIXED:
                self._note(c, "mixed", doc)
            elif lang == "und":
                self._note(c, "unknown", doc)
        if lang == MIXED:
            pieces = [(piece, run_lang) for part, run_lang in language_runs(doc)
                      for piece in self.rule.split(part, run_lang)]
            pieces.sort(key=lambda x: x[0].start)
        else:
            pieces = [(piece, lang) for piece in self.rule.split(doc, lang)]
        if not pieces:
            c["too_short"] += 1
            shorts = c.setdefault("too_short_documents", [])
            if len(shorts) < LISTED:
                shorts.append(doc.id)
            least = getattr(self.rule, "min_tokens", None)
            self.log(f"  skipped {doc.id}: too short for a passage of the {self.rule.name} split"
                     + (f" (fewer than {least} words)" if least else ""))
            return []
        c["documents"] += 1
        c["documents_per_language"][lang] = c["documents_per_language"].get(lang, 0) + 1
        return [Passage(id=passage_id(doc, n), title=doc.title, text=piece.text, lang=plang,
                        meta=provenance(doc, piece.start, piece.end))
                for n, (piece, plang) in enumerate(pieces, 1)]

    def run(self) -> dict[str, Any]:
        root = self.root
        if not root.exists():
            raise XqaError(f"{root}: no such documents folder or file")
        hidden: list[str] = []
        files = document_files(root, leave_out=(self.out, self.part, self.progress, self.report),   # not its own
                               hidden=hidden)
        stamp = {"fingerprint": fingerprint(root, files), "split": self.rule.settings(), "lang": self.lang}
        state = self._resume(stamp)
        c = state["counts"] if state else self._fresh_counts(len(files))
        c["hidden"] = hidden[:LISTED]
        if hidden and not state:
            self.log(f"  left out {len(hidden)} hidden file{'s' * (len(hidden) != 1)} or folder"
                     f"{'s' * (len(hidden) != 1)} (a name starting with '.'): {', '.join(hidden[:5])}"
                     f"{', ...' if len(hidden) > 5 else ''}")
        at_file, at_record = (state["file"], state["record"]) if state else (-1, -1)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        if state:
            with open(self.part, "r+b") as f:
                f.truncate(state["bytes"])
            self.log(f"  resuming after {c['documents']} documents ({c['passages']} passages) written before")
        elif self.part.exists():
            self.part.unlink()
        # each document's id, where it was read: a second document of one id (one WikiExtractor
        # article in two dumps) would repeat its passages' ids, which the indexes refuse
        seen = self._written_documents() if state else {}
        t0, last = time.perf_counter(), time.perf_counter()
        seconds_before = state["seconds"] if state else 0.0
        docs_at_start = c["documents"]
        with open(self.part, "ab") as fh:
            for i, path in enumerate(files):
                if i < at_file:
                    continue
                source = relative(root, path)
                gave = False
                for item in read_file(path, source, after=max(at_record, 0) if i == at_file else 0):
                    if isinstance(item, Problem):
                        if not (i == at_file and at_record >= 0 and (item.line or 0) <= at_record):
                            self._problem(item, c)   # (else counted before the stop: its counts resumed)
                        continue
                    if i == at_file and item.record <= at_record:
                        continue
                    if item.id in seen:
                        first = seen[item.id]   # (file index << 32 | record), or -1: an earlier part of this run
                        at = ("an earlier part of this run" if first < 0 else relative(root, files[first >> 32])
                              + (f":{first & 0xFFFFFFFF}" if first & 0xFFFFFFFF else ""))
                        self._problem(Problem(source, f"document id {item.id!r} again (first at {at}): its "
                                                      f"passages' ids would repeat; left out",
                                              line=item.record or None), c)
                        continue
                    seen[item.id] = i << 32 | item.record   # an int, not a string: millions of articles
                    gave = True
                    for p in self.passages_of(item, c):
                        fh.write((json.dumps(p.to_dict(), ensure_ascii=False) + "\n").encode("utf-8"))
                        c["passages"] += 1
                        c["passages_per_language"][p.lang] = c["passages_per_language"].get(p.lang, 0) + 1
                    if time.perf_counter() - last >= self.every:
                        last = time.perf_counter()
                        self._checkpoint(fh, stamp, c, i, item.record, seconds_before + last - t0)
                        rate = (c["documents"] - docs_at_start) / (last - t0)
                        self.log(f"  {c['documents']} documents ({rate:.0f}/s), {c['passages']} passages, "
                                 f"{c['files']['skipped']} files skipped")
                if gave or (i == at_file and at_record >= 0):
                    c["files"]["read"] += 1
                if time.perf_counter() - last >= self.every:   # file i done, nothing of file i + 1 yet
                    last = time.perf_counter()
                    self._checkpoint(fh, stamp, c, i + 1, -1, seconds_before + last - t0)
            fh.flush()
            os.fsync(fh.fileno())
        seconds = seconds_before + time.perf_counter() - t0
        if not c["passages"]:   # nothing to resume: the partial file and its progress go
            self.part.unlink(missing_ok=True)
            self.progress.unlink(missing_ok=True)
            found, skipped = c["files"]["found"], c["files"]["skipped"]
            if not found:
                raise XqaError(f"{root}: holds no documents (hidden files and folders are left out)")
            why = "; ".join(s["file"] + ": " + s["reason"] for s in c["skipped"][:3])
            said = [f"{skipped} skipped ({why})"] if skipped else []
            if c["too_short"]:
                said.append(f"{c['too_short']} too short for a passage ({', '.join(c['too_short_documents'][:3])}"
                            f"{', ...' if c['too_short'] > 3 else ''})")
            raise XqaError(f"{root}: no passages from its {found} file{'s' * (found != 1)}: "
                           + ("; ".join(said) or "each was empty"))
        report = {"documents_folder": str(root.resolve()), **stamp, **c, "seconds": round(seconds, 2),
                  "documents_per_second": round(c["documents"] / seconds, 1) if seconds else None}
        write_json_atomic(self.report, report)
        os.replace(self.part, self.out)
        self.progress.unlink(missing_ok=True)
        langs = ", ".join(f"{k}: {v}" for k, v in sorted(c["passages_per_language"].items()))
        self.log(f"  {c['passages']} passages ({langs}) from {c['documents']} documents in {seconds:.1f} s "
                 f"({report['documents_per_second']} documents/s); {c['files']['skipped']} files skipped; "
                 f"report: {self.report}")
        return report

    def _checkpoint(self, fh, stamp: dict[str, Any], c: dict[str, Any], file: int, record: int,
                    seconds: float) -> None:
        fh.flush()
        os.fsync(fh.fileno())
        write_json_atomic(self.progress, {**stamp, "file": file, "record": record, "bytes": fh.tell(),
                                          "seconds": seconds, "counts": c})

    def _resume(self, stamp: dict[str, Any]) -> dict[str, Any] | None:
        if not (self.progress.is_file() and self.part.is_file()):
            return None
        try:
            state = json.loads(self.progress.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if any(state.get(k) != v for k, v in stamp.items()) or self.part.stat().st_size < state.get("bytes", 0):
            self.log("  the documents or settings changed since the interrupted run: starting over")
            return None
        return state


def write_passages(documents: str | Path, out: str | Path, rule: Any, *, lang: str | None = None,
                   strict: bool = False, every: float = 5.0, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Passages of every document under ``documents`` written to ``out`` (JSONL); the report
    (also written beside ``out``, :func:`report_path`)."""
    if lang is not None:
        from xqa.io import known_language

        known_language(lang, field="--lang")
    return Collector(Path(documents), Path(out), rule, lang=lang, strict=strict, every=every, log=log).run()
