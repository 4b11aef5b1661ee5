"""Tuning the pipeline's weights on dev, and writing them into pipeline.json.

- :func:`tune_alpha` — the score-hybrid weight α of ``dense + α·BM25`` (Ma et al., "A Replication
  Study of Dense Passage Retriever", 2021), or w of ``BM25 + w·cross-script BM25``;
- :func:`tune_mu` — SPAR's query-side weight μ (SPAR, Chen et al. 2022, Appendix A);
- :func:`tune_lambda` — DHR's dense weight λ of ``GIP + λ·dense`` (Lin & Lin, "A Dense
  Representation Framework for Lexical and Semantic Matching", TOIS 2023);
- :func:`tune_setting` — any tunable setting a retrieval method declares (:mod:`xqa.methods`),
  on its fast path where it has one (the three above share theirs), else one search per value;
- :func:`tune_fusion` — the evidence-fusion weights β, γ (and ε or δ) of a reader (``reader.tuning``);
- :func:`tune_answerability` — the calibrated probability that an answer is right
  (:mod:`xqa.evaluation.selective`).

Each retrieval grid is one :func:`grid_search`: every value is scored on the questions by a
:class:`~xqa.evaluation.judge.Judge`, the best kept (ties broken by the tuner's rule).
:func:`write_tuned` stores the chosen values through :class:`~xqa.config.PipelineConfig`, the
``retrieval`` / ``reader`` field and a record under ``tuned``.
"""
from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xqa.errors import XqaError
from xqa.evaluation.judge import METRICS
from xqa.evaluation.reading import EVAL_MODES
from xqa.methods.builtin import LAMBDA_GRID, alpha_grid  # declared with the methods they tune



@dataclass
class TuneResult:
    """A grid search's outcome: the best value, the score of each value at the metric's k, the
    table and summary as the commands print them, and the record ``out`` holds."""

    best: float
    scores: dict[float, float]
    report: str
    record: dict[str, Any]
    written: Path | None = None  # the pipeline config the best value was written into


def grid_search(grid: Sequence[float], lists_for: Callable[[float], list], judge, ks: Sequence[int], at: int,
                label: str, fmt: Callable[[float], str], tie: Callable[[float], Any]):
    """Score ``lists_for(value)`` (ranked lists, one per question) with ``judge`` at each of ``ks``
    for every value of ``grid``; the best at ``at``, ties to the largest ``tie(value)``. Returns
    (best, {value: score at ``at``}, table rows)."""
    from tqdm.auto import tqdm

    table, rows = {}, []
    for value in tqdm(grid, desc=f"{label} grid", unit=label):
        sc = judge.scores(lists_for(value), ks)
        table[value] = sc[at]
        rows.append([fmt(value)] + [sc[k] for k in ks])
    best = max(grid, key=lambda v: (table[v], tie(v)))
    return best, table, rows


def check_writable(path: str | Path | None, what: str = "value") -> Path:
    """``path`` as the pipeline config to write a tuned ``what`` into; an error when there is none."""
    if path is None or not Path(path).is_file():
        raise XqaError(f"{path or 'no --config'}: no pipeline config to write the tuned {what} into")
    return Path(path)


def write_tuned(path: str | Path, retrieval: dict[str, Any] | None = None, reader: dict[str, Any] | None = None,
                tuned: dict[str, Any] | None = None, reader_name: str | None = None) -> Path:
    """Set the ``retrieval`` fields and those of the reader ``reader_name`` (a name of the config's
    readers; None: its default reader) of the pipeline config at ``path`` and record ``tuned``
    (default: the retrieval values) under its ``tuned``; returns the file written."""
    from xqa.config import PipelineConfig

    path = check_writable(path)
    from xqa.methods import tunable_setting

    cfg = PipelineConfig.load(path)
    for section, values in ((cfg.retrieval, retrieval or {}), (cfg.reader_config(reader_name), reader or {})):
        for name, value in values.items():
            if section is cfg.retrieval and not hasattr(section, name) and tunable_setting(name) is not None:
                section.settings[name] = value   # a registered method's own setting
                continue
            if not hasattr(section, name):
                raise XqaError(f"{name!r} is not a pipeline config field")
            setattr(section, name, value)
    cfg.tuned.update(dict(retrieval or {}) if tuned is None else tuned)
    cfg.save(path)
    return path


