"""Reader families: one registration makes a reader answer through the pipeline, and a folder's
config.json decides which family loads it."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from reader.base import ReaderFamily
from reader.evidence import log_softmax, merge_duplicates, normalize_answer, passage_log_weights
from reader.registry import family_of, get, load_reader, register, unregister
from xqa.artifacts import load_config, save_config
from xqa.config import PipelineConfig
from xqa.errors import XqaError
from xqa.pipeline import Pipeline
from xqa.records import Answer, Candidate, Context, Evidence, Question


# ------------------------------------------------------------------ a toy family, declared here only

@dataclass
class ToyOutput:
    firsts: list[str]          # each passage's first word
    relevance: np.ndarray      # [N] words of the question the passage has

    @property
    def text(self) -> str:
        return self.firsts[int(np.argmax(self.relevance))] if self.firsts else ""

    def to_dict(self) -> dict:
        return {"firsts": self.firsts, "relevance": [float(x) for x in self.relevance]}


class ToyReader:
    """Answers the first word of the passage sharing the most words with the question."""

    family = "toy"
    n_context = 3
    fusion_keys = ("beta", "gamma")

    def __init__(self, words: int = 1):
        self.words = words

    @classmethod
    def load(cls, folder) -> "ToyReader":
        return cls(**{k: v for k, v in load_config(folder, "toy_reader").items() if k == "words"})

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        save_config(folder, "toy_reader", {"words": self.words})
        return folder

    def read(self, questions, contexts, **settings):
        outs = []
        for q, ctxs in zip(questions, contexts):
            asked = set(normalize_answer(q.question).split())
            outs.append(ToyOutput([" ".join(c.text.split()[: self.words]) for c in ctxs],
                                  np.array([len(asked & set(normalize_answer(c.text).split())) for c in ctxs],
                                           dtype=np.float64)))
        return outs

    def answer(self, question, contexts, output, params=None, labels=None) -> Answer:
        ctxs = list(contexts)[: len(output.relevance)]
        if params is None:
            weights = log_softmax(output.relevance)
        else:
            weights = passage_log_weights(output.relevance, [c.score for c in ctxs], params.beta, params.gamma)
        ranked = merge_duplicates(output.firsts, weights, list(output.relevance), langs=[c.lang for c in ctxs])
        order = np.argsort(-weights, kind="stable")
        evidence = tuple(Evidence(context=ctxs[i], relevance=float(np.exp(weights[i]))) for i in order)
        best = ranked[0] if ranked else Candidate("", 0.0)
        return Answer(question.id, best.text, best.score, tuple(ranked), evidence)

    @staticmethod
    def output_from_dict(d) -> ToyOutput:
        return ToyOutput(list(d["firsts"]), np.asarray(d["relevance"], dtype=np.float64))

    @staticmethod
    def settings_key(n_context: int = 3, **_ignored) -> str:
        return f"toy{n_context}"


TOY = ReaderFamily(name="toy", kinds=("toy_reader",), load=ToyReader.load,
                   description="A toy reader answers the first word of the passage that shares the most "
                               "words with the question.")


@pytest.fixture
def toy_family():
    register(TOY)
    yield TOY
    unregister(TOY.name)


@pytest.fixture
def toy_folder(tmp_path) -> Path:
    return ToyReader().save(tmp_path / "toy")


@pytest.fixture
def toy_pipeline(tiny_pipeline, toy_family, toy_folder) -> Pipeline:
    cfg = PipelineConfig.load(tiny_pipeline)
    return Pipeline(replace(cfg, reader=replace(cfg.reader, model=str(toy_folder))))


def _ctx(pid: str, text: str, lang: str = "en", score: float = 1.0) -> Context:
    return Context(id=pid, title=pid, text=text, lang=lang, score=score, source="test")


# ------------------------------------------------------------------ the toy answers through the pipeline

def test_a_registered_family_loads_its_folder_and_an_unregistered_one_does_not(toy_folder):
    unclaimed = r"toy: not a reader: its config.json kind 'toy_reader' is none that a registered reader family loads"
    with pytest.raises(XqaError, match=unclaimed):        # not handed to the fallback family (FiD), which fails on it
        family_of(toy_folder)
    register(TOY)
    try:
        assert family_of(toy_folder) is TOY
        assert isinstance(load_reader(toy_folder), ToyReader)
        with pytest.raises(ValueError):                    # a kind belongs to one family
            register(replace(TOY, name="toy2"))
        with pytest.raises(ValueError):
            register(TOY)
    finally:
        unregister(TOY.name)
    with pytest.raises(XqaError, match=unclaimed):
        load_reader(toy_folder)


def test_a_folder_of_another_artifact_is_named_as_such_not_loaded_as_a_hugging_face_model(tmp_path):
    """A world, a packed reader, a kit run given where a reader goes: one line that says what it
    is and what to do, not transformers' "Unrecognized model" traceback."""
    cases = {"world": r"world: not a reader: its config\.json kind 'world' is none that a registered reader family "
                      r"loads \(fid_reader, span_reader; a Hugging Face model's has none; a family of your own",
             "span_reader_delta": r"packed: a packed span reader; unpack it onto its encoder first \(xqa reader "
                                  r"unpack --delta .*packed --base ENCODER --out DIR\)",
             "span_kit_reader": r"kit: a span reader trained from a kit, .*xqa reader pack --reader .*kit --base "
                                r"ENCODER --out P, then xqa reader unpack"}
    for (kind, message), name in zip(cases.items(), ("world", "packed", "kit")):
        save_config(tmp_path / name, kind, {})
        for call in (family_of, load_reader):
            with pytest.raises(XqaError, match=message):
                call(tmp_path / name)
    run = tmp_path / "run"                                    # a training run's best/ is looked into
    save_config(run, "training_run", {})
    save_config(run / "best", "world", {})
    with pytest.raises(XqaError, match=r"best: not a reader"):
        family_of(run)
    early = tmp_path / "early"                                # killed before it wrote best/
    save_config(early, "training_run", {})
    for call in (family_of, load_reader):
        with pytest.raises(XqaError, match=r"early: a training run with no model yet \(.*best is not written"):
            call(early)


