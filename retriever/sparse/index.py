"""Build one Lucene BM25 index per language, resumably and atomically.

Layout of the artifact folder ``out/``::

    out/config.json            kind "bm25": languages, analyzers, counts, versions
    out/<lang>/config.json     kind "bm25-language": analyzer, count, content hash
    out/<lang>/lucene/         the Lucene index (Anserini's JsonCollection fields)

How it is built, and why:

1. **Spool.** One pass over the passages writes ``{"id", "contents"}`` JSONL per
   language into a work folder ``.out.partial/`` beside ``out`` (a stable name,
   so a killed job can resume) and hashes each language's content. Indexing
   languages one at a time keeps one Lucene writer in memory, not sixteen.
2. **Index** each language with Anserini's ``SimpleIndexer`` (what Pyserini's
   ``LuceneIndexer`` wraps: in-process, multi-threaded, no subprocess or JSON
   files in a collection folder), in batches with a progress bar. A language
   whose finished index in the work folder has the same content hash and
   analyzer is reused, which is what makes a rerun resume.
3. **Publish.** The top ``config.json`` is written last and the work folder is
   renamed to ``out``: a folder with ``config.json`` is always complete.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from retriever.sparse import analyzers, roman
from retriever.sparse.java import anserini_version, ensure_jvm, jclass, lucene_version
from xqa.artifacts import atomic_dir, exclusive, is_complete, load_config, save_config
from xqa.errors import XqaError
from xqa.records import Passage

KIND = "bm25"
LANG_KIND = "bm25-language"
LUCENE_SUBDIR = "lucene"
FORMAT = 1
# Anserini's BM25 defaults (SimpleSearcher), recorded so every searcher uses the same.
DEFAULT_K1, DEFAULT_B = 0.9, 0.4
# Cross-script index: with a stop fraction F > 0, a question leaves out the tokens found in at least
# F of its own language's passages (counted on the first STOP_SAMPLE passages of each language;
# languages with fewer than STOP_MIN_PASSAGES get no list). The default keeps every token: a share
# is tuned per corpus (the embedded world's is xqa.world.retrieval.CROSS_SCRIPT_STOP_FRACTION).
STOP_FRACTION = 0.0
STOP_SAMPLE = 20_000
STOP_MIN_PASSAGES = 20


def work_dir(out_dir: str | Path) -> Path:
    """The resumable work folder for ``out_dir`` (hidden sibling)."""
    out = Path(out_dir)
    return out.with_name(f".{out.name}.partial")


def _check_target(out: Path, overwrite: bool) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    if is_complete(out):
        if not overwrite:
            raise FileExistsError(f"{out} is a complete BM25 index; pass --overwrite "
                                  "(overwrite=True) to rebuild it")
        kind = load_config(out).get("kind")
        if kind != KIND:
            raise FileExistsError(f"{out} holds an artifact of kind {kind!r}, not a BM25 index; "
                                  "refusing to replace it")
    elif any(out.iterdir()):
        raise FileExistsError(f"{out} exists, is not empty and is not an xqa index; choose another --out")


def _spool(passages: Iterable[Passage], spool: Path, progress: bool,
           cross_script: bool = False) -> dict[str, dict[str, Any]]:
    """Write per-language ``{"id","contents"}`` JSONL; return {lang: {"count", "sha256", "file"}}.
    With ``cross_script`` every passage goes to the one pseudo-language ``roman.ALL``."""
    spool.mkdir(parents=True, exist_ok=True)
    files: dict[str, Any] = {}
    hashes: dict[str, Any] = {}
    counts: dict[str, int] = {}
    seen: set[str] = set()
    checked: set[str] = set()
    with contextlib.ExitStack() as stack:
        for n, p in enumerate(tqdm(passages, desc="reading passages", unit=" passages",
                                   disable=not progress), start=1):
            if not p.lang:
                raise XqaError(f"passage #{n} (id {p.id!r}) has no language ('lang')")
            if p.lang not in checked:
                try:
                    analyzers.base_language(p.lang)
                except ValueError as e:
                    raise XqaError(f"passage #{n} (id {p.id!r}): {e}") from None
                checked.add(p.lang)
            key = roman.ALL if cross_script else p.lang
            if key not in files:
                files[key] = stack.enter_context(open(spool / f"{key}.jsonl", "w", encoding="utf-8"))
                hashes[key] = hashlib.sha256()
                counts[key] = 0
            if p.id in seen:
                raise XqaError(f"passage #{n}: duplicate passage id {p.id!r}")
            seen.add(p.id)
            record = {"id": p.id, "contents": p.contents()}
            if cross_script:  # the language is kept for the stop-token statistics, not indexed
                record["lang"] = p.lang
            line = json.dumps(record, ensure_ascii=False) + "\n"
            files[key].write(line)
            hashes[key].update(line.encode("utf-8"))
            counts[key] += 1
    if not counts:
        raise XqaError("no passages to index")
    return {lang: {"count": counts[lang], "sha256": hashes[lang].hexdigest(),
                   "file": spool / f"{lang}.jsonl"} for lang in counts}


def _batches(path: Path, size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            batch.append(line.rstrip("\n"))
            if len(batch) >= size:
                yield batch
                batch = []
    if batch:
        yield batch


def folder_bytes(folder: Path) -> int:
    """Total size of the files under ``folder``."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def count_documents(lucene_dir: str | Path) -> int:
    """Number of documents in a Lucene index (opens and closes a searcher)."""
    searcher = jclass("io.anserini.search.SimpleSearcher")(str(lucene_dir))
    try:
        return int(searcher.get_total_num_docs())
    finally:
        searcher.close()