def _pipeline(pipeline):
    """A Pipeline from a Pipeline, a PipelineConfig or the path of a pipeline.json."""
    from xqa.config import PipelineConfig
    from xqa.pipeline import Pipeline

    if isinstance(pipeline, (str, Path)):
        pipeline = PipelineConfig.load(pipeline)
    return Pipeline(pipeline) if isinstance(pipeline, PipelineConfig) else pipeline


def _questions(questions, metric: str = "accuracy") -> list:
    """The questions a ``metric`` can judge: with answers (``accuracy``), or with ``positive_ids``
    (``recall``); the others are left out and said (every one of them would count as a miss, or
    not at all, under a count that names them), and none is an error."""
    from xqa.io import read_questions

    qs = read_questions(questions) if isinstance(questions, (str, Path)) else list(questions)
    named = isinstance(questions, (str, Path))
    if not qs:
        raise XqaError(f"{questions if named else 'the question set'}: no questions")
    if metric == "recall":
        judged, what = [q for q in qs if q.meta.get("positive_ids")], "positive_ids (their gold passages' ids)"
    else:
        judged, what = [q for q in qs if q.answers or q.answers_en], "answers"
    if not judged:
        raise XqaError(f"{str(questions) + ': ' if named else ''}none of the {len(qs)} questions given has {what}, "
                       f"which --metric {metric} judges passages by" + (
                           "" if metric == "recall" else "; questions with positive_ids: --metric recall"))
    if len(judged) < len(qs):
        print(f"note: {len(qs) - len(judged)} of {len(qs)} questions have no {what}: left out, "
              f"{len(judged)} judged", file=sys.stderr)
    return judged


def _needs(pipe, *names: str) -> None:
    from xqa.methods import named_indexes

    have = named_indexes(pipe.config.retrieval)
    missing = [n for n in names if n not in have]
    if missing:
        raise XqaError(f"no {' / '.join(missing)} index: the pipeline config names none")
    if not pipe.config.passages:
        raise XqaError("no passage file: the pipeline config names none")



def _checked_grid(at: int, values: Sequence[float] | None, default: Sequence[float], symbol: str) -> list[float]:
    """The sorted grid to try (``default`` when ``values`` is empty); ``at`` and every value checked."""
    if at < 1:
        raise XqaError(f"--at must be >= 1 (got {at})")
    grid = sorted(set(values or default))
    if any(not (x >= 0 and math.isfinite(x)) for x in grid):
        raise XqaError(f"{symbol} values must be finite and >= 0")
    return grid


def _check_out_file(out: str | Path | None) -> None:
    """A tuning writes its record to the file ``out``: a folder there is said before it searches."""
    if out and Path(out).is_dir():
        raise XqaError(f"--out {out} is a folder; name a file to write there (e.g. {Path(out) / 'tuned.json'})")


def _finish(best: float, table: dict, report: str, record: dict[str, Any], out: str | None,
            write_config: str | Path | None, retrieval: dict[str, Any]) -> TuneResult:
    """Write the record to ``out`` and the best value into ``write_config`` (each where given)."""
    from xqa.artifacts import write_json_atomic

    if out:
        write_json_atomic(out, record)
    written = write_tuned(write_config, retrieval=retrieval) if write_config is not None else None
    return TuneResult(best, table, report, record, written)