def test_the_pipeline_answers_with_the_toy_from_given_passages(toy_pipeline):
    q = Question(id="q1", question="What is the capital of France?", lang="en")
    ctxs = [_ctx("zoo", "Zebras live in Africa", score=5.0),
            _ctx("paris", "Paris is the capital of France", score=1.0),
            _ctx("lyon", "Lyon is a city of France", score=2.0)]
    [alone] = toy_pipeline.answer([q], contexts=[ctxs], evidence_fusion=False)
    assert toy_pipeline.reader.family == "toy"
    assert alone.question_id == "q1" and alone.text == "Paris"
    assert [e.context.id for e in alone.evidence] == ["paris", "lyon", "zoo"]
    assert alone.candidates[0].score > alone.candidates[1].score
    assert sum(c.score for c in alone.candidates) == pytest.approx(1.0)
    assert alone.features and alone.answered is (alone.confidence is None or
                                                alone.confidence >= toy_pipeline.config.reader.answerability_threshold)
    # evidence fusion weighs the retriever score too (γ): a large enough γ lets the best-scored passage win
    fused_cfg = replace(toy_pipeline.config, reader=replace(toy_pipeline.config.reader, beta=1.0, gamma=10.0))
    [fused] = Pipeline(fused_cfg).answer([q], contexts=[ctxs], evidence_fusion=True)
    assert fused.text == "Zebras" and fused.evidence[0].context.id == "zoo"


