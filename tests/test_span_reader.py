"""The span reader: learns exact spans, never crosses passages, saves and packs losslessly enough,
and evidence fusion over spans is the paper's formula."""
from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reader.evidence import FusionParams, build_span_answer, fuse_spans
from reader.span.inference import Span, SpanOutput, SpanReader
from xqa.errors import XqaError
from xqa.records import Context, Passage, Question

ROOT = Path(__file__).resolve().parents[1]


def _tiny_reader(converted_e5: Path, seed: int = 0) -> SpanReader:
    """A randomly initialised 2-layer BERT over multilingual-e5's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from reader.span.model import SpanModel

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    cfg = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=256, pad_token_id=1,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return SpanReader(SpanModel(BertModel(cfg, add_pooling_layer=False)), tok, base="test: random 2-layer")


def _real_examples(n: int) -> tuple[list[dict], dict[str, Passage]]:
    """``n`` real questions of the shipped corpus with their paragraphs (short answers)."""
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        passages = {p["id"]: p for p in map(json.loads, f)}
    out = []
    with gzip.open(ROOT / "xqa" / "corpus" / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        for q in map(json.loads, f):
            if q.get("crosslingual") or q["lang"] not in ("en", "de", "zh", "ja") or len(q["answers"][0]) > 12:
                continue
            p = passages[q["positive_ids"][0]]
            if len(p["text"]) > 400 or q["answers"][0] not in p["text"]:
                continue
            out.append({"id": q["id"], "question": q["question"], "lang": q["lang"], "answers": q["answers"][:1],
                        "positive_ids": [p["id"]], "negative_ids": []})
            if len(out) == n:
                break
    used = {e["positive_ids"][0] for e in out}
    extra = [pid for pid in sorted(passages) if pid not in used][:4]
    return out, {pid: Passage(pid, passages[pid]["title"], passages[pid]["text"], passages[pid]["lang"])
                 for pid in sorted(used) + extra}


def _train(reader: SpanReader, examples, passages, out: Path, steps: int, **kw):
    from reader.span.task import SpanTask
    from xqa.training import TrainConfig, train

    task = SpanTask(reader, passages, negatives=1, **kw)
    return train(task, examples, TrainConfig(out_dir=str(out), batch_size=len(examples), max_steps=steps,
                                             lr=3e-3, save_every=10_000, log_every=10), progress=False)


@pytest.mark.slow
def test_a_tiny_encoder_learns_the_exact_spans_of_real_questions(converted_e5, tmp_path):
    examples, passages = _real_examples(4)
    reader = _tiny_reader(converted_e5)
    _train(reader, examples, passages, tmp_path / "run", steps=60)
    qs = [Question(e["id"], e["question"], e["lang"]) for e in examples]
    ctxs = [[_ctx(passages[e["positive_ids"][0]])] for e in examples]
    outs = reader.read(qs, ctxs, n_best=1)
    assert [o.text for o in outs] == [e["answers"][0] for e in examples]


@pytest.mark.slow
def test_spans_stay_inside_their_passage_text(converted_e5):
    reader = _tiny_reader(converted_e5, seed=3)
    q = Question("q", "Paris Paris capital France Paris", "en")
    ctxs = [_ctx(Passage("a", "Paris", "Paris is the capital and largest city of France. " * 12, "en")),
            _ctx(Passage("b", "Berlin", "Berlin is the capital of Germany.", "en")),
            _ctx(Passage("c", "", "東京は日本の首都である。", "ja"))]
    [out] = reader.read([q], [ctxs], n_best=20)
    assert out.spans and len(out.relevance) == len(out.norm) == 3
    for s in out.spans:
        text = ctxs[s.passage].text
        assert text[s.start: s.end] == s.text          # a span of its own passage's text, as written
        assert s.end - s.start <= len(text)
        assert len(reader.tokenizer(s.text, add_special_tokens=False)["input_ids"]) <= reader.settings.max_answer_len + 2
    # the question's words are never a span by themselves: spans only cover passage text tokens
    assert all(0 <= s.start < s.end <= len(ctxs[s.passage].text) for s in out.spans)


@pytest.mark.slow
def test_long_passages_are_read_in_overlapping_windows_and_spans_map_back(converted_e5):
    reader = _tiny_reader(converted_e5, seed=1)
    reader.settings.max_length, reader.settings.stride = 64, 16
    text = " ".join(f"word{i}" for i in range(300))
    [out] = reader.read([Question("q", "which word?", "en")], [[_ctx(Passage("p", "t", text, "en"))]], n_best=50)
    starts = {s.start for s in out.spans}
    assert max(starts) > len(text) // 2        # spans from later windows, in the passage's own offsets
    for s in out.spans:
        assert text[s.start: s.end] == s.text


@pytest.mark.slow
def test_save_then_load_answers_identically(converted_e5, tmp_path):
    reader = _tiny_reader(converted_e5, seed=2)
    examples, passages = _real_examples(3)
    qs = [Question(e["id"], e["question"], e["lang"]) for e in examples]
    ctxs = [[_ctx(p) for p in passages.values()][:3] for _ in examples]
    before = reader.read(qs, ctxs)
    reader.save(tmp_path / "reader")
    after = SpanReader.load(tmp_path / "reader").read(qs, ctxs)
    for a, b in zip(before, after):
        assert [s.text for s in a.spans] == [s.text for s in b.spans]
        assert np.allclose([s.score for s in a.spans], [s.score for s in b.spans], atol=1e-5)
        assert np.allclose(a.norm, b.norm, atol=1e-5) and np.allclose(a.relevance, b.relevance, atol=1e-5)


@pytest.mark.slow
def test_a_packed_reader_unpacks_to_nearly_the_same_reader(converted_e5, tmp_path):
    """The shipped form: int8 differences to the base encoder (only what training changed)."""
    from reader.span.delta import pack, unpack

    reader = SpanReader.from_encoder(converted_e5, layers=2)
    reader.model.freeze_embeddings()
    examples, passages = _real_examples(2)
    _train(reader, examples, passages, tmp_path / "run", steps=2)
    reader.save(tmp_path / "trained")
    pack(tmp_path / "trained", converted_e5, tmp_path / "packed")
    size = sum(f.stat().st_size for f in (tmp_path / "packed").iterdir())
    assert size < 2 * 1.8e6 * 1.1    # two layers' matrices as int8, nothing of the embedding matrix
    unpack(tmp_path / "packed", converted_e5, tmp_path / "unpacked")
    qs = [Question(e["id"], e["question"], e["lang"]) for e in examples]
    ctxs = [[_ctx(passages[e["positive_ids"][0]])] for e in examples]
    a = SpanReader.load(tmp_path / "trained").read(qs, ctxs)
    b = SpanReader.load(tmp_path / "unpacked").read(qs, ctxs)
    for x, y in zip(a, b):
        assert x.spans[0].text == y.spans[0].text
        assert abs(x.spans[0].score - y.spans[0].score) < 0.05
    # a folder that is no converted encoder (here the trained reader's own) is refused as the base
    for call in (lambda: pack(tmp_path / "trained", tmp_path / "trained" / "encoder", tmp_path / "p2"),
                 lambda: unpack(tmp_path / "packed", tmp_path / "trained" / "encoder", tmp_path / "u2")):
        with pytest.raises(XqaError, match="not an encoder converted by xqa convert e5"):
            call()
    assert not (tmp_path / "p2").exists() and not (tmp_path / "u2").exists()


def test_span_fusion_equals_the_hand_computation():
    """s'_ij = softmax(β r + γ R)_i · softmax(s_i)_j, identical answers summed (Ma et al. 2022, §2.2)."""
    spans = [Span("Paris", 0, 2.0), Span("Lyon", 0, 1.0), Span("paris", 1, 0.5), Span("Nice", 1, 0.0)]
    norm = [math.log(math.exp(2.0) + math.exp(1.0) + math.exp(-1.0)),   # passage 0 allows a third span
            math.log(math.exp(0.5) + math.exp(0.0))]
    r, R, beta, gamma = [0.3, -0.2], [10.0, 12.0], 2.0, 0.5
    w = np.exp([beta * r[0] + gamma * R[0], beta * r[1] + gamma * R[1]])
    w = w / w.sum()
    p_paris = w[0] * math.exp(2.0 - norm[0]) + w[1] * math.exp(0.5 - norm[1])
    p_lyon = w[0] * math.exp(1.0 - norm[0])
    p_nice = w[1] * math.exp(0.0 - norm[1])
    ranked = fuse_spans(spans, norm, r, R, beta, gamma, langs=["fr", "en"])
    assert [c.text for c in ranked] == sorted(["Paris", "Lyon", "Nice"], key=lambda t: -{"Paris": p_paris,
                                                                                        "Lyon": p_lyon,
                                                                                        "Nice": p_nice}[t])
    got = {c.text: c.score for c in ranked}
    assert got["Paris"] == pytest.approx(p_paris) and got["Lyon"] == pytest.approx(p_lyon)
    assert got["Nice"] == pytest.approx(p_nice)
    assert ranked[0].lang == "fr"       # the best member's passage language