# The fields' metadata are the options of ``xqa tune alpha``, ``mu``, ``lambda``, ``fusion`` and
# ``answerability`` (:mod:`xqa.cli_config`); their commands take ``match`` with the questions
# (xqa.cli_options.add_question_arguments) and ``write_config`` as a switch for --config's file.
@dataclass
class AlphaTuneConfig:
    pair: str = field(default="hybrid", metadata={
        "metavar": "METHOD", "help": "which score hybrid of two parts: a retrieval method whose weight mixes two "
                                     "parts' scores (xqa.methods: a tunable with sides), e.g. hybrid, dense + α·BM25 "
                                     "(retrieval.alpha; also spelled dense+bm25), or sparse+roman, BM25 + "
                                     "w·cross-script BM25 (retrieval.roman_weight)"})
    metric: str = field(default="accuracy", metadata={
        "choices": METRICS, "help": "top-k answer accuracy, or recall@k of the questions' positive_ids"})
    at: int = field(default=20, metadata={"min": 1, "help": "the k of the metric (Ma et al. tune top-20)"})
    # None: the depth the pipeline fuses at, its retrieval.k
    depth: int | None = field(default=None, metadata={"min": 1, "help": (
        "k': each side's depth; the union is re-ranked (default: the depth the pipeline searches each "
        "side to and fuses at, its retrieval.k; at another depth the fused ranking differs, and the "
        "best α with it)")})
    normalize: bool | None = field(default=None, metadata={
        "help": "min-max normalise each list first (Hybrid_norm; --no-normalize: raw scores); not given: for "
                "α, as the pipeline config's retrieval.normalize (the default pipeline's: normalised), for "
                "another pair, raw"})
    step: float = field(default=0.05, metadata={"min": 0.0, "help": "grid step over [0, 2]"})
    max_alpha: float = field(default=2.0, metadata={"min": 0.0, "help": "grid upper end"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "questions per search call"})
    match: str = "lang_aware"        # answer matching: dpr | lang_aware
    out: str | None = field(default=None, metadata={
        "help": "write the grid (α → score) and the best α to this JSON file"})
    write_config: str | Path | None = None  # pipeline config to store the best value in


def tune_alpha(pipeline, questions, config: AlphaTuneConfig) -> TuneResult:
    """Grid-search the score-hybrid weight: each side is searched once to ``depth``; for every
    α in [0, ``max_alpha``] the hybrid over the union is re-ranked and scored. Ties go to the
    smaller α. ``pipeline``: a Pipeline, PipelineConfig or pipeline.json; ``questions``: a list
    or a question file."""
    _check_out_file(config.out)   # said before the search, not after it
    from retriever.fusion import hybrid
    from xqa.evaluation.judge import Judge, format_table
    from xqa.methods.builtin import side_lists

    c = config
    if c.at < 1 or c.depth is not None and c.depth < c.at:
        raise XqaError(f"need 1 <= --at <= --depth (got {c.at}, {c.depth})")
    from xqa.methods import hybrid_pair, index_kind

    method, tunable = hybrid_pair(c.pair)
    grid = alpha_grid(0.0, c.max_alpha, c.step)   # a grid that cannot be: said before the searches
    questions = _questions(questions, c.metric)
    pipe = _pipeline(pipeline)
    from xqa.methods.builtin import fused_depth

    served = fused_depth(pipe.config.retrieval)   # the depth the pipeline fuses at
    if c.depth is None:
        c = replace(c, depth=max(served, c.at))
    if c.normalize is None:   # as the pipeline reads the pair's scores: α's hybrid as configured, others raw
        c = replace(c, normalize=tunable.field == "alpha" and bool(pipe.config.retrieval.normalize))
    first, second = tunable.sides   # the score is first + w·second
    _needs(pipe, first, second)
    label = {n: index_kind(n).label or n for n in (first, second)}
    d_lists = side_lists(pipe, first, questions, c.depth, c.batch_size, label[first])
    s_lists = side_lists(pipe, second, questions, c.depth, c.batch_size, label[second])
    judge = Judge(questions, pipe.store, c.metric, c.match)
    ks = sorted({1, 5, c.at})
    best, table, rows = grid_search(
        grid,
        lambda alpha: [hybrid(d, s, c.at, alpha, c.normalize) for d, s in zip(d_lists, s_lists)],
        judge, ks, c.at, "α", lambda a: f"{a:.2f}", lambda a: -a)
    base = {first: judge.scores(d_lists, [c.at])[c.at], second: judge.scores(s_lists, [c.at])[c.at]}
    name = judge.metric_name()
    weight = tunable.symbol
    alone = f"{label[first]} alone {base[first]:.1f}, {label[second]} alone {base[second]:.1f}"
    report = (format_table([weight] + [f"{name}@{k}" for k in ks], rows)
              + f"\n\n{alone}; best {weight} = {best:.2f} "
              f"({name}@{c.at} = {table[best]:.1f}, {len(questions)} questions, "
              f"{'normalised' if c.normalize else 'raw'} scores, k' = {c.depth})"
              + (f"\nnote: each side was searched {c.depth} deep; this pipeline fuses each side's top {served} "
                 f"({'retrieval.k_each' if served > pipe.config.retrieval.k else 'retrieval.k'}), where the fused "
                 f"ranking, and the best {weight} with it, differ"
                 if c.depth != served else ""))
    record = {"pair": method.name, "setting": tunable.field, "best_alpha": best, "metric": f"{name}@{c.at}", "normalize": c.normalize,
              "depth": c.depth, "questions": len(questions), "baselines": base,
              "grid": {f"{a:.2f}": v for a, v in table.items()}}
    values = {tunable.field: best}
    if tunable.field == "alpha":   # the hybrid's scores are read as tuned: normalised or raw
        values["normalize"] = c.normalize
    return _finish(best, table, report, record, c.out, c.write_config, values)


