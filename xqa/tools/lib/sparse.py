"""BM25 benchmark: xqa's Lucene (Anserini) retriever against bm25s on one synthetic corpus.

Measured in one run, on this machine, for the same passages and queries:

* import time of ``retriever.sparse`` vs ``pyserini.search.lucene`` (what xqa
  avoids by calling Anserini's Java classes directly), and bm25s's;
* JVM start, and cold start to first hit (fresh interpreter: import + JVM +
  index open + one query), vs bm25s (import + load + one query);
* index build time at 5k and at the full size (100k by default), index bytes
  per passage;
* queries/s for a batch (k=10 and k=100, 1 and N threads), and one query's latency;
* agreement: mean overlap of the two engines' top-10 (same k1=0.9, b=0.4,
  Porter stemmer; stop-word lists and tokenizers differ slightly).

The corpus is synthesized deterministically (``seed``): passages of 3-6
sentences sampled from MLQA dev English contexts when ``../shared/data`` has
them (queries: MLQA's English questions), otherwise from a Zipf-distributed
pseudo-word vocabulary (queries: 6 sampled words). The table says which.
"""
from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xqa.data.sets import shared_data
from xqa.records import Passage, Question

ROOT = Path(__file__).resolve().parents[3]  # the repository
MLQA_DIR = shared_data() / "mlqa" / "dev"   # $XQA_DATA, else ../shared/data


@dataclass
class Corpus:
    passages: list[Passage]
    queries: list[str]
    source: str


