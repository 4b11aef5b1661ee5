"""The question-answering pipeline: retrieve → fuse → read → evidence fusion.

``Pipeline.load(config)`` opens only what the configured methods need, lazily:
a BM25 index starts the JVM on first sparse search, the reader loads on the
first question. The CLI (``xqa answer``, ``xqa ask``, ``xqa search``) and the
demo all go through this class, so they answer the same way.

One question's path: :meth:`Pipeline.ask` identifies its language
(:mod:`xqa.langid`; BM25 searches that language's index), :meth:`Pipeline.retrieve`
ranks passages with the configured method (the fallback method when it finds
none), and :meth:`Pipeline.answer` reads the top passages and fuses the
reader's answers with their evidence.
"""
from __future__ import annotations

import numbers
import os
import threading
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Collection, Sequence

from xqa import methods as _registry  # the methods and the index kinds they need
from xqa.artifacts import quiet_model_bars
from xqa.config import NO_FALLBACK, PipelineConfig
from xqa.errors import XqaError
from xqa.records import Answer, Context, Hit, Passage, Question


def _row_passage(row: dict) -> Passage:
    """A row of :func:`xqa.io.passages_dataset` (its ``meta`` a JSON string) as a Passage."""
    import json

    row = dict(row)
    meta = row.pop("meta", "") or ""
    return Passage(**row, meta=json.loads(meta) if meta else {})


class PassageStore:
    """Passage lookup by id.

    Small collections (the embedded world) sit in a dict; large ones stay in an
    Arrow file memory-mapped by ``datasets``, with only an id → row map in RAM.
    """

    def __init__(self, passages: dict[str, Passage] | None = None, dataset=None, rows=None):
        self._dict, self._ds, self._rows = passages, dataset, rows

    @classmethod
    def open(cls, path: str | Path, in_memory_limit: int = 2_000_000, lang: str | None = None) -> "PassageStore":
        """``lang``: the language of records that carry none (as :func:`xqa.io.read_passages`)."""
        from xqa.io import read_passages

        path = Path(path)
        if path.stat().st_size < 512 * 1024 * 1024:
            d = {}
            for p in read_passages(path, lang):
                d[p.id] = p
                if len(d) > in_memory_limit:
                    break
            else:
                return cls(passages=d)
        from xqa.io import passages_dataset

        ds = passages_dataset(path, lang)
        rows = {pid: i for i, pid in enumerate(ds["id"])}
        return cls(dataset=ds, rows=rows)

    def __len__(self) -> int:
        return len(self._dict) if self._dict is not None else len(self._rows)

    def __contains__(self, pid: str) -> bool:
        return pid in (self._dict if self._dict is not None else self._rows)

    def ids(self) -> Collection[str]:
        """Every passage's id (nothing else read)."""
        return (self._dict if self._dict is not None else self._rows).keys()

    def get(self, pid: str) -> Passage:
        if self._dict is not None:
            passage = self._dict.get(pid)
        else:
            row = self._rows.get(pid)
            passage = None if row is None else _row_passage(self._ds[row])
        if passage is None:
            raise XqaError(f"passage {pid!r} is in an index but not in the passage file")
        return passage

    def __iter__(self):
        if self._dict is not None:
            yield from self._dict.values()
        else:
            for pid in self._rows:
                yield self.get(pid)


def _tsv_language(path: Path, languages: Sequence[str]) -> str | None:
    """The language of a DPR TSV's passages that carry none: the pipeline's one language. A TSV of
    several languages' passages names each one's (a ``lang`` column) or is refused here, where
    ``--lang`` (of the questions, on xqa search and answer) is no answer."""
    from xqa.io import format_suffix, passage_columns

    if format_suffix(path) != ".tsv":
        return None
    if len(languages) == 1:
        return languages[0]
    if "lang" in passage_columns(path):
        return None
    raise XqaError(f"{path}: DPR TSV without a 'lang' column, for a pipeline of "
                   f"{'several languages (' + ', '.join(languages) + ')' if languages else 'unknown languages'}: "
                   f"name each passage's language in its header (id, text, title, lang), or write the passages "
                   f"as JSONL with a 'lang' each")


def askable(text: str) -> bool:
    """Whether ``text`` holds something to search for: a letter or a digit (not blank, not ``???``)."""
    return any(ch.isalnum() for ch in text)