def stop_tokens(stats: dict[str, Counter], counts: dict[str, int], fraction: float,
                min_passages: int = STOP_MIN_PASSAGES) -> dict[str, list[str]]:
    """{lang: tokens found in at least ``fraction`` of that language's (sampled) passages}.

    In one index of every language, a language's function and template words
    look rare (their document frequency is counted against the whole
    collection), so BM25 gives them the weight of a name; ranked within their
    own language they are what they are, frequent. A language with fewer than
    ``min_passages`` passages gets no list (too few to tell)."""
    if not fraction:
        return {}
    return {lang: sorted(t for t, df in stats[lang].items() if df >= fraction * counts[lang])
            for lang in sorted(counts) if counts[lang] >= min_passages}


def _index_language(lang: str, spooled: dict[str, Any], choice: analyzers.AnalyzerChoice,
                    target: Path, threads: int, batch_size: int, optimize: bool, bar: tqdm,
                    stop_fraction: float = 0.0) -> dict[str, Any]:
    """Index one language's spooled passages into ``target`` (atomically).

    The cross-script index (spooled lines carry their passage's ``lang``) also
    counts, on up to :data:`STOP_SAMPLE` passages per language, in how many
    passages of its language each token occurs, and records the tokens found
    in at least ``stop_fraction`` of them as that language's stop tokens
    (:func:`stop_tokens`), which its questions then leave out of their query."""
    with atomic_dir(target, overwrite=True) as tmp:
        lucene_dir = tmp / LUCENE_SUBDIR
        args = ["-index", str(lucene_dir), "-input", "", "-collection", "JsonCollection",
                "-threads", str(max(1, threads))]
        analyzer = None
        if choice.pretokenized:
            args.append("-pretokenized")
            analyzer = analyzers.build_analyzer(choice.name)
        else:
            args += ["-language", choice.anserini_language]
        indexer = jclass("io.anserini.index.SimpleIndexer")(args)
        added = 0
        stats: dict[str, Counter] = defaultdict(Counter)
        counts: Counter = Counter()
        try:
            for batch in _batches(spooled["file"], batch_size):
                if analyzer is not None:
                    docs = [json.loads(line) for line in batch]
                    tokens = [analyzers.analyze(analyzer, d["contents"]) for d in docs]
                    for d, toks in zip(docs, tokens):
                        if "lang" in d and counts[d["lang"]] < STOP_SAMPLE:
                            counts[d["lang"]] += 1
                            stats[d["lang"]].update(set(toks))
                    batch = [json.dumps({"id": d["id"], "contents": " ".join(toks)}, ensure_ascii=False)
                             for d, toks in zip(docs, tokens)]
                added += int(indexer.addRawDocuments(batch))
                bar.update(len(batch))
        except BaseException:
            indexer.close(False)  # release the writer; atomic_dir discards the folder
            raise
        indexer.close(optimize)
        indexed = count_documents(lucene_dir)
        if added != spooled["count"] or indexed != spooled["count"]:
            raise XqaError(f"BM25 index for {lang!r}: {spooled['count']} passages given, "
                           f"{added} accepted, {indexed} in the index (see Anserini's log above)")
        config = {
            "lang": lang,
            "analyzer": choice.name,
            "analyzer_description": choice.description,
            "fallback": choice.fallback,
            "fallback_reason": choice.reason,
            "pretokenized": choice.pretokenized,
            "num_passages": spooled["count"],
            "content_sha256": spooled["sha256"],
            "index_bytes": folder_bytes(lucene_dir),
        }
        if counts:
            config["stop_fraction"] = stop_fraction
            config["stop_tokens"] = stop_tokens(stats, counts, stop_fraction)
        save_config(tmp, LANG_KIND, config)
    return config