def test_the_answer_keeps_the_best_surface_form_and_orders_evidence_by_weight():
    spans = [Span("the Eiffel Tower", 0, 1.0), Span("Eiffel Tower", 1, 3.0)]
    out = SpanOutput(spans, np.array([0.0, 1.0]), np.array([1.0, 3.0]))
    ctxs = [Context("a", "", "x the Eiffel Tower", "en", 1.0, "dense"),
            Context("b", "", "Eiffel Tower!", "de", 2.0, "sparse")]
    ans = build_span_answer("q", out, ctxs, FusionParams(1.0, 1.0))
    assert ans.text == "Eiffel Tower" and ans.candidates[0].lang == "de"
    assert [e.context.id for e in ans.evidence] == ["b", "a"]
    alone = build_span_answer("q", out, ctxs, None)   # the reader alone: its most relevant passage
    assert alone.text == "Eiffel Tower"


def test_spans_shown_alike_are_one_answer_in_fusion_and_in_its_tuning():
    """A span cut inside a bracket is shown without it (reader.answer_text.tidy_answer): the span
    ``Canberra (Melbourne`` is the answer ``Canberra``, summed with it, and graded as it is shown
    when β, γ are tuned."""
    from reader.tuning import evaluate_spans, prepare_spans

    spans = [Span("Canberra (Melbourne", 0, 2.0), Span("Sydney", 1, 2.2), Span("Canberra", 2, 1.0)]
    out = SpanOutput(spans, np.array([0.0, 0.0, 0.0]), np.array([2.0, 2.2, 1.0]))
    ctxs = [Context(f"p{i}", "", spans[i].text, "en", 1.0, "hybrid") for i in range(3)]
    ans = build_span_answer("q", out, ctxs, FusionParams(1.0, 0.0))
    # equal passage weights, one span a passage (softmax(s_i) = 1): 1/3 each, the two Canberras summed
    assert [c.text for c in ans.candidates] == ["Canberra", "Sydney"]
    assert ans.score == pytest.approx(2 / 3)
    scorer = lambda pred, golds, lang: (float(pred in golds), float(pred in golds))   # noqa: E731
    s = prepare_spans([out], [ctxs], [["Canberra"]], ["en"], scorer)
    assert evaluate_spans(s, 1.0, 0.0) == (1.0, 1.0)