_METRIC_AT_K = "top-k answer accuracy (R@k in the ODQA sense), or recall@k of positive_ids"


@dataclass
class MuTuneConfig:
    metric: str = field(default="accuracy", metadata={"choices": METRICS, "help": _METRIC_AT_K})
    at: int = field(default=100, metadata={"min": 1, "help": "the k of the metric (the paper picks μ by R@100)"})
    # None: the paper's 19, retriever.spar.index.MU_GRID
    grid: list[float] | None = field(default=None, metadata={
        "nargs": "+", "help": "μ values to try (default: the paper's 19)"})
    batch_size: int = field(default=128, metadata={"min": 1, "help": "questions per encoding batch"})
    match: str = "lang_aware"
    out: str | None = field(default=None, metadata={
        "help": "write the grid (μ → score) and the best μ to this JSON file"})
    write_config: str | Path | None = None


def tune_mu(pipeline, questions, config: MuTuneConfig) -> TuneResult:
    """Pick SPAR's μ: questions are encoded once (dense and Λ); each grid value is one search of
    ``[Q ; μ·QΛ]`` against the unchanged SPAR index. Ties go to the μ closest to 1."""
    _check_out_file(config.out)   # said before the search, not after it
    from retriever.spar.index import MU_GRID
    from xqa.evaluation.judge import Judge, format_table
    from xqa.methods.builtin import spar_encoded

    c = config
    grid = _checked_grid(c.at, c.grid, MU_GRID, "μ")
    questions = _questions(questions, c.metric)
    pipe = _pipeline(pipeline)
    _needs(pipe, "spar")
    spar, qd, ql = spar_encoded(pipe, questions, c.batch_size)
    judge = Judge(questions, pipe.store, c.metric, c.match)
    ks = sorted({20, c.at})
    best, table, rows = grid_search(grid, lambda mu: spar.search_encoded(qd, ql, max(ks), mu=mu), judge, ks, c.at,
                                    "μ", lambda m: f"{m:.3g}", lambda m: -abs(math.log(m)) if m > 0 else -math.inf)
    name = judge.metric_name()
    report = (format_table(["μ"] + [f"{name}@{k}" for k in ks], rows)
              + f"\n\nbest μ = {best:.3g} ({name}@{c.at} = {table[best]:.1f}, {len(questions)} questions)")
    record = {"best_mu": best, "metric": f"{name}@{c.at}", "questions": len(questions),
              "grid": {f"{m:.6g}": v for m, v in table.items()}}
    return _finish(best, table, report, record, c.out, c.write_config, {"mu": best})


@dataclass
class LambdaTuneConfig:
    metric: str = field(default="accuracy", metadata={"choices": METRICS, "help": _METRIC_AT_K})
    at: int = field(default=20, metadata={"min": 1, "help": "the k of the metric"})
    # None: LAMBDA_GRID
    grid: list[float] | None = field(default=None, metadata={
        "nargs": "+", "help": "λ values to try (default: 0, 0.05 … 2, then up to 5000; raw scores)"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "questions per encoding and search batch"})
    match: str = "lang_aware"
    out: str | None = field(default=None, metadata={
        "help": "write the grid (λ → score) and the best λ to this JSON file"})
    write_config: str | Path | None = None