def _mlqa_english(mlqa_dir: Path) -> tuple[list[str], list[str]]:
    sentences: set[str] = set()
    questions: list[str] = []
    for path in sorted(mlqa_dir.glob("dev-context-en-question-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for article in data["data"]:
            for para in article["paragraphs"]:
                sentences.update(s for s in re.split(r"(?<=[.!?])\s+", para["context"]) if len(s.split()) >= 4)
                if path.name == "dev-context-en-question-en.json":
                    questions.extend(qa["question"] for qa in para["qas"])
    return sorted(sentences), questions


def _pseudo_words(n: int, rng: random.Random) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < n:
        words["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))] = None
    return list(words)


def synthesize_corpus(n_passages: int, n_queries: int, seed: int = 0, mlqa_dir: Path | None = MLQA_DIR) -> Corpus:
    """A deterministic English corpus of ``n_passages`` and ``n_queries`` query strings."""
    rng = random.Random(seed)
    if mlqa_dir is not None and mlqa_dir.is_dir():
        sentences, questions = _mlqa_english(mlqa_dir)
        passages = [Passage(f"syn-{i}", "", " ".join(rng.choices(sentences, k=rng.randint(3, 6))), "en")
                    for i in range(n_passages)]
        queries = [questions[i % len(questions)] for i in range(n_queries)]
        rng.shuffle(queries)
        source = f"MLQA dev English: {len(sentences)} context sentences, {len(questions)} questions"
    else:
        import numpy as np

        vocab = _pseudo_words(50_000, rng)
        gen = np.random.default_rng(seed)
        ranks = gen.zipf(1.2, size=(n_passages, 100)) % len(vocab)
        passages = [Passage(f"syn-{i}", "", " ".join(vocab[r] for r in row), "en")
                    for i, row in enumerate(ranks)]
        qranks = gen.zipf(1.2, size=(n_queries, 6)) % len(vocab)
        queries = [" ".join(vocab[r] for r in row) for row in qranks]
        source = "Zipf(1.2) pseudo-words, 50k vocabulary, 100 words a passage (MLQA not found)"
    return Corpus(passages, queries, source)


def _fresh_python(code: str) -> dict[str, float]:
    """Run ``code`` in a new interpreter (cold caches of Python, not of the OS); it prints JSON."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@dataclass
class EngineResult:
    name: str
    import_s: float = float("nan")
    cold_start_s: float = float("nan")
    build_small_s: float = float("nan")
    build_full_s: float = float("nan")
    bytes_per_passage: float = float("nan")
    qps: dict[str, float] = field(default_factory=dict)  # "k=10 t=2" -> queries/s
    latency_ms: float = float("nan")  # one query, median of 20
    extra: dict[str, float] = field(default_factory=dict)


def bench_lucene(corpus: Corpus, work: Path, n_small: int, threads: Sequence[int], ks: Sequence[int]) -> tuple[EngineResult, list[list[str]]]:
    from retriever.sparse import SparseRetriever, build_sparse_indexes

    r = EngineResult("Lucene (xqa → Anserini)")
    r.extra["import_retriever_sparse_s"] = _fresh_python(
        "import time; t=time.perf_counter(); import retriever.sparse; "
        "print('{\"s\": %f}' % (time.perf_counter()-t))")["s"]
    r.import_s = r.extra["import_retriever_sparse_s"]
    r.extra["jvm_start_s"] = _fresh_python(
        "import time; from retriever.sparse.java import ensure_jvm; t=time.perf_counter(); ensure_jvm(); "
        "print('{\"s\": %f}' % (time.perf_counter()-t))")["s"]
    r.extra["import_pyserini_search_lucene_s"] = _fresh_python(
        "import time; from retriever.sparse.java import ensure_jvm, import_pyserini; ensure_jvm(); "
        "t=time.perf_counter(); import_pyserini('pyserini.search.lucene'); "
        "print('{\"s\": %f}' % (time.perf_counter()-t))")["s"]

    t = time.perf_counter()
    build_sparse_indexes(corpus.passages[:n_small], work / "lucene-small", threads=max(threads),
                         overwrite=True, progress=False)
    r.build_small_s = time.perf_counter() - t
    t = time.perf_counter()
    summary = build_sparse_indexes(corpus.passages, work / "lucene", threads=max(threads), overwrite=True)
    r.build_full_s = time.perf_counter() - t
    r.bytes_per_passage = summary["languages"]["en"]["index_bytes"] / len(corpus.passages)

    query = json.dumps(corpus.queries[0])
    cold = _fresh_python(
        "import time, json; t0=time.perf_counter(); from retriever.sparse import SparseRetriever; "
        "from xqa.records import Question; t1=time.perf_counter(); "
        f"r=SparseRetriever.load({json.dumps(str(work / 'lucene'))}); t2=time.perf_counter(); "
        f"h=r.search([Question('q', {query}, 'en')], 10); t3=time.perf_counter(); assert h[0]; "
        "print(json.dumps({'import': t1-t0, 'load': t2-t1, 'first_query': t3-t2, 'total': t3-t0}))")
    r.cold_start_s = cold["total"]
    r.extra["cold_load_incl_jvm_s"] = cold["load"]
    r.extra["cold_first_query_s"] = cold["first_query"]

    questions = [Question(f"q{i}", q, "en") for i, q in enumerate(corpus.queries)]
    with SparseRetriever.load(work / "lucene") as retriever:
        for _ in range(2):  # the JIT needs a few thousand queries before Lucene runs at speed
            retriever.search(questions, 10)
        for k in ks:
            for n_threads in threads:
                retriever.threads = n_threads
                t = time.perf_counter()
                retriever.search(questions, k)
                r.qps[f"k={k} threads={n_threads}"] = len(questions) / (time.perf_counter() - t)
        retriever.threads = 1
        lat = []
        for q in questions[:20]:
            t = time.perf_counter()
            retriever.search([q], 10)
            lat.append(time.perf_counter() - t)
        r.latency_ms = 1000 * sorted(lat)[len(lat) // 2]
        top10 = [[h.id for h in hs] for hs in retriever.search(questions[:500], 10)]
    return r, top10


def bench_bm25s(corpus: Corpus, work: Path, n_small: int, threads: Sequence[int],
                ks: Sequence[int]) -> tuple[EngineResult, list[list[str]]]:
    import bm25s
    import Stemmer

    r = EngineResult(f"bm25s {bm25s.__version__} (numpy)")
    r.import_s = _fresh_python("import time; t=time.perf_counter(); import bm25s, Stemmer; "
                               "print('{\"s\": %f}' % (time.perf_counter()-t))")["s"]
    stemmer = Stemmer.Stemmer("porter")
    texts = [p.contents() for p in corpus.passages]

    def build(n: int) -> Any:
        model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        model.index(bm25s.tokenize(texts[:n], stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
        return model

    t = time.perf_counter()
    build(n_small)
    r.build_small_s = time.perf_counter() - t
    t = time.perf_counter()
    model = build(len(texts))
    r.build_full_s = time.perf_counter() - t
    folder = work / "bm25s"
    model.save(str(folder), show_progress=False)
    r.bytes_per_passage = _folder_bytes(folder) / len(texts)

    query = json.dumps(corpus.queries[0])
    cold = _fresh_python(
        "import time, json; t0=time.perf_counter(); import bm25s, Stemmer; "
        f"m=bm25s.BM25.load({json.dumps(str(folder))}, show_progress=False); "
        f"q=bm25s.tokenize([{query}], stopwords='en', stemmer=Stemmer.Stemmer('porter'), show_progress=False); "
        "d, s = m.retrieve(q, k=10, show_progress=False); t1=time.perf_counter(); "
        "print(json.dumps({'total': t1-t0}))")
    r.cold_start_s = cold["total"]

    def search(queries: list[str], k: int, n_threads: int) -> Any:
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
        return model.retrieve(tokens, k=k, show_progress=False, n_threads=n_threads)

    search(corpus.queries, 10, 1)
    for k in ks:
        for n_threads in threads:
            t = time.perf_counter()
            search(corpus.queries, k, n_threads)
            r.qps[f"k={k} threads={n_threads}"] = len(corpus.queries) / (time.perf_counter() - t)
    lat = []
    for q in corpus.queries[:20]:
        t = time.perf_counter()
        search([q], 10, 1)
        lat.append(time.perf_counter() - t)
    r.latency_ms = 1000 * sorted(lat)[len(lat) // 2]
    docs, scores = search(corpus.queries[:500], 10, 1)
    top10 = [[corpus.passages[int(d)].id for d, s in zip(row, srow) if s > 0] for row, srow in zip(docs, scores)]
    return r, top10


def top10_overlap(a: list[list[str]], b: list[list[str]]) -> float:
    """Mean |A ∩ B| / max(|A|, |B|) over queries (1.0 = same top-10 sets)."""
    vals = [len(set(x) & set(y)) / max(len(x), len(y)) for x, y in zip(a, b) if x or y]
    return sum(vals) / len(vals) if vals else float("nan")


@dataclass
class SparseBench:
    n_passages: int
    n_queries: int
    n_small: int
    source: str
    engines: list[EngineResult]
    overlap_top10: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k != "engines"},
                "engines": [asdict(e) for e in self.engines]}

    def table(self) -> str:
        """A Markdown table: one column per engine."""
        names = [e.name for e in self.engines]
        rows: list[tuple[str, list[str]]] = []

        def add(label: str, values: list[Any], fmt: str) -> None:
            rows.append((label, [fmt.format(v) if isinstance(v, (int, float)) and not math.isnan(v) else "–"
                                 for v in values]))

        lucene = self.engines[0]
        add("import of the retriever module (s)", [e.import_s for e in self.engines], "{:.2f}")
        add("import of pyserini.search.lucene (s, avoided)",
            [lucene.extra.get("import_pyserini_search_lucene_s")] + [None] * (len(names) - 1), "{:.2f}")
        add("JVM start (s)", [lucene.extra.get("jvm_start_s")] + [None] * (len(names) - 1), "{:.2f}")
        add("cold start to first hit (s)", [e.cold_start_s for e in self.engines], "{:.2f}")
        add(f"index build, {self.n_small:,} passages (s)", [e.build_small_s for e in self.engines], "{:.1f}")
        add(f"index build, {self.n_passages:,} passages (s)", [e.build_full_s for e in self.engines], "{:.1f}")
        add("index build rate (passages/s)", [self.n_passages / e.build_full_s for e in self.engines], "{:,.0f}")
        add("index bytes per passage", [e.bytes_per_passage for e in self.engines], "{:,.0f}")
        for key in lucene.qps:
            add(f"queries/s, batch of {self.n_queries:,}, {key}", [e.qps.get(key) for e in self.engines], "{:,.0f}")
        add("one query, 1 thread, median (ms)", [e.latency_ms for e in self.engines], "{:.1f}")
        if len(self.engines) > 1:
            add(f"top-10 overlap with Lucene ({min(500, self.n_queries)} queries)",
                [1.0, self.overlap_top10], "{:.2f}")
        header = f"| measure | {' | '.join(names)} |"
        lines = [header, "|---|" + "---:|" * len(names)]
        lines += [f"| {label} | {' | '.join(vals)} |" for label, vals in rows]
        return "\n".join(lines)


def run_bench(n_passages: int = 100_000, n_queries: int = 2000, n_small: int = 5000, seed: int = 0,
              work: str | Path = "build/bench/sparse", threads: Sequence[int] = (1, 2),
              ks: Sequence[int] = (10, 100), peer: bool = True) -> SparseBench:
    """Run the whole benchmark; see the module docstring for what is measured."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    corpus = synthesize_corpus(n_passages, n_queries, seed)
    lucene, lucene_top = bench_lucene(corpus, work, min(n_small, n_passages), threads, ks)
    result = SparseBench(n_passages, n_queries, min(n_small, n_passages), corpus.source, [lucene])
    if peer:
        try:
            peer_result, peer_top = bench_bm25s(corpus, work, min(n_small, n_passages), threads, ks)
        except ImportError as e:
            print(f"bm25s peer skipped: {e} (pip install 'xqa[bench]')", file=sys.stderr)
        else:
            result.engines.append(peer_result)
            result.overlap_top10 = top10_overlap(lucene_top, peer_top)
    return result
