"""Questions answered together (xqa.batching.Batcher) get the answers they get one at a time."""
from __future__ import annotations

import threading

import pytest

from xqa.batching import Batcher
from xqa.errors import XqaError
from xqa.records import Question


def _questions(pipeline, n: int) -> list[Question]:
    from pathlib import Path

    from xqa.io import read_questions

    qs = read_questions(Path(pipeline.config.base_dir) / "world" / "test.jsonl")
    assert len(qs) >= n
    return qs[:n]


def _same(a, b) -> None:
    assert a.text == b.text and a.answered == b.answered
    assert [c.text for c in a.candidates] == [c.text for c in b.candidates]
    assert [c.score for c in a.candidates] == pytest.approx([c.score for c in b.candidates], rel=1e-4, abs=1e-4)
    assert [e.context.id for e in a.evidence] == [e.context.id for e in b.evidence]
    assert a.score == pytest.approx(b.score, rel=1e-4, abs=1e-4)
    if a.confidence is None:
        assert b.confidence is None
    else:
        assert a.confidence == pytest.approx(b.confidence, abs=1e-4)


@pytest.mark.parametrize("method", ["sparse", "dense", "spar"])
def test_questions_answered_together_get_their_one_at_a_time_answers(tiny_pipeline, method):
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(tiny_pipeline)
    qs = _questions(pipe, 12)
    alone = [pipe.answer([q], method=method, k=10, n_passages=4)[0] for q in qs]
    # a wait long enough that all twelve join one batch, asked from as many threads
    batcher = Batcher(pipe, max_batch=32, max_wait=2.0)
    futures = [None] * len(qs)
    start = threading.Barrier(len(qs))

    def ask(i):
        start.wait(timeout=60)
        futures[i] = batcher.submit(qs[i], method=method, k=10, n_passages=4)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(qs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    together = [f.result(timeout=300) for f in futures]
    batcher.close()
    assert max(batcher.sizes) > 1, batcher.sizes
    assert sum(size * n for size, n in batcher.sizes.items()) == len(qs)
    for q, a, b in zip(qs, alone, together):
        assert a.question_id == b.question_id == q.id
        _same(a, b)


def test_requests_with_different_settings_are_answered_apart_and_a_failure_stays_with_its_question():
    class Recording:
        def __init__(self):
            self.calls = []

        def question_languages(self, text, lang="auto"):
            return ("en" if lang == "auto" else lang), ""

        def answer(self, questions, method=None, k=None, n_passages=None):
            self.calls.append(([q.id for q in questions], method, k, n_passages))
            if any(q.question == "boom" for q in questions):
                raise XqaError("boom")
            return [f"{q.id}:{method}:{k}" for q in questions]

    pipe = Recording()
    batcher = Batcher(pipe, max_batch=8, max_wait=0.5)
    f = [batcher.submit(Question(id="a", question="x", lang="en"), "dense", 5, 2),
         batcher.submit(Question(id="b", question="boom", lang="en"), "dense", 5, 2),
         batcher.submit(Question(id="c", question="y", lang="en"), "sparse", 5, 2),
         batcher.submit(Question(id="d", question="z", lang="en"), "dense", 5, 2)]
    assert f[0].result(10) == "a:dense:5" and f[2].result(10) == "c:sparse:5" and f[3].result(10) == "d:dense:5"
    with pytest.raises(XqaError, match="boom"):
        f[1].result(10)
    # one call per setting, then the failed batch one question at a time
    assert pipe.calls[0] == (["a", "b", "d"], "dense", 5, 2)
    assert (["c"], "sparse", 5, 2) in pipe.calls
    assert [c[0] for c in pipe.calls if c[1] == "dense"][1:] == [["a"], ["b"], ["d"]]
    asked = batcher.ask("  who?  ", question_id="q9", method="dense", k=5, n_passages=2)
    assert asked.question.question == "who?" and asked.question.lang == "en" and asked.detected
    assert asked.answer == "q9:dense:5"
    with pytest.raises(XqaError, match="empty"):
        batcher.ask("   ")
    batcher.close()
    with pytest.raises(XqaError, match="closed"):
        batcher.submit(Question(id="e", question="x", lang="en"))
    with pytest.raises(XqaError):
        Batcher(pipe, max_batch=0)


def test_gradios_batched_event_gives_each_request_its_own_answer_or_warning(tiny_pipeline):
    """``xqa demo --batcher gradio``: Gradio hands the event a list per input; each request gets
    the outputs it gets alone, a bad one its warning, in its place."""
    from apps.demo import Answerer
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(tiny_pipeline)
    qs = _questions(pipe, 5)
    method = pipe.methods[0]
    texts = [q.question for q in qs[:3]] + ["   ", qs[3].question, qs[4].question]
    methods = [method, method, "dense", method, "no-such-method", method]
    langs = ["auto"] * 6
    ks, ns = [10] * 6, [4, 4, 4, 4, 4, 3]
    answerer = Answerer(pipe)
    columns = answerer.batch(texts, langs, methods, ks, ns)
    assert len(columns) == 5 and all(len(c) == 6 for c in columns)
    for i in range(6):
        alone = answerer(texts[i], langs[i], methods[i], ks[i], ns[i])
        status, record = columns[0][i], columns[4][i]
        if i in (3, 4):   # empty question, unknown method: the page's warning, no record
            assert status.startswith("⚠️") and record is None and status == alone[0]
            continue
        assert record["answer"] == alone[4]["answer"] and record["n_passages"] == ns[i]
        assert [e["id"] for e in record["evidence"]] == [e["id"] for e in alone[4]["evidence"]]
        assert columns[1][i] == alone[1]   # the answer's HTML