def tune_lambda(pipeline, questions, config: LambdaTuneConfig) -> TuneResult:
    """Pick DHR's λ of ``GIP + λ·dense``. The scores are used raw: GIP is on the BM25 scale
    (about 10-40 for a matching passage) while e5 cosines sit near 0.8 and differ by a few
    hundredths, so the useful λ is large. Questions are tokenized and encoded once; each λ is
    one exact pass over the unchanged index. Ties go to the smaller λ."""
    _check_out_file(config.out)   # said before the search, not after it
    from xqa.evaluation.judge import Judge, format_table
    from xqa.methods.builtin import dhr_encoded

    c = config
    grid = _checked_grid(c.at, c.grid, LAMBDA_GRID, "λ")
    questions = _questions(questions, c.metric)
    pipe = _pipeline(pipeline)
    _needs(pipe, "dhr")
    dhr, batches = dhr_encoded(pipe, questions, c.batch_size)
    judge = Judge(questions, pipe.store, c.metric, c.match)
    ks = sorted({5, 20, c.at})

    def lists(view, lam=None):
        return [h for b in batches for h in view.search_encoded(b, max(ks), lam=lam)]

    best, table, rows = grid_search(grid, lambda lam: lists(dhr, lam), judge, ks, c.at, "λ",
                                    lambda x: f"{x:g}", lambda x: -x)
    dense_alone = judge.scores(lists(dhr.dense_part()), [c.at])[c.at]
    name = judge.metric_name()
    lex = f"GIP alone {table[0.0]:.1f}, " if 0.0 in table else ""
    report = (format_table(["λ"] + [f"{name}@{k}" for k in ks], rows)
              + f"\n\n{lex}dense alone {dense_alone:.1f}; best λ = {best:g} ({name}@{c.at} = {table[best]:.1f}, "
              f"{len(questions)} questions)")
    record = {"best_lam": best, "metric": f"{name}@{c.at}", "questions": len(questions),
              "dense_alone": dense_alone, "grid": {f"{x:g}": v for x, v in table.items()}}
    return _finish(best, table, report, record, c.out, c.write_config, {"lam": best})


@dataclass
class SettingTuneConfig:
    method: str                      # a registered retrieval method (xqa.methods)
    setting: str | None = None       # which of its tunable settings (None: its first)
    metric: str = "accuracy"         # top-k answer accuracy, or recall@k of positive_ids
    at: int = 20                     # the k of the metric
    grid: list[float] | None = None  # values to try (None: the setting's declared grid)
    batch_size: int = 64             # questions per search (or encoding) batch
    match: str = "lang_aware"
    out: str | None = None           # JSON file for the grid and the best value
    write_config: str | Path | None = None  # pipeline config to store the best value in


def tune_setting(pipeline, questions, config: SettingTuneConfig) -> TuneResult:
    """Grid-search a tunable setting a retrieval method declares (:class:`xqa.methods.Tunable`):
    every value is scored at ``at`` (ties by the setting's rule) through the setting's fast path
    where it declares one, else by searching the questions with the method's retriever at that
    value. ``pipeline``: a Pipeline, PipelineConfig or pipeline.json; ``questions``: a list or a
    question file. The best value goes into ``retrieval`` (a registered method's own setting into
    ``retrieval.settings``) when ``write_config`` is given."""
    _check_out_file(config.out)   # said before the search, not after it
    from xqa.evaluation.judge import Judge, format_table, search_all
    from xqa.methods import method

    c = config
    spec = method(c.method)
    t = spec.tunable(c.setting)
    grid = _checked_grid(c.at, c.grid, t.grid(), t.symbol)
    questions = _questions(questions, c.metric)
    pipe = _pipeline(pipeline)
    _needs(pipe, *spec.needs)
    ks = sorted({1, 5, c.at})
    if t.lists is not None:
        lists_for = t.lists(pipe, questions, max(ks), c.batch_size)
    else:
        def lists_for(value):
            return search_all(pipe.retriever(spec.name, **{t.field: value}), questions, max(ks),
                              f"{spec.name} {t.symbol}={t.fmt(value)}", c.batch_size, progress=False)
    judge = Judge(questions, pipe.store, c.metric, c.match)
    best, table, rows = grid_search(grid, lists_for, judge, ks, c.at, t.symbol, t.fmt, t.tie)
    name = judge.metric_name()
    report = (format_table([t.symbol] + [f"{name}@{k}" for k in ks], rows)
              + f"\n\n{spec.name}: best {t.symbol} = {t.fmt(best)} ({name}@{c.at} = {table[best]:.1f}, "
              f"{len(questions)} questions)")
    record = {"method": spec.name, "setting": t.field, f"best_{t.field}": best, "metric": f"{name}@{c.at}",
              "questions": len(questions), "grid": {t.fmt(v): score for v, score in table.items()}}
    return _finish(best, table, report, record, c.out, c.write_config, {t.field: best})