def test_the_pipeline_asks_the_toy_about_retrieved_passages(toy_pipeline):
    from reader.answer_text import tidy_answer

    example = next(ex for ex in toy_pipeline.config.examples if ex.get("question"))
    alone = Pipeline(replace(toy_pipeline.config, reader=replace(toy_pipeline.config.reader, evidence_fusion=False)))
    asked = alone.ask(example["question"])
    a = asked.answer
    assert asked.detected and asked.question.lang
    assert 0 < len(a.evidence) <= alone.config.reader.n_passages
    # the evidence is ordered by the toy's relevance: words of the question each passage has
    asked_words = set(normalize_answer(asked.question.question).split())
    overlap = [len(asked_words & set(normalize_answer(e.context.text).split())) for e in a.evidence]
    assert overlap == sorted(overlap, reverse=True) and overlap[0] > 0
    # each candidate is a passage's first word, their probabilities (summed over passages) add up to one
    firsts = {tidy_answer(e.context.text.split()[0]) for e in a.evidence}
    assert a.text == a.candidates[0].text and {c.text for c in a.candidates} <= firsts
    assert sum(c.score for c in a.candidates) == pytest.approx(1.0)
    assert a.features and isinstance(a.answered, bool)               # answerability is judged
    assert json.loads(json.dumps(a.to_dict()))["answer"] == a.text


def test_reader_outputs_go_through_the_family_for_caches(toy_family, toy_folder, tmp_path):
    from xqa.evaluation.reading import reader_outputs, reading_stamp
    from xqa.records import RetrievalResult

    reader = load_reader(toy_folder)
    results = [RetrievalResult(Question("a", "capital of France", "en"),
                               (_ctx("z", "Zebras of Africa"), _ctx("p", "Paris capital of France")))]
    cache = tmp_path / f"dev.{reader.settings_key(n_context=2)}.jsonl"
    stamp = reading_stamp(toy_folder, results, 2)
    first = reader_outputs(reader, results, 2, beams=1, n_best=1, batch_size=1, cache=cache, stamp=stamp)
    assert cache.name == "dev.toy2.jsonl" and cache.is_file()
    again = reader_outputs(reader, results, 2, beams=1, n_best=1, batch_size=1, cache=cache, stamp=stamp)
    assert isinstance(again[0], ToyOutput) and again[0].text == first[0].text == "Paris"
    # the same question ids over other passages (another retrieval's file): read again, not reused
    other = [RetrievalResult(results[0].question, (_ctx("m", "Madrid capital of Spain"), _ctx("z", "Zebras")))]
    read = reader_outputs(reader, other, 2, beams=1, n_best=1, batch_size=1, cache=cache,
                          stamp=reading_stamp(toy_folder, other, 2))
    assert read[0].text == "Madrid"
    # another model (other files in its folder) reading the same passages is another reading
    before = reading_stamp(toy_folder, other, 2)
    (toy_folder / "weights.extra").write_text("changed")
    try:
        assert reading_stamp(toy_folder, other, 2)["model"] != before["model"]
    finally:
        (toy_folder / "weights.extra").unlink()


# ------------------------------------------------------------------ the built-in families

def test_load_reader_resolves_the_span_family(converted_e5, tmp_path):
    from transformers import AutoTokenizer, BertConfig, BertModel

    from reader.span.inference import SpanReader
    from reader.span.model import SpanModel

    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=256, pad_token_id=1)
    SpanReader(SpanModel(BertModel(cfg, add_pooling_layer=False)), tok).save(tmp_path / "run" / "best")
    save_config(tmp_path / "run", "training_run", {})
    for folder in (tmp_path / "run" / "best", tmp_path / "run"):     # the artifact, and its training run
        assert family_of(folder) is get("span")
        reader = load_reader(folder)
        assert isinstance(reader, SpanReader) and reader.family == "span"
    q = Question("q", "Where?", "en")
    [out] = reader.read([q], [[_ctx("p", "Paris is the capital of France")]], n_best=2)
    back = reader.output_from_dict(json.loads(json.dumps(out.to_dict())))
    assert [s.text for s in back.spans] == [s.text for s in out.spans]
    assert reader.answer(q, [_ctx("p", "Paris is the capital of France")], back).text == out.text


def test_an_encoder_given_as_a_reader_is_named_as_one(converted_e5):
    """A Hugging Face folder falls to the FiD family (a T5/mT5 checkpoint); an encoder's is none:
    said as such, not a traceback."""
    with pytest.raises(XqaError, match="not a reader: a Hugging Face 'bert' model \\(an encoder"):
        load_reader(converted_e5)