def test_the_same_language_prior_adds_delta_to_the_passage_logits_of_the_question_language():
    """δ·[passage language = question language] joins β r + γ R: with δ large enough the equal
    answer written in the question's language wins; an unknown question language adds nothing."""
    spans = [Span("Kuwait City", 0, 3.0), Span("Kuwait-Stadt", 1, 2.0)]
    out = SpanOutput(spans, np.array([1.0, 0.0]), np.array([3.0, 2.0]))
    ctxs = [Context("en1", "", "at Kuwait City", "en", 1.0, "hybrid"),
            Context("de1", "", "ist Kuwait-Stadt", "de", 1.0, "hybrid")]
    assert build_span_answer("q", out, ctxs, FusionParams(1.0, 0.0), "de").text == "Kuwait City"
    delta = 2.0
    ans = build_span_answer("q", out, ctxs, FusionParams(1.0, 0.0, same_language=delta), "de")
    w = np.exp([1.0, 0.0 + delta])
    w = w / w.sum()                                          # each passage holds one span: softmax(s_i) = 1
    assert ans.text == "Kuwait-Stadt" and ans.candidates[0].lang == "de"
    assert ans.score == pytest.approx(w[1]) and [e.context.id for e in ans.evidence] == ["de1", "en1"]
    assert build_span_answer("q", out, ctxs, FusionParams(1.0, 0.0, same_language=delta), "und").text == "Kuwait City"