# How a reader reads the dev results (xqa tune fusion; xqa report reader takes the same options)
READING_FIELDS = ("n_context", "beams", "n_best", "span_beams", "batch_size", "limit", "eval_mode", "labels",
                  "cache", "threads")


@dataclass
class FusionTuneConfig:
    model: str = field(metadata={"help": "reader artifact (or training run folder); a packed reader or a run of "
                                         "xqa train reader --kit with --base"})
    dev: str = field(metadata={"help": "dev retrieval results (JSON list or JSONL) with answers; FILE:LANG gives "
                                       "the language of records without one (DPR's, FiD's files)"})
    out: str = field(metadata={"help": "JSON file for the tuned beta, gamma, miss"})
    # 0: the model's setting (span reader: 10)
    n_context: int = field(default=0, metadata={"help": "passages per question (0: the model's setting)"})
    beams: int = field(default=4, metadata={"min": 1, "help": "beam size"})
    n_best: int = field(default=4, metadata={"min": 1, "help": "candidates kept per question"})
    span_beams: int = field(default=0, metadata={
        "help": "add this many candidates from a beam search restricted to spans of the passages read "
                "(0: free beam search only)"})
    batch_size: int = field(default=8, metadata={"min": 1, "help": "questions per reader batch"})
    limit: int = field(default=0, metadata={"help": "use only the first N questions of each file (0: all)"})
    eval_mode: str = field(default="official", metadata={
        "choices": EVAL_MODES, "help": "EM/F1: MIA official, its language-aware variant, or simple normalized"})
    labels: str | None = field(default=None, metadata={
        "help": "answer label table (JSONL, xqa.world.labels): a span copied from a passage in "
                "another language answers in the question's language (the embedded world's: "
                "world/labels.jsonl)"})
    cache: str | None = field(default=None, metadata={
        "help": "folder for reader outputs (JSONL), reused when present"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch default)"})
    passes: int = field(default=3, metadata={"min": 1, "help": "grid passes (1 coarse + finer ones)"})
    base: str | None = field(default=None, metadata={
        "metavar": "ENCODER",
        "help": "the encoder (xqa convert e5's folder) a packed reader or a kit run given as --model is put onto, "
                "once, into a folder of the temporary directory that later runs reuse"})
    write_config: str | Path | None = None  # pipeline config to store the weights in (reader.*)


def tune_fusion(config: FusionTuneConfig) -> dict | None:
    """Read the dev results with the reader (n-best, or spans), search coarse to fine for the
    evidence-fusion weights (the reader's ``fusion_keys``) that maximise mean F1 of the fused
    answer, write them with the dev scores of fusion and of the reader alone to ``out``; the
    written dict (``reader``: the reader's family). Under torchrun the processes share the
    reading and only rank 0 tunes (the others get None)."""
    _check_out_file(config.out)   # said before the search, not after it
    import torch

    from xqa.artifacts import write_json_atomic
    from xqa.evaluation.reading import load_labels, load_results, make_scorer, reader_outputs, reading_stamp
    from xqa.pipeline import load_reader
    from xqa.distributed import init_distributed, main_process

    c = config
    if c.threads:
        torch.set_num_threads(c.threads)
    init_distributed()  # under torchrun: join the job (and on GPUs take this process's own) before loading
    labels = load_labels(c.labels)  # before the reading: a bad table fails fast
    from xqa.reader_artifacts import readable_reader

    folder = readable_reader(c.model, c.base, log=lambda line: print(line, flush=True))
    reader = load_reader(folder)
    n_context = c.n_context or reader.n_context
    results = [r for r in load_results(c.dev, c.limit) if r.question.answers]
    key = reader.settings_key(n_context=n_context, beams=c.beams, span_beams=c.span_beams, n_best=c.n_best)
    cache = Path(c.cache) / f"dev.{key}.jsonl" if c.cache else None
    stamp = reading_stamp(folder, results, n_context) if cache else None
    outputs = reader_outputs(reader, results, n_context, c.beams, c.n_best, c.batch_size, cache, c.span_beams,
                             stamp)
    if not main_process():  # another process of a torchrun job: it shared the reading, rank 0 tunes
        return None
    best = reader.tune_fusion(outputs, [r.ctxs[:n_context] for r in results], [r.question.answers for r in results],
                              [r.question.lang for r in results], make_scorer(c.eval_mode), labels,
                              passes=c.passes, progress=True)
    best.update({"model": str(c.model), "dev": str(c.dev), "n_context": n_context,
                 "beams": c.beams, "n_best": c.n_best, "span_beams": c.span_beams,
                 "eval_mode": c.eval_mode, "labels": c.labels, "reader": reader.family,
                 "tuned": list(reader.fusion_keys)})
    write_json_atomic(c.out, best)
    if c.write_config is not None:
        weights = {k: best[k] for k in reader.fusion_keys if k in best}
        write_tuned(c.write_config, reader=weights, tuned={"fusion": weights})
    return best


@dataclass
class AnswerabilityTuneConfig:
    records: list[str] = field(default_factory=list, metadata={
        "required": True, "nargs": "+", "metavar": "RECORDS",
        "help": "xqa answer records (OUT/records.jsonl or OUT) of questions with gold answers; "
                "include a --hide-gold run so the fit sees unanswerable questions"})
    out: str = field(default="", metadata={
        "required": True, "help": "folder for config.json (the calibrator, threshold, fit figures)"})
    # None: selective's default
    precision: float | None = field(default=None, metadata={"min": 0.0, "max": 1.0,
        "help": "share of shown answers that should be right at the threshold (default 0.75)"})
    l2: float = field(default=1.0, metadata={"min": 0.0, "help": "L2 penalty on the standardised coefficients"})
    not_found_share: float = field(default=0.1, metadata={"min": 0.0, "max": 1.0,
        "help": "most answerable questions (of the records without --hide-gold) that may fall below the "
                "not-found threshold: below it the demo says the collection does not hold the answer, "
                "between it and the threshold it shows an uncertain answer"})
    not_found_score: str = field(default="answerable", metadata={
        "choices": ("answerable", "calibrated"),
        "help": "what the not-found threshold applies to: a second regression of the same features fitted "
                "for whether the question is answerable (answerable), or the probability that the answer "
                "is right (calibrated)"})
    write_config: str | Path | None = None  # pipeline config to store the calibrator and thresholds in


def tune_answerability(config: AnswerabilityTuneConfig):
    """Fit the calibrated probability that an answer is right (:func:`xqa.evaluation.selective.fit`)
    and write ``out/config.json``; the fit's result."""
    from xqa.artifacts import write_json_atomic
    from xqa.evaluation import selective

    c = config
    if c.precision is not None and not 0.0 < c.precision <= 1.0:
        raise XqaError(f"--precision {c.precision}: a share in (0, 1]")
    if not 0.0 <= c.not_found_share < 1.0:
        raise XqaError(f"--not-found-share {c.not_found_share}: a share in [0, 1)")
    records = selective.read_records(c.records)
    if not records:
        raise XqaError(f"{', '.join(map(str, c.records))}: no answer records (xqa answer --out writes them)")
    names = None
    if c.write_config is not None:
        from xqa.config import PipelineConfig

        names = PipelineConfig.load(c.write_config).reader_names()
    reader = records_reader(records, default=names[0] if names else None)
    added = None   # a reader's folder (xqa answer --reader DIR): it joins the config's readers
    if names is not None and reader is not None and reader not in names:
        stored = _answered_with(c.records, reader)
        if stored is None:
            raise XqaError(f"the records were answered with --reader {reader}, which {c.write_config} does not "
                           f"name (its readers: {', '.join(names)}), and no run.json beside them says which "
                           f"folder it was: fit it without --write-config (into --out)")
        added = (_new_reader_name(reader, names), stored)
    method = _answered_method(c.records)
    result = selective.fit(records, c.precision, c.l2, not_found_share=c.not_found_share,
                           not_found_score=c.not_found_score)
    if added is not None:
        from xqa.config import PipelineConfig

        cfg = PipelineConfig.load(c.write_config)
        d = cfg.to_dict()
        d["readers"][added[0]] = {**added[1], "name": None}
        PipelineConfig.from_dict(d, base_dir=cfg.base_dir).save(c.write_config)
        reader = added[0]
    result.reader = reader
    cal = result.calibrator
    cal.fitted_on["records"] = [str(p) for p in c.records]
    if method is not None:   # the pipeline applies it to answers of this retrieval method only
        cal.fitted_on["method"] = method
        if result.answerable is not None:
            result.answerable.fitted_on["method"] = method
    write_json_atomic(Path(c.out) / "config.json", result.to_dict())
    if c.write_config is not None:
        key = "answerability" if reader is None else f"answerability.{reader}"
        write_tuned(c.write_config,
                    reader={"answerability": cal.to_dict(), "answerability_threshold": result.threshold,
                            "answerable": result.answerable.to_dict() if result.answerable else None,
                            "not_found_threshold": result.not_found_threshold},
                    tuned={key: {"threshold": result.threshold, "precision": result.precision,
                                 "not_found_threshold": result.not_found_threshold,
                                 "records": cal.fitted_on["records"]}},
                    reader_name=reader)
    return result


def _answered_method(paths: list[str]) -> str | None:
    """The retrieval method the records in ``paths`` were answered with (their ``run.json``), or
    None where no run.json says; records of two methods are refused: their retrieval scores,
    which the calibrator weighs, differ in scale."""
    from xqa.evaluation.selective import answered_methods

    found = answered_methods(paths)
    if len(found) > 1:
        raise XqaError("the records were retrieved by different methods ("
                       + ", ".join(f"{p}: {m}" for m, p in found.items())
                       + "); retrieval scores differ in scale between methods: fit one calibrator per method")
    return next(iter(found), None)


def _answered_with(paths: list[str], reader: str) -> dict[str, Any] | None:
    """The settings ``xqa answer --reader`` read the records in ``paths`` with (its ``run.json``:
    model folder, passages read, fusion weights), or None where no run.json has them."""
    for path in map(Path, paths):
        run = (path if path.is_dir() else path.parent) / "run.json"
        try:
            stored = json.loads(run.read_text(encoding="utf-8"))["settings"]["pipeline"]["readers"][reader]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(stored, dict) and stored.get("model"):
            return stored
    return None


def _new_reader_name(path: str, taken: list[str]) -> str:
    """A reader name (:data:`xqa.config.READER_NAME`) for the folder ``path``: its last part
    (its parent's for a training run's ``best``), made a name, not one of ``taken``."""
    import re

    parts = [p for p in Path(path).parts if p not in ("/", ".", "..")]
    if len(parts) > 1 and parts[-1] == "best":
        parts = parts[:-1]
    base = re.sub(r"[^A-Za-z0-9_.+-]", "-", parts[-1] if parts else "reader").lstrip("_.+-")[:60] or "reader"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def records_reader(records: list[dict[str, Any]], default: str | None = None) -> str | None:
    """The ``--reader`` that answered every record of ``records`` (None: the config's reader, whose
    name ``default`` is, where known); an error where they were answered by different readers,
    whose scores one calibrator cannot share."""
    readers: dict[str | None, str] = {}
    for rec in records:
        name = rec.get("reader")
        readers.setdefault(None if name == default else name, rec["_source"])
    if len(readers) > 1:
        said = "; ".join((f"--reader {name}" if name else "the config's reader") + f" at {where}"
                         for name, where in readers.items())
        raise XqaError(f"the records were answered by {len(readers)} readers ({said}): a calibrator is fitted "
                       f"on one reader's answers; give the records of one")
    return next(iter(readers), None)