def test_load_reader_resolves_the_fid_family(tiny_pipeline):
    from reader.fid.inference import FiDReader

    cfg = PipelineConfig.load(tiny_pipeline)
    folder = cfg.path(cfg.reader.model)
    assert family_of(folder) is get("fid")
    reader = load_reader(folder)
    assert isinstance(reader, FiDReader) and reader.family == "fid"
    out = reader.read([Question("q", "Where?", "en")], [[_ctx("p", "Paris is the capital of France")]],
                      beams=1, n_best=1)[0]
    assert reader.output_from_dict(json.loads(json.dumps(out.to_dict()))).candidates == \
        [(t, pytest.approx(s)) for t, s in out.candidates]


def test_the_demo_intro_says_what_the_registry_says(tiny_pipeline, toy_family, toy_folder):
    from apps import render
    from apps.demo import reader_description

    cfg = PipelineConfig.load(tiny_pipeline)
    for model, family in ((cfg.reader.model, get("fid")), (str(toy_folder), toy_family)):
        described = reader_description(replace(cfg, reader=replace(cfg.reader, model=model)))
        assert described == family.description
        intro = render.intro_markdown({"passages": 12}, ["en"], "sparse", described)
        assert family.description in intro
        assert all(f.description not in intro for f in (get("fid"), get("span"), toy_family) if f is not family)


def test_the_train_command_offers_the_families_that_train():
    from xqa.cli import build_parser

    parser = build_parser(("train", "reader"))
    arch = next(a for a in parser._actions if a.dest == "family")
    assert sorted(arch.choices) == sorted(f.name for f in (get("fid"), get("span")))
    assert all(asdict(get(name)).get("training") for name in arch.choices)


def test_a_family_of_your_own_reaches_the_xqa_command_through_xqa_plugins(tiny_pipeline, toy_folder, tmp_path,
                                                                          monkeypatch, capsys):
    """The command imports the modules $XQA_PLUGINS names before it reads the registries; without
    it the folder is not a reader, and the error says how to make it one."""
    from xqa.cli import main

    args = ["ask", "--config", str(tiny_pipeline), "--reader", str(toy_folder), "Where is Norland?"]
    assert main(args) == 1
    assert "name the module in $XQA_PLUGINS" in capsys.readouterr().err
    (tmp_path / "xqa_toy_plugin.py").write_text("from reader.registry import register\n"
                                                "from test_reader_registry import TOY\n\nregister(TOY)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("XQA_PLUGINS", "xqa_toy_plugin")
    try:
        assert main(args) == 0
        printed = capsys.readouterr().out
        assert printed.startswith("question (") and "answer" in printed
    finally:
        unregister(TOY.name)
    monkeypatch.setenv("XQA_PLUGINS", "xqa_no_such_plugin")
    assert main(["info", "--config", str(tiny_pipeline)]) == 1
    assert "$XQA_PLUGINS: importing 'xqa_no_such_plugin' failed (ModuleNotFoundError" in capsys.readouterr().err


def test_a_training_option_two_families_default_differently_takes_the_chosen_familys_default():
    """A family of your own with ``n_context`` of its own default: `--family toy` without it trains
    with 3, not FiD's 20; given, it is the value given; FiD's own default stands for FiD."""
    from xqa.cli_config import ConfigCommand as Command
    from xqa.training.fid import FidTrainConfig
    from xqa.training.reader import ReaderTrainConfig, family_config, training_options

    @dataclass
    class ToyTrainConfig(ReaderTrainConfig):
        n_context: int = 3
        words: int = 1

    configs = {"fid": FidTrainConfig, "toy": ToyTrainConfig}
    options = training_options(configs)
    command = Command(options)

    def parsed(*argv: str):
        import argparse

        parser = argparse.ArgumentParser()
        command.add_arguments(parser)
        return family_config(command.config(parser.parse_args(["--out", "o", *argv])), configs)

    assert parsed("--family", "toy").n_context == 3
    assert parsed("--family", "toy", "--n-context", "20").n_context == 20
    assert parsed("--family", "fid").n_context == 20
    assert parsed("--family", "fid", "--n-context", "5").n_context == 5
    with pytest.raises(XqaError, match="--words: not an option of --family fid"):
        parsed("--family", "fid", "--words", "2")