def _reusable(target: Path, spooled: dict[str, Any], choice: analyzers.AnalyzerChoice,
              stop_fraction: float | None = None) -> dict[str, Any] | None:
    if not is_complete(target):
        return None
    try:
        config = load_config(target, LANG_KIND)
    except ValueError:
        return None
    if config.get("content_sha256") == spooled["sha256"] and config.get("analyzer") == choice.name \
            and config.get("stop_fraction") == stop_fraction:
        return config
    return None


def build_sparse_indexes(passages: Iterable[Passage], out_dir: str | Path, threads: int = 2,
                         overwrite: bool = False, *, batch_size: int = 2000, optimize: bool = True,
                         progress: bool = True, cross_script: bool = False,
                         stop_fraction: float = STOP_FRACTION) -> dict[str, Any]:
    """Build one BM25 index per language found in ``passages`` under ``out_dir``.

    With ``cross_script``, build instead ONE index of all passages, romanized
    (:mod:`retriever.sparse.roman`), that every question searches whatever its
    language; its config says ``"cross_script": true``. Its questions leave out
    the tokens found in at least ``stop_fraction`` of their own language's
    passages (:func:`stop_tokens`; 0: none).

    Each language gets its own analyzer (:func:`analyzers.choose_analyzer`;
    fallbacks warn with :class:`analyzers.AnalyzerFallbackWarning`). Refuses
    (``FileExistsError``) a complete index unless ``overwrite``; an interrupted
    build resumes, reusing languages finished with the same content.
    ``optimize`` merges each index into one segment (smaller, faster to search).

    Returns the index's config plus ``built`` and ``reused`` language lists.
    """
    out = Path(out_dir)
    _check_target(out, overwrite)
    with exclusive(out, f"{out} is being written by another build"):
        _check_target(out, overwrite)  # again: another build may have finished while we waited to lock
        runtime = ensure_jvm()
        work = work_dir(out)
        work.mkdir(parents=True, exist_ok=True)
        return _build(passages, out, work, runtime, threads, batch_size, optimize, progress, cross_script,
                      stop_fraction)


def _build(passages: Iterable[Passage], out: Path, work: Path, runtime: Any, threads: int,
           batch_size: int, optimize: bool, progress: bool, cross_script: bool = False,
           stop_fraction: float = STOP_FRACTION) -> dict[str, Any]:
    if not 0.0 <= stop_fraction <= 1.0:
        raise XqaError(f"stop_fraction must be in [0, 1], got {stop_fraction}")
    spooled = _spool(passages, work / "spool", progress, cross_script)
    if cross_script:
        choices = {roman.ALL: analyzers.cross_script_choice()}
    else:
        choices = {lang: analyzers.choose_analyzer(lang, warn=False) for lang in sorted(spooled)}
    for choice in choices.values():
        if choice.fallback:
            warnings.warn(choice.fallback_message(), analyzers.AnalyzerFallbackWarning, stacklevel=3)
    for stale in work.iterdir():  # languages of an earlier, different input
        if stale.is_dir() and stale.name != "spool" and stale.name not in spooled:
            shutil.rmtree(stale)
    built, reused, languages = [], [], {}
    total = sum(s["count"] for s in spooled.values())
    with tqdm(total=total, desc="indexing BM25", unit=" passages", disable=not progress) as bar:
        for lang, choice in choices.items():
            bar.set_postfix_str(lang)
            fraction = stop_fraction if cross_script else None
            config = _reusable(work / lang, spooled[lang], choice, fraction)
            if config is not None:
                reused.append(lang)
                bar.update(spooled[lang]["count"])
            else:
                config = _index_language(lang, spooled[lang], choice, work / lang, threads,
                                         batch_size, optimize, bar, stop_fraction if cross_script else 0.0)
                built.append(lang)
            languages[lang] = {k: config[k] for k in ("analyzer", "analyzer_description", "fallback",
                                                      "pretokenized", "num_passages", "index_bytes",
                                                      "stop_fraction", "stop_tokens") if k in config}
    shutil.rmtree(work / "spool")
    top = {
        "format": FORMAT,
        "cross_script": cross_script,
        "languages": languages,
        "num_passages": total,
        "bm25": {"k1": DEFAULT_K1, "b": DEFAULT_B},
        "anserini": anserini_version(),
        "lucene": lucene_version(),
        "java": f"{'.'.join(map(str, runtime.version))} ({runtime.source})",
    }
    save_config(work, KIND, top)
    _publish(work, out)
    return {**load_config(out, KIND), "built": built, "reused": reused}


def _publish(work: Path, out: Path) -> None:
    """Rename the finished work folder to ``out``, replacing an old index last."""
    if not out.exists():
        os.replace(work, out)
        return
    if not any(out.iterdir()):
        out.rmdir()
        os.replace(work, out)
        return
    old = out.with_name(f".{out.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    os.replace(out, old)
    os.replace(work, out)
    shutil.rmtree(old, ignore_errors=True)