def test_tuning_finds_the_same_language_prior_when_answers_are_graded_in_the_question_language():
    from reader.tuning import evaluate_spans, prepare_spans, tune_span_fusion

    outs, ctxs, answers = [], [], []
    for i in range(6):   # the reader prefers the English twin; the gold is the German form
        outs.append(SpanOutput([Span(f"City {i}", 0, 3.0), Span(f"Stadt {i}", 1, 2.0)],
                               np.array([1.0, 0.0]), np.array([3.0, 2.0])))
        ctxs.append([Context(f"en{i}", "", f"City {i}", "en", 1.0, "hybrid"),
                     Context(f"de{i}", "", f"Stadt {i}", "de", 1.0, "hybrid")])
        answers.append([f"Stadt {i}"])
    scorer = lambda pred, golds, lang: (float(pred in golds), float(pred in golds))   # noqa: E731
    s = prepare_spans(outs, ctxs, answers, ["de"] * 6, scorer)
    assert evaluate_spans(s, 1.0, 0.0) == (0.0, 0.0) and evaluate_spans(s, 1.0, 0.0, 4.0) == (1.0, 1.0)
    best = tune_span_fusion(s, passes=1)
    assert best["same_language"] > 0 and best["dev_f1"] == 1.0 and best["dev_f1_by_same_language"]["0"] < 1.0


@pytest.mark.slow
def test_a_two_process_gloo_training_step_runs(converted_e5, tmp_path):
    examples, passages = _real_examples(4)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples))
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n"
                                                     for p in passages.values()))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2",
           "--master-addr", "127.0.0.1", "--master-port", str(_free_port()), "-m", "xqa.cli",
           "train", "reader", "--family", "span", "--init", str(converted_e5), "--layers", "1",
           "--train", str(tmp_path / "train.jsonl"), "--passages", str(tmp_path / "passages.jsonl"),
           "--out", str(tmp_path / "run"), "--max-steps", "1", "--batch-size", "2", "--max-length", "96",
           "--threads", "1"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    state = json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())
    assert state["step"] == 1 and state["done"]
    assert SpanReader.load(tmp_path / "run").model.encoder.config.num_hidden_layers == 1


@pytest.mark.slow
def test_a_mixed_training_counts_its_questions_and_its_draws_apart(converted_e5, tmp_path, capsys):
    """--mix draws the questions by set for one pass: the questions are the file's, the draws
    how many the pass takes (as a kit run says them)."""
    from xqa.cli import main

    examples, passages = _real_examples(6)
    for i, e in enumerate(examples):
        e["source"] = "set-a" if i < 4 else "set-b"
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples))
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n"
                                                     for p in passages.values()))
    assert main(["train", "reader", "--family", "span", "--init", str(converted_e5), "--layers", "1",
                 "--train", str(tmp_path / "train.jsonl"), "--passages", str(tmp_path / "passages.jsonl"),
                 "--out", str(tmp_path / "run"), "--epochs", "2", "--mix", "0.7", "--max-steps", "1",
                 "--batch-size", "2", "--max-length", "96", "--threads", "1"]) == 0
    said = capsys.readouterr().out
    assert "6 training questions (12 draws, mix alpha 0.7)," in said, said


def _ctx(p: Passage) -> Context:
    return Context(id=p.id, title=p.title, text=p.text, lang=p.lang, score=0.0, source="test")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