def _count(name: str, value: int) -> int:
    """``value`` as a number of passages: a whole number of at least 1 (0 is not 'the default')."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise XqaError(f"{name} must be a whole number of at least 1, got {value!r}")
    return value


def given_language(lang: str, languages: Collection[str] = ()) -> str:
    """A language code given for a question (``xqa ask --lang``, ``Pipeline.ask(lang=...)``), as
    xqa writes codes (``DE`` → ``de``, ``zh-CN`` → ``zh_cn``); an :class:`XqaError` for a code that
    is neither one xqa knows (:data:`xqa.langid.LANGUAGE_NAMES`, ``und`` included) nor one of
    ``languages`` (the pipeline's): a typo would otherwise leave BM25 out without a word."""
    from xqa.langid import LANGUAGE_NAMES

    code = lang.strip().lower().replace("-", "_") if isinstance(lang, str) else lang
    if code in LANGUAGE_NAMES or code in languages:
        return code
    raise XqaError(f"unknown language code {lang!r}; give one of {', '.join(sorted(LANGUAGE_NAMES))} "
                   f"('und': unknown, the BM25 indexes of its script searched), or 'auto' to identify it")


def question_text(text: str) -> str:
    """A question as it is asked: ``text`` stripped. An :class:`XqaError` when nothing is left, or
    when no letter or digit is (``???``): there is nothing to search for, or when it is no string."""
    if not isinstance(text, str):
        raise XqaError(f"the question is {type(text).__name__} {text!r:.40}, not text")
    text = text.strip()
    if not text:
        raise XqaError("the question is empty")
    bad = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:   # undecodable bytes, as Python reads them from argv and stdin (surrogateescape)
        code = ord(text[bad])
        what = f"the byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"a lone surrogate U+{code:04X}"
        raise XqaError(f"the question is not UTF-8 text: {what} at character {bad + 1}; "
                       f"write it in UTF-8 (e.g. iconv -f latin1 -t utf-8)")
    if not askable(text):
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise XqaError(f"the question {shown!r} has no letters or digits: there is nothing to search for")
    return text


def question_list(questions: object, what: str = "questions") -> list[Question]:
    """``questions`` as a list of :class:`Question` records (a generator read once); an
    :class:`XqaError` that says what was given otherwise (a question's text, one record)."""
    if isinstance(questions, str):
        raise XqaError(f"{what}: a list of Question records (xqa.records.Question), not text; "
                       f"Pipeline.ask answers one question's text")
    if isinstance(questions, Question):
        raise XqaError(f"{what}: a list of Question records, not one; pass [question]")
    try:
        out = list(questions)
    except TypeError:
        raise XqaError(f"{what}: a list of Question records, not {type(questions).__name__}") from None
    for i, q in enumerate(out):
        if not isinstance(q, Question):
            hint = "; Pipeline.ask answers one question's text" if isinstance(q, str) else ""
            raise XqaError(f"{what}[{i}]: a Question record (xqa.records.Question), not "
                           f"{type(q).__name__} {q!r:.40}{hint}")
    return out


def _per_question(name: str, lists: object, n: int, item: str) -> list:
    """``lists`` (one entry per question, each a collection of ``item``) checked against the
    ``n`` questions: a flat list or a string would pair wrongly without a word."""
    if isinstance(lists, (str, bytes)) or not isinstance(lists, Collection):
        raise XqaError(f"{name}: one collection of {item} per question, not {type(lists).__name__}")
    lists = list(lists)
    if len(lists) != n:
        raise XqaError(f"{name}: {len(lists)} entries for {n} questions; give one collection of {item} per question")
    for i, one in enumerate(lists):
        if isinstance(one, (str, bytes)) or not isinstance(one, Collection):
            raise XqaError(f"{name}[{i}]: a collection of {item} (e.g. a list), not {type(one).__name__} {one!r:.40}")
    return lists


def load_reader(folder: str):
    """The reader in ``folder``, loaded by its family (:func:`reader.registry.load_reader`)."""
    from reader.registry import load_reader as load

    return load(folder)


def reader_family(folder: str):
    """The family (``reader.base.ReaderFamily``: name, description, ...) of the reader in
    ``folder``, from its config.json alone (:func:`reader.registry.family_of`)."""
    from reader.registry import family_of

    return family_of(folder)


# Appended to the ``source`` of a hit the fallback method found (``dense (fallback)``).
FALLBACK_SUFFIX = " (fallback)"
# The ``lang`` that asks :meth:`Pipeline.ask` to identify the question's language.
AUTO = "auto"


@dataclass(frozen=True)
class Asked:
    """One question answered by :meth:`Pipeline.ask`: the question as searched (its ``lang``
    identified or mapped onto the pipeline's languages), the answer, and whether ``lang`` was
    identified. ``identified``: the language the question reads as when it is none of the
    pipeline's (``fr`` for a French question to a collection without French, which is searched as
    ``und``); empty when the question's ``lang`` says it all."""

    question: Question
    answer: Answer
    detected: bool
    identified: str = ""


class Pipeline:
    """Retrieval, reading and evidence fusion behind one batch-first call."""

    def __init__(self, config: PipelineConfig, say=None):
        """``say``: called with a line when a part starts loading and when it is loaded (the
        CLI prints them to stderr, so a cold start shows what it waits for); None: silent."""
        self.config = config
        self._say = say
        self._lock = threading.RLock()
        self._components: dict[str, Any] = {}
        self._retrievers: dict[Any, Any] = {}  # FusionConfig -> retriever
        self._readers: dict[str, Any] = {}  # model folder -> the reader, loaded on first use
        self._labels: dict[str, Any] = {}   # label table path -> the table
        # (reader name, "answerability" or "answerable") -> its calibrator, or None when the reader's
        # config has none; made on first use
        self._calibrators: dict[tuple[str | None, str], Any] = {}
        self._store: PassageStore | None = None

    @classmethod
    def load(cls, path: str | Path) -> "Pipeline":
        """The pipeline of the config ``path`` (``pipeline.json``, or the folder that holds it);
        its indexes and readers load when first used."""
        return cls(PipelineConfig.load(path))

    # ------------------------------------------------------------------ parts

    @property
    def methods(self) -> list[str]:
        """Retrieval methods whose artifacts this config names."""
        return _registry.usable(self.config.retrieval)

    def _available(self) -> set[str]:
        """The index kinds this config names."""
        return _registry.named_indexes(self.config.retrieval)

    @property
    def readers(self) -> list[str]:
        """The names of the readers this pipeline answers with, the default reader first
        (:meth:`xqa.config.PipelineConfig.reader_names`)."""
        return self.config.reader_names()

    def check(self, method: str | None = None, reader: str | None = None, **overrides) -> None:
        """Raise the :class:`XqaError` that answering with ``method`` (default: the config's) and
        the reader ``reader`` (a name of :attr:`readers`; default: the config's reader) would raise
        for a missing index, passage file, reader or fallback, without loading anything."""
        rc = self.config.reader_config(reader)
        spec = _registry.method(method or self._settings(**overrides).method)
        missing = [n for n in spec.needs if n not in self._available()]
        if missing:
            raise XqaError(f"method {spec.name!r} needs a {' and a '.join(missing)} index, "
                           f"which this pipeline config does not name (it offers: {', '.join(self.methods) or 'none'})")
        for name in spec.needs:   # a folder that is not there: said now, not after torch has loaded
            kind = _registry.index_kind(name)
            folder = self.config.path(_registry.index_value(self.config.retrieval, kind))
            if not os.path.exists(folder):
                raise XqaError(f"{folder}: no such folder: the {name} index the pipeline config names "
                               f"({kind.flag}) is not there (build it, or correct the config)")
        self.fallback_for(spec.name, **overrides)
        if not self.config.passages:
            raise XqaError("the pipeline config names no passages file")
        if not os.path.exists(self.config.path(self.config.passages)):
            raise XqaError(f"{self.config.path(self.config.passages)}: no such file: the passages file the "
                           f"pipeline config names is not there")
        if not rc.model:
            raise XqaError("the pipeline config names no reader model")

    def prepare(self, method: str | None = None, reader: str | None = None, **overrides) -> None:
        """Load now what answering with ``method`` and ``reader`` (defaults: the config's) reads:
        the method's retriever, the passages, the reader. The fallback's retriever (:meth:`fallback_for`)
        still loads only for a question the method finds nothing for."""
        self.retriever(method, **overrides)
        self.store  # noqa: B018 - opened now
        self.reader_of(reader)

    def _loading(self, what: str, load, models: bool = True):
        """``load()``, announced through ``say`` with the seconds it took. ``models``: it loads
        transformers models, whose per-model "Loading weights" bar is left out (the announcement
        says what is loading)."""
        quiet = quiet_model_bars() if models else nullcontext()
        if self._say is None:
            with quiet:
                return load()
        import time

        self._say(f"loading {what} ...")
        t0 = time.perf_counter()
        with quiet:
            obj = load()
        self._say(f"loaded {what} in {time.perf_counter() - t0:.1f} s")
        return obj

    @property
    def store(self) -> PassageStore:
        with self._lock:
            if self._store is None:
                if not self.config.passages:
                    raise XqaError("the pipeline config names no passages file")
                path = self.config.path(self.config.passages)
                lang = _tsv_language(path, self.config.languages or self._index_languages())
                self._store = self._loading(f"passages ({self.config.passages})",
                                           lambda: PassageStore.open(path, lang=lang), models=False)
                for name in list(self._components):
                    self._check_coverage(name)
            return self._store

    COVERING = ("sparse", "dense")   # index kinds that hold every passage of the collection

    def _check_coverage(self, name: str) -> None:
        """Warn where the index ``name`` (BM25, dense) holds fewer passages than the passage file:
        one built over part of them (``--dense-index`` of a sample) finds nothing in the rest, and
        the answers would say nothing of it."""
        if name not in self.COVERING or self._store is None:
            return
        import json
        import warnings

        folder = _registry.index_value(self.config.retrieval, _registry.index_kind(name))
        config = Path(self.config.path(folder)) / "config.json"
        try:
            record = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        held = record.get("passages", record.get("num_passages"))
        if isinstance(held, int) and not isinstance(held, bool) and held < len(self._store):
            warnings.warn(f"the {name} index {folder} holds {held:,} passages of the {len(self._store):,} of "
                          f"{self.config.passages}: it finds none of the others (index them all, or give the "
                          f"passages it was built over)", stacklevel=2)

    def _index_languages(self) -> list[str]:
        """The languages the BM25 and dense indexes hold (their ``config.json``), for a pipeline
        named on the command line, whose config lists none."""
        import json

        found: set[str] = set()
        r = self.config.retrieval
        for folder in (r.sparse_index, r.dense_index):
            config = Path(self.config.path(folder)) / "config.json" if folder else None
            if config is not None and config.is_file():
                found |= set(json.loads(config.read_text(encoding="utf-8")).get("languages") or ())
        return sorted(found)

    def component(self, name: str):
        """A retriever part (an index kind of :mod:`xqa.methods`: sparse, dense, spar, ...), loaded
        on first use."""
        with self._lock:
            if name in self._components:
                return self._components[name]
            kind = _registry.index_kind(name)
            folder = _registry.index_value(self.config.retrieval, kind)
            if not folder:
                raise XqaError(f"no {name} index: the pipeline config names none ({kind.flag})")
            obj = self._loading(f"{name} index ({folder})", lambda: kind.load(self.config.path(folder), self))
            self._components[name] = obj
            self._check_coverage(name)
            return obj

    def retriever(self, method: str | None = None, **overrides):
        """A retriever for ``method`` (default: the config's), built from the loaded parts."""
        r = self._settings(**overrides)
        spec = _registry.method(method or r.method)
        missing = [n for n in spec.needs if n not in self._available()]
        if missing:
            raise XqaError(f"method {spec.name!r} needs a {' and a '.join(missing)} index, "
                           f"which this pipeline config does not name")
        fusion = r.fusion(method=spec.name)
        with self._lock:
            if fusion not in self._retrievers:
                parts = {n: self.component(n) for n in spec.needs}
                self._retrievers[fusion] = _registry.build_retriever(fusion, **parts)
            return self._retrievers[fusion]

    def _settings(self, **overrides):
        """The config's retrieval settings with ``overrides``; a setting of a registered method
        that the config has no field for goes to ``retrieval.settings``."""
        r = self.config.retrieval
        extra = {k: v for k, v in overrides.items() if not hasattr(r, k)}
        unknown = [k for k in extra if _registry.tunable_setting(k) is None]
        if unknown:
            raise XqaError(f"unknown retrieval settings: {', '.join(sorted(unknown))}")
        known = {k: v for k, v in overrides.items() if k not in extra}
        from xqa.config import RetrievalConfig, _check_types, check_retrieval

        def named(name: str) -> str:   # said as the keyword it was given as
            return f"retrieval setting '{name.removeprefix('settings.')}'"

        _check_types(RetrievalConfig, known, "", named)
        out = replace(r, **known, settings={**r.settings, **extra}) if extra else replace(r, **known)
        if overrides:
            check_retrieval(out, named)
        return out

    @property
    def reader(self):
        """The default reader, loaded on first use."""
        return self.reader_of(None)

    def reader_of(self, name: str | None = None):
        """The reader ``name`` (a name of :attr:`readers`; None: the default), loaded on first use."""
        rc = self.config.reader_config(name)
        if not rc.model:
            raise XqaError("the pipeline config names no reader model")
        path = self.config.path(rc.model)
        with self._lock:  # readers of one model folder (with other settings) share it
            if path not in self._readers:
                what = f"reader ({rc.model})" if rc is self.config.reader else f"reader {name} ({rc.model})"
                self._readers[path] = self._loading(what, lambda: load_reader(path))
            return self._readers[path]

    @property
    def labels(self):
        """The default reader's answer label table (``xqa.world.labels``), or None when the config names none."""
        return self.labels_of(None)

    def labels_of(self, name: str | None = None):
        """The answer label table of the reader ``name``'s settings, or None when they name none."""
        path = self.config.reader_config(name).labels
        if not path:
            return None
        with self._lock:
            if path not in self._labels:
                from xqa.world.labels import AnswerLabels

                self._labels[path] = AnswerLabels.load(self.config.path(path))
            return self._labels[path]

    @property
    def calibrator(self):
        """The default reader's answerability calibrator (``reader.answerability``), or None when the config has none."""
        return self.calibrator_of(None)

    @property
    def answerable_calibrator(self):
        """The calibrator of P(the collection holds the answer), or None when the config has none."""
        return self.calibrator_of(None, "answerable")

    def calibrator_of(self, name: str | None = None, which: str = "answerability"):
        """The calibrator ``which`` (``answerability``: P(the answer is right); ``answerable``:
        P(the collection holds the answer)) of the reader ``name``'s settings, or None where they have none."""
        rc = self.config.reader_config(name)
        key = (None if rc is self.config.reader else name, which)
        if key not in self._calibrators:
            from reader.answerability import Calibrator

            spec = getattr(rc, which)
            self._calibrators[key] = Calibrator.from_dict(spec) if spec else None
        return self._calibrators[key]

    # ------------------------------------------------------------------ work

    def contexts(self, hits: Sequence[Hit]) -> list[Context]:
        out = []
        for h in hits:
            p = self.store.get(h.id)
            out.append(Context(id=p.id, title=p.title, text=p.text, lang=p.lang, score=float(h.score),
                               source=h.source, meta=p.meta))
        return out

    def retrieve(self, questions: Sequence[Question], k: int | None = None, method: str | None = None,
                 **overrides) -> list[list[Context]]:
        """The first ``k`` (default: the config's K) passages of each question, by ``method``
        (default: the config's) with retrieval ``overrides`` (:class:`xqa.config.RetrievalConfig`'s
        fields, e.g. ``alpha``); where BM25 finds nothing, the config's fallback searches
        (:meth:`fallback_for`)."""
        k = self.config.retrieval.k if k is None else _count("k", k)
        method = method or self.config.retrieval.method
        questions = question_list(questions)
        fallback = self.fallback_for(method, **overrides)
        retriever = self.retriever(method, **overrides)
        if fallback:   # a language without a BM25 index: searched by its script; nothing found, the fallback
            from retriever.combined import sparse_search

            hits = sparse_search(retriever, questions, k)
        else:
            hits = retriever.search(questions, k)
        empty = [i for i, h in enumerate(hits) if not h] if fallback else []
        if empty:
            more = self.retriever(fallback, **overrides).search([questions[i] for i in empty], k)
            for i, h in zip(empty, more):
                hits[i] = [replace(x, source=x.source + FALLBACK_SUFFIX) for x in h]
        return [self.contexts(h) for h in hits]

    def fallback_for(self, method: str, **overrides) -> str | None:
        """The method that searches again for a question ``method`` finds nothing for, if any.

        BM25 finds nothing when every query term is unknown to its index: a question in a script
        no index is written in, or in words the world never uses. The fallback (the config's
        ``retrieval.fallback`` or an override; dense by default, ``"none"`` for never) always ranks passages; its
        hits' ``source`` ends in :data:`FALLBACK_SUFFIX`, so the evidence shows where they came from."""
        fb = self._settings(**overrides).fallback
        if fb != NO_FALLBACK and not _registry.is_method(fb):
            raise XqaError(f"unknown fallback method {fb!r}; choose from {', '.join(_registry.method_names())} "
                           f"or {NO_FALLBACK!r}")
        if fb in (NO_FALLBACK, method) or not all(n in self._available() for n in _registry.needs(fb)):
            return None
        return fb

    def question_language(self, text: str, lang: str = AUTO) -> str:
        """The language code to search ``text`` in: identified (:func:`xqa.langid.identify_language`,
        one of the config's languages or ``und``) when ``lang`` is ``"auto"``, else ``lang`` mapped
        onto the config's languages (``zh`` → ``zh_cn``, ``id`` ↔ ``ms``)."""
        return self.question_languages(text, lang)[0]

    def question_languages(self, text: str, lang: str = AUTO, found: str | None = None) -> tuple[str, str]:
        """:meth:`question_language`, and the language ``text`` reads as where that is none of
        the config's (searched as ``und``; :attr:`Asked.identified`), else ``""``: one
        identification for both. ``found``: what :func:`xqa.langid.identify` gives for ``text``,
        where it has run already (:func:`xqa.langid.model.identify_elsewhere`)."""
        from xqa.langid import identify, resolve_language, searched_language

        languages = self.config.languages
        if lang != AUTO:
            return resolve_language(given_language(lang, languages), languages), ""
        return searched_language(identify(text) if found is None else found, languages)

    def script_indexes(self, text: str) -> list[str] | None:
        """The languages whose BM25 indexes a question of unknown language (``text``) is searched
        in: those of the config's written in its script (:func:`xqa.langid.rules.script_languages`);
        None where the config does not name its languages."""
        from xqa.langid.rules import script_languages

        languages = self.config.languages
        return script_languages(text, languages) if languages else None

    def ask(self, text: str, lang: str = AUTO, *, question_id: str = "q", method: str | None = None,
            k: int | None = None, n_passages: int | None = None, reader: str | None = None,
            found: str | None = None, **overrides) -> Asked:
        """Answer one question in any language: its language (:meth:`question_languages`; ``found``:
        its identification where that has run already), then :meth:`answer` with ``method``,
        ``k``, ``n_passages``, ``reader`` and retrieval ``overrides``."""
        text = question_text(text)
        searched, identified = self.question_languages(text, lang, found)
        question = Question(id=question_id, question=text, lang=searched)
        [answer] = self.answer([question], method=method, k=k, n_passages=n_passages, reader=reader, **overrides)
        return Asked(question, answer, detected=lang == AUTO, identified=identified)

    def answer(self, questions: Sequence[Question], method: str | None = None, k: int | None = None,
               n_passages: int | None = None, evidence_fusion: bool | None = None,
               contexts: Sequence[Sequence[Context]] | None = None,
               exclude: Sequence[Collection[str]] | None = None, reader: str | None = None,
               **overrides) -> list[Answer]:
        """Answer each question; ``contexts`` skips retrieval when given. ``exclude`` [one set of
        passage ids per question]: answer as if the collection lacked those passages (they are
        dropped from what is retrieved, which searches that many more to keep K). ``reader``: the
        name of the reader that reads (:attr:`readers`; None: the default), with its own settings
        (passages read, beams, evidence fusion, calibrators and thresholds). A question's
        ``lang`` must be a code xqa knows or one of the pipeline's (``und``: not identified): a
        typo would leave BM25 out without a word."""
        from xqa.langid import LANGUAGE_NAMES

        questions = question_list(questions)
        if exclude is not None:
            exclude = [set(ex) for ex in _per_question("exclude", exclude, len(questions), "passage ids")]
        if contexts is not None:
            contexts = _per_question("contexts", contexts, len(questions), "Context records")
            for i, ctxs in enumerate(contexts):
                bad = next((c for c in ctxs if not isinstance(c, Context)), None)
                if bad is not None:
                    raise XqaError(f"contexts[{i}]: Context records (xqa.records.Context), found "
                                   f"{type(bad).__name__} {bad!r:.40}")
        rc = self.config.reader_config(reader)
        n = rc.n_passages if n_passages is None else _count("n_passages", n_passages)
        for q in questions:
            if q.lang not in LANGUAGE_NAMES and q.lang not in self.config.languages:
                raise XqaError(f"question {q.id!r}: unknown language code {q.lang!r}; give one of "
                               f"{', '.join(sorted(LANGUAGE_NAMES))} ('und': unknown, the BM25 indexes of its "
                               f"script searched)")
        if not questions:
            return []
        fuse = rc.evidence_fusion if evidence_fusion is None else evidence_fusion
        # the method whose scores the answers' features hold (unknown for contexts given)
        used = _registry.method(method or self.config.retrieval.method).name if contexts is None else None
        if contexts is None:
            k = max(self.config.retrieval.k if k is None else _count("k", k), n)
            extra = max((len(e) for e in exclude), default=0) if exclude is not None else 0
            contexts = self.retrieve(questions, k=k + extra, method=method, **overrides)
            if exclude is not None:
                contexts = [[c for c in ctxs if c.id not in ex][:k] for ctxs, ex in zip(contexts, exclude)]
        contexts = [list(c)[:n] for c in contexts]
        with self._lock:  # one reader, many demo users: torch inference is not re-entrant per module
            outs = self.reader_of(reader).read(list(questions), contexts, n_context=n, beams=rc.beams,
                                               n_best=rc.n_best, max_answer_len=rc.max_answer_len,
                                               span_beams=rc.span_beams)
        return [self._answer(q, c, o, fuse, reader, used) for q, c, o in zip(questions, contexts, outs)]

    def _answer(self, q: Question, ctxs: list[Context], out, fuse: bool, reader: str | None = None,
                method: str | None = None) -> Answer:
        """Evidence fusion (or the reader alone) over one question's reader output."""
        from reader.evidence import FusionParams

        rc = self.config.reader_config(reader)
        params = FusionParams(rc.beta, rc.gamma, rc.miss, rc.soft, rc.same_language) if fuse and ctxs else None
        ans = self.reader_of(reader).answer(q, ctxs, out, params, labels=self.labels_of(reader))
        return self._judge(ans, q, out.relevance, reader, method)

    def _judge(self, ans: Answer, q: Question, reader_relevance, reader: str | None = None,
               method: str | None = None) -> Answer:
        """The answer with its answerability features and, where the config has a calibrator, the
        calibrated probability that it is right, whether it clears the threshold (``answered``),
        the probability that the collection holds the answer (``answerable``, where the config has
        that calibrator) and whether the answer clears the not-found threshold (``found``: on
        ``answerable`` where there is one, else on the probability that it is right). A calibrator
        fitted on another retrieval method's answers (``fitted_on["method"]``) is not applied:
        retrieval scores differ in scale between methods (BM25's are tens, dense cosines below
        one), so its probabilities would not hold; those answers carry none, as with a reader
        without a calibrator."""
        from reader.answerability import answer_features

        features = answer_features(ans, q.lang or "", list(reader_relevance))
        calibrator = self.calibrator_of(reader)
        if calibrator is not None and not calibrator.fits_method(method):
            answered = bool(ans.text.strip())
            return replace(ans, features=features, answered=answered, found=answered, confidence=None)
        if calibrator is None or not ans.candidates:
            answered = bool(ans.text.strip())
            return replace(ans, features=features, answered=answered, found=answered,
                           confidence=0.0 if calibrator is not None else None)
        p = calibrator.probability(features)
        rc = self.config.reader_config(reader)
        answerable = self.calibrator_of(reader, "answerable")
        a = answerable.probability(features) if answerable is not None else None
        answered = p >= rc.answerability_threshold
        if rc.not_found_threshold is None:
            found = answered
        else:
            found = answered or (a if a is not None else p) >= rc.not_found_threshold
        return replace(ans, features=features, confidence=p, answered=answered, found=found, answerable=a)
