"""The guide's Python API snippets run, in order, on the small test build and return what the
guide says they return."""
from __future__ import annotations

import json
import re
from pathlib import Path

from xqa.pipeline import Asked, Pipeline
from xqa.records import Answer, Candidate, Context, Evidence, Question

ROOT = Path(__file__).resolve().parents[1]
GUIDE_CONFIG = "build/embedded/pipeline.json"


def api_snippets() -> list[str]:
    """The ``python`` blocks of docs/guide.md between ``<!-- api: ... -->`` and ``<!-- /api -->``."""
    text = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    section = re.search(r"<!-- api: tests/test_guide_api\.py runs these -->(.*?)<!-- /api -->", text, re.S)
    assert section, "docs/guide.md has no api block"
    return re.findall(r"```python\n(.*?)```", section.group(1), re.S)


def test_the_guide_api_snippets_run_and_return_answer_records(tiny_pipeline, tmp_path, monkeypatch, capsys):
    snippets = api_snippets()
    assert len(snippets) >= 3
    code = "\n".join(snippets)
    assert code.count(f'"{GUIDE_CONFIG}"') == 1
    code = code.replace(f'"{GUIDE_CONFIG}"', repr(str(tiny_pipeline)))
    # the question's language is identified by the script and word rules alone: lingua's models take
    # seconds to load (test_langid checks what they identify)
    monkeypatch.setattr("xqa.langid.model._lingua", lambda preload=False: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "xqa").symlink_to(ROOT / "xqa")   # the guide's paths are relative to the repository
    names: dict = {}
    exec(compile(code, "docs/guide.md (api)", "exec"), names)
    printed = capsys.readouterr().out.splitlines()

    pipe = names["pipe"]
    assert isinstance(pipe, Pipeline) and pipe.methods and printed[0] == str(pipe.methods)
    asked = names["asked"]
    assert isinstance(asked, Asked) and isinstance(asked.question, Question) and asked.detected is True
    assert asked.question.lang in (*pipe.config.languages, "und")
    assert printed[1] == f"{asked.question.lang} True"
    answer = asked.answer
    assert isinstance(answer, Answer) and answer.text.strip() and answer.answered in (True, False)
    assert answer.candidates and all(isinstance(c, Candidate) for c in answer.candidates)
    assert answer.text == answer.candidates[0].text
    assert answer.evidence and all(isinstance(e, Evidence) and isinstance(e.context, Context)
                                   for e in answer.evidence)

    questions, answers = names["questions"], names["answers"]
    assert len(questions) == 4 and all(q.meta["split"] == "test" for q in questions)
    assert [a.question_id for a in answers] == [q.id for q in questions]
    assert all(isinstance(a, Answer) and a.candidates and a.evidence for a in answers)
    predictions = json.loads((tmp_path / "runs" / "api" / "predictions.json").read_text(encoding="utf-8"))
    assert predictions == {a.question_id: a.text for a in answers}
    records = [json.loads(line) for line in
               (tmp_path / "runs" / "api" / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == list(predictions) and all(r["evidence"] for r in records)
    scores = names["scores"]
    assert 0.0 <= scores.macro_em <= scores.macro_f1 <= 100.0
    assert f"EM {scores.macro_em:.1f}  F1 {scores.macro_f1:.1f}" in printed

    contexts, read = names["contexts"], names["read"]
    assert len(contexts) == 2 and all(0 < len(c) <= 5 for c in contexts)
    assert all(isinstance(c, Context) and c.source.startswith("dense") for ctxs in contexts for c in ctxs)
    assert [c.score for c in contexts[0]] == sorted((c.score for c in contexts[0]), reverse=True)
    for ctxs, a in zip(contexts, read):    # read from exactly the passages it was given
        assert {e.context.id for e in a.evidence} <= {c.id for c in ctxs}
