"""The demo: formatting and validation (pure), the app's wiring, the CLI, and 20 concurrent users.

The UI-logic tests use a small fake with the Pipeline interface; the
concurrency test and the benchmark test run the REAL embedded pipeline
(``tiny_pipeline``) behind the launched app on 127.0.0.1.
"""
from __future__ import annotations

import ast
import html
import os
import re
import socket
import threading
from pathlib import Path

import pytest

from apps import render
from apps.demo import DEFAULT_BATCH, Answerer, build_app, example_rows, language_choices, warm_up
from xqa.config import PipelineConfig
from xqa.errors import XqaError
from xqa.pipeline import Pipeline
from xqa.records import Answer, Candidate, Context, Evidence

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ a fake with the Pipeline interface

def _ctx(pid, title, text, lang="en", score=1.0, source="dense"):
    return Context(id=pid, title=title, text=text, lang=lang, score=score, source=source)


class FakePipeline:
    """Records what it was asked; answers with fixed evidence. Never loads anything.

    ``ask`` is the real :meth:`Pipeline.ask` (language identification, then ``answer``)."""

    ask = Pipeline.ask
    question_language = Pipeline.question_language
    question_languages = Pipeline.question_languages
    script_indexes = Pipeline.script_indexes
    readers = Pipeline.readers

    def __init__(self, methods=("sparse", "dense", "scd"), languages=("en", "ja", "zh_cn", "fi"),
                 examples=(), error: Exception | None = None, fallback: str | None = None):
        self.config = PipelineConfig(languages=list(languages), examples=list(examples))
        self.config.retrieval.method = "scd"
        self.methods = list(methods)
        self.calls: list[dict] = []
        self.error = error
        self.loaded = False
        self.fallback, self.retrievers = fallback, []
        self.loaded_readers: list = []
        self.calibrator = None

    def calibrator_of(self, name=None, which="answerability"):
        return self.calibrator

    def answer(self, questions, method=None, k=None, n_passages=None, **kw):
        self.calls.append({"questions": list(questions), "method": method, "k": k, "n_passages": n_passages,
                           "reader": kw.get("reader")})
        if self.error:
            raise self.error
        ev = (Evidence(_ctx("p1", "Kalevala", "Elias Lönnrot compiled the <Kalevala> in 1835.", score=12.5,
                            source="corroborated"), 0.7),
              Evidence(_ctx("p2", "Lönnrot", "LÖNNROT was a physician & philologist.", lang="fi", score=3.25,
                            source="sparse"), 0.3))
        return [Answer(question_id=q.id, text="Lönnrot", score=0.8,
                       candidates=(Candidate("Lönnrot", 0.8, -0.2), Candidate("Runeberg", 0.2, -1.6)),
                       evidence=ev) for q in questions]

    # used by warm_up
    def retriever(self, method):
        self.loaded = True
        self.retrievers.append(method)

    def fallback_for(self, method):
        return self.fallback if self.fallback != method else None

    @property
    def reader(self):
        return object()

    def reader_of(self, name=None):
        self.config.reader_config(name)
        self.loaded_readers.append(name)
        return object()


# ------------------------------------------------------------------ validation

def test_validate_question():
    assert render.validate_question("") == "Please type a question."
    assert render.validate_question("   \n ") == "Please type a question."
    assert render.validate_question(None) == "Please type a question."
    msg = render.validate_question("x" * 501)
    assert msg and "501" in msg and "500" in msg
    assert render.validate_question("x" * 500) is None
    assert render.validate_question("  " + "x" * 500 + "  ") is None  # surrounding space does not count
    assert render.validate_question("abc", max_chars=2) is not None
    for symbols in ("???", " ¿? ", "…!", "🗼"):   # nothing to search for
        assert "no letters or digits" in render.validate_question(symbols)
    for words in ("東京?", "١٩٤٨؟", "ไทย", "x", "2"):
        assert render.validate_question(words) is None


# ------------------------------------------------------------------ highlighting

def test_highlight_escapes_html_and_marks_case_insensitively():
    out = render.highlight("<b>Tokyo</b> & TOKYO tower; tokyo.", ["tokyo"])
    assert out == ("&lt;b&gt;<mark>Tokyo</mark>&lt;/b&gt; &amp; <mark>TOKYO</mark> tower; <mark>tokyo</mark>.")


def test_highlight_escapes_the_needle_and_regex_characters():
    out = render.highlight("C++ (language) and c++", ["C++ (language)"])
    assert out == "<mark>C++ (language)</mark> and c++"
    assert render.highlight("a <script>", ["<script>"]) == "a <mark>&lt;script&gt;</mark>"


def test_highlight_non_latin_scripts_without_word_boundaries():
    # Japanese and Chinese have no spaces; Korean glues particles to the word
    assert render.highlight("東京タワーの高さは333メートル", ["333メートル"]) == "東京タワーの高さは<mark>333メートル</mark>"
    assert render.highlight("서울은 한국의 수도", ["서울"]) == "<mark>서울</mark>은 한국의 수도"
    assert render.highlight("Ёлка и ЁЛКА", ["ёлка"]) == "<mark>Ёлка</mark> и <mark>ЁЛКА</mark>"


def test_highlight_respects_word_starts_and_number_ends():
    assert render.highlight("Comparison of Paris", ["paris"]) == "Comparison of <mark>Paris</mark>"
    assert render.highlight("in 1990 and 1", ["1"]) == "in 1990 and <mark>1</mark>"
    # white space inside the answer matches any run of white space
    assert render.highlight("Elias\n  Lönnrot", ["Elias Lönnrot"]) == "<mark>Elias\n  Lönnrot</mark>"


def test_highlight_prefers_longer_needles_and_ignores_empty_ones():
    assert render.highlight("New York City", ["New York", "New York City", "", "  "]) == "<mark>New York City</mark>"
    assert render.highlight("a < b", []) == "a &lt; b"


def test_highlight_matches_composed_and_decomposed_forms():
    decomposed = "Lo\u0308nnrot"  # o + combining diaeresis
    assert "<mark>" in render.highlight(f"by {decomposed}", ["Lönnrot"])


# ------------------------------------------------------------------ answer, n-best, evidence

def _answer():
    return FakePipeline().answer([type("Q", (), {"id": "q1"})()])[0]


def test_answer_html_shows_text_probability_and_where_found():
    out = render.answer_html(_answer(), fused=True)
    assert 'id="xqa-answer-text" dir="auto">Lönnrot<' in out
    assert ">0.800<" in out and "fused probability" in out
    assert "found in 2 of 2 passages read" in out
    assert "reader probability" in render.answer_html(_answer(), fused=False)


def test_answer_html_for_translated_and_empty_answers():
    a = _answer()
    translated = Answer(question_id="q", text="リョンロート", score=0.4, candidates=a.candidates, evidence=a.evidence)
    assert "not found verbatim" in render.answer_html(translated, fused=True)
    assert "(no answer)" in render.answer_html(Answer(question_id="q", text="", score=0.0), fused=True)
    hostile = Answer(question_id="q", text="<img src=x onerror=alert(1)>", score=0.1)
    assert "<img" not in render.answer_html(hostile, fused=True)


def test_an_answer_written_from_a_copied_span_says_so_and_marks_the_span():
    a = _answer()
    copied = Candidate("リョンロート", 0.8, -0.2, written="Lönnrot")
    answer = Answer(question_id="q", text="リョンロート", score=0.8,
                    candidates=(copied, *a.candidates[1:]), evidence=a.evidence)
    out = render.answer_html(answer, fused=True)
    assert "the reader copied “Lönnrot” (found in 2 of 2 passages read)" in out and "label table" in out
    assert render.nbest_rows(answer)[0] == [1, "リョンロート ← Lönnrot", 0.8, -0.2, 2]
    ev = render.evidence_html(answer)
    assert "Elias <mark>Lönnrot</mark> compiled" in ev and ev.count('class="xqa-passage xqa-hit"') == 2


def test_nbest_rows():
    rows = render.nbest_rows(_answer())
    assert rows == [[1, "Lönnrot", 0.8, -0.2, 2], [2, "Runeberg", 0.2, -1.6, 0]]
    assert len(render.NBEST_HEADERS) == len(rows[0])
    import dataclasses

    many = _answer()
    many = dataclasses.replace(many, candidates=many.candidates * 8)      # 16 candidates: the best 10 shown
    assert [r[0] for r in render.nbest_rows(many)] == list(range(1, render.NBEST_SHOWN + 1)) == list(range(1, 11))


def test_evidence_html_has_every_field_escaped_and_the_answer_marked():
    out = render.evidence_html(_answer())
    rows = re.findall(r"<tr class=\"xqa-passage[^\"]*\" data-id=\"([^\"]+)\">(.*?)</tr>", out)
    assert [r[0] for r in rows] == ["p1", "p2"]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r[1]) for r in rows]
    assert cells[0][0] == "1" and cells[0][1] == "Kalevala" and cells[0][2] == "en"
    assert "corroborated" in cells[0][3] and cells[0][4] == "12.500" and cells[0][5].startswith("0.700")
    assert cells[0][6] == "Elias <mark>Lönnrot</mark> compiled the &lt;Kalevala&gt; in 1835."
    assert cells[1][6] == "<mark>LÖNNROT</mark> was a physician &amp; philologist."
    assert "sparse" in cells[1][3] and cells[1][2] == "fi"
    assert all(f"<th>{html.escape(h)}</th>" in out for h in render.EVIDENCE_HEADERS)
    assert "No passages" in render.evidence_html(Answer(question_id="q", text="x", score=1.0))
    assert 'class="xqa-src xqa-src-corroborated"' in out
    # a source becomes a CSS class name: the fallback's "dense (fallback)" gets its own colour
    assert render._css_name("dense (fallback)") == "dense-fallback" and ".xqa-src-dense-fallback" in render.CSS
    assert render._css_name("sparse+roman") == "sparse_roman"


def test_status_line():
    s = render.status_markdown("ja", True, "scd", 60, 20, 0.4321)
    assert "Japanese" in s and "`ja`" in s and "detected" in s and "K = 60" in s and "20 passages" in s
    assert "0.43 s" in s
    assert "chosen" in render.status_markdown("fi", False, "dense", 5, 5, 1.0)
    assert "**Reader:** 2 of 5 passages (retrieval found 2)" in render.status_markdown("de", True, "sparse", 20, 5,
                                                                                      1.0, read=2)
    assert "**Reader:** 5 passages" in render.status_markdown("de", True, "sparse", 20, 5, 1.0, read=5)


# ------------------------------------------------------------------ the /answer event

def test_answerer_detects_the_language_and_passes_the_settings():
    pipe = FakePipeline()
    status, answer, nbest, evidence, record = Answerer(pipe)("東京タワーの高さは？", "auto", "dense", 30, 10)
    [call] = pipe.calls
    assert call["questions"][0].lang == "ja" and call["questions"][0].question == "東京タワーの高さは？"
    assert call["method"] == "dense" and call["k"] == 30 and call["n_passages"] == 10
    assert "Japanese" in status and "detected" in status
    assert "Lönnrot" in answer and len(nbest) == 2 and "<mark>" in evidence
    assert record["lang"] == "ja" and record["detected"] is True and record["answer"] == "Lönnrot"


def test_the_status_says_why_a_method_gets_no_calibrated_probability():
    from reader.answerability import Calibrator

    pipe = FakePipeline()
    pipe.calibrator = Calibrator(["log_p"], [0.0], [1.0], [1.0], 0.0, {"method": "scd"})
    other = Answerer(pipe)("Who compiled the Kalevala?", "en", "sparse", 30, 10)[0]
    fitted = Answerer(pipe)("Who compiled the Kalevala?", "en", "scd", 30, 10)[0]
    assert "No P(right) for `sparse`: the calibrated probability is fitted on `scd`'s answers" in other
    assert "No P(right)" not in fitted


def test_answerer_language_override_maps_to_the_pipeline_codes():
    pipe = FakePipeline()
    Answerer(pipe)("Who compiled the Kalevala?", "fi", "scd", 60, 20)
    assert pipe.calls[-1]["questions"][0].lang == "fi"
    Answerer(pipe)("中国的首都是哪里？", "auto", "scd", 60, 20)
    assert pipe.calls[-1]["questions"][0].lang == "zh_cn"  # detected zh, the pipeline has zh_cn


def test_a_question_in_a_language_without_an_index_says_which_language_it_reads_as():
    pipe = FakePipeline()                                           # en, ja, zh_cn, fi
    answerer = Answerer(pipe)
    french = "Quelle est la capitale de l'Australie ?"
    status, _, _, _, record = answerer(french, "auto", "scd", 60, 20)
    assert pipe.calls[-1]["questions"][0].lang == "und"            # searched as unknown
    assert "reads as French (`fr`), which no index of this pipeline covers" in status
    assert "BM25 searches the indexes of its script (`en`, `fi`)" in status   # the Latin-script ones
    assert record["lang"] == "und" and record["identified"] == "fr"
    # the batched event says the same
    columns = answerer.batch([french], ["auto"], ["scd"], [60], [20])
    assert "reads as French (`fr`)" in columns[0][0] and columns[4][0]["identified"] == "fr"
    # a question whose language is one of the pipeline's, or chosen, has nothing to add
    assert answerer("Who compiled the Kalevala?", "auto", "scd", 60, 20)[4]["identified"] is None
    status, _, _, _, record = answerer(french, "und", "scd", 60, 20)
    assert record["identified"] is None and "not identified among this pipeline's" in status
    status, _, _, _, record = answerer(french, "fr", "scd", 60, 20)   # chosen: searched as und is
    assert record["lang"] == "fr" and pipe.calls[-1]["questions"][0].lang == "fr"
    assert "No index of this pipeline covers French (`fr`): BM25 searches the indexes of its script (`en`, `fi`)" in status
    status, *_ = answerer("Кто написал «Войну и мир»?", "auto", "scd", 60, 20)  # no index of its script
    assert "reads as Russian (`ru`)" in status and "no BM25 index is written in its script" in status


def test_answerer_retrieves_at_least_the_passages_it_reads():
    pipe = FakePipeline()
    Answerer(pipe)("Who?", "auto", "scd", 5, 20)
    assert pipe.calls[-1]["k"] == 20


def test_answerer_rejects_bad_input_without_calling_the_pipeline():
    pipe = FakePipeline()
    ans = Answerer(pipe)
    for question in ("", "   ", "x" * 501):
        status, answer, nbest, evidence, record = ans(question, "auto", "scd", 60, 20)
        assert status.startswith("⚠️") and answer == "" and nbest == [] and evidence == "" and record is None
    status = ans("Who?", "auto", "spar", 60, 20)[0]
    assert "not available" in status and "sparse, dense, scd" in status
    assert pipe.calls == []


def test_answerer_says_what_is_wrong_with_each_value_an_api_client_sends():
    """K and passages read are whole numbers within bounds (a fraction is refused, not truncated; 0
    is refused, not taken for the default); a language, method or reader of another type is named."""
    pipe = FakePipeline()
    ans = Answerer(pipe)
    for k, n, says in ((0, 2, "K (passages retrieved): choose a number from 1 to 1000, not 0"),
                       (-5, 2, "K (passages retrieved): choose a number from 1 to 1000, not -5"),
                       (10**9, 2, "not 1000000000"),
                       (2.5, 2, "K (passages retrieved): expected a whole number from 1 to 1000, got 2.5"),
                       (True, 2, "got True"), ("twenty", 2, "got 'twenty'"), (float("nan"), 2, "got nan"),
                       (10, 0, "Passages read: choose a number from 1 to 100, not 0"),
                       (0.0, 2, "from 1 to 1000, not 0.**"), (1e300, 2, "not 1e+300"),   # as a slider sends it
                       (10, 2.5, "Passages read: expected a whole number from 1 to 100, got 2.5")):
        status = ans("Who?", "auto", "scd", k, n)[0]
        assert status.startswith("⚠️") and says in status, (k, n, status)
    assert ans("Who?", ["en"], "scd", 10, 2)[0].startswith("⚠️ **Unknown language code \"['en']\"")
    assert "Retrieval method '5' is not available" in ans("Who?", "auto", 5, 10, 2)[0]
    assert ans(["Who?"], "auto", "scd", 10, 2)[0] == "⚠️ **The question must be text.**"
    assert pipe.calls == []
    ans("Who?", None, None, "20", 3.0)   # defaults for None, whole numbers in any form
    assert (pipe.calls[-1]["method"], pipe.calls[-1]["k"], pipe.calls[-1]["n_passages"]) == ("scd", 20, 3)


def test_the_inputs_hand_the_event_what_a_client_sent_and_are_drawn_as_gradios():
    """Gradio's own checks would answer an API client's out-of-range K with a traceback in the
    server log; the inputs pass the value on for Answerer.prepare to check."""
    demo = build_app(FakePipeline())
    for elem_id, block in (("question", "textbox"), ("lang", "dropdown"), ("method", "dropdown"),
                           ("k", "slider"), ("n_passages", "slider")):
        component = _by_id(demo, elem_id)
        assert component.get_block_name() == block
        assert component.preprocess(10**9) == 10**9 and component.preprocess(["x"]) == ["x"]


def test_answerer_reports_pipeline_errors_as_messages():
    pipe = FakePipeline(error=XqaError("no BM25 index for language 'sw'"))
    status = Answerer(pipe)("Nani?", "sw", "sparse", 60, 20)[0]
    assert status.startswith("⚠️") and "no BM25 index for language 'sw'" in status
    pipe = FakePipeline(error=RuntimeError("boom"))
    status = Answerer(pipe)("Who?", "auto", "scd", 60, 20)[0]
    assert "went wrong" in status and "boom" not in status  # internals stay in the server log


def test_answerer_gives_each_request_its_own_id():
    pipe = FakePipeline()
    ans = Answerer(pipe)
    threads = [threading.Thread(target=ans, args=("Who?", "auto", "scd", 60, 20)) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [c["questions"][0].id for c in pipe.calls]
    assert len(ids) == 20 and len(set(ids)) == 20


# ------------------------------------------------------------------ the app

def _by_id(demo, elem_id):
    [block] = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id]
    return block


def test_build_app_offers_exactly_the_pipeline_methods_and_loads_nothing():
    pipe = FakePipeline(methods=("dense", "spar", "spar+scd"), examples=[
        {"question": "東京タワーの高さは？", "lang": "ja"}, {"question": "東京", "lang": "ja"},
        {"question": "Who wrote Kalevala?", "lang": "en"}, {"question": "", "lang": "en"}])
    demo = build_app(pipe)
    assert pipe.calls == [] and not pipe.loaded
    method = _by_id(demo, "method")
    assert [v for _, v in method.choices] == ["dense", "spar", "spar+scd"]
    assert method.value == "dense"  # the config's "scd" is not offered: first available
    lang = _by_id(demo, "lang")
    assert lang.value == "auto" and [v for _, v in lang.choices] == ["auto", "en", "ja", "zh_cn", "fi"]
    assert _by_id(demo, "k").value == 60 and _by_id(demo, "n_passages").value == 20
    fns = [fn for fn in demo.fns.values() if fn.api_name == "answer"]
    assert len(fns) == 1 and [b.elem_id for b in fns[0].inputs] == ["question", "lang", "method", "k", "n_passages"]
    assert demo._queue.default_concurrency_limit == DEFAULT_BATCH and demo.xqa_batcher.max_batch == DEFAULT_BATCH
    unbatched = build_app(pipe, batch=1)
    assert unbatched._queue.default_concurrency_limit == 2 and unbatched.xqa_batcher is None


def test_example_rows_use_auto_where_detection_agrees():
    pipe = FakePipeline(examples=[{"question": "東京タワーの高さは？", "lang": "ja"}, {"question": "東京", "lang": "ja"},
                                  {"question": "中国的首都是哪里？", "lang": "zh_cn"}, {"question": " ", "lang": "en"},
                                  {"question": "y" * 600, "lang": "en"}])
    assert example_rows(pipe) == [["東京タワーの高さは？", "auto"], ["東京", "ja"], ["中国的首都是哪里？", "auto"]]
    assert language_choices(FakePipeline(languages=()))[0] == ("auto (detect)", "auto")
    assert len(language_choices(FakePipeline(languages=()))) > 20  # every MIA language when the config names none


def test_warm_up_reports_success_and_failure():
    said = []
    assert warm_up(FakePipeline(), said.append) is not None
    assert said[-1].startswith("xqa demo: ready in")
    said.clear()
    assert warm_up(FakePipeline(error=XqaError("no reader")), said.append) is None
    assert "warm-up failed: no reader" in said[-1]


def test_warm_up_loads_the_fallback_retriever_once():
    pipe = FakePipeline(methods=("sparse", "sparse+roman"), fallback="dense")
    assert warm_up(pipe, lambda _: None) is not None
    assert pipe.retrievers == ["sparse", "sparse+roman", "dense"]
    pipe = FakePipeline(methods=("sparse", "dense"), fallback="dense")
    assert warm_up(pipe, lambda _: None) is not None
    assert pipe.retrievers == ["sparse", "dense"]


def test_apps_import_only_xqa():
    for path in (ROOT / "apps").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for n in names:
                assert n.split(".")[0] not in {"retriever", "reader"}, f"{path} imports {n}"


# ------------------------------------------------------------------ the CLI

def test_demo_command_options():
    import argparse

    from xqa.commands import demo
    from xqa.cli_options import config_path

    p = argparse.ArgumentParser()
    demo.add_arguments(p)
    a = p.parse_args([])
    assert a.host == "127.0.0.1" and a.port == 7860 and str(config_path(a)).endswith("pipeline.json")
    assert p.parse_args(["--pipeline", "x.json"]).config == "x.json"
    assert p.parse_args(["--config", "y.json", "--port", "9000"]).port == 9000
    for action in p._actions:
        assert action.help, f"{action.option_strings} has no help"
    with pytest.raises(SystemExit):
        p.parse_args(["--share"])


def test_demo_command_reports_a_missing_config(tmp_path, capsys):
    from xqa.cli import main

    assert main(["demo", "--config", str(tmp_path / "none.json")]) == 1
    assert "no such pipeline config" in capsys.readouterr().err


# ------------------------------------------------------------------ guarding: accounts, the warning, readiness

def _server(**kw):
    from apps.demo import ServerConfig

    return ServerConfig(**kw)


def test_auth_accounts_come_from_the_file_the_variable_and_the_flag(tmp_path):
    from apps.demo import auth_users

    users = tmp_path / "users.txt"
    users.write_text("# demo accounts\nann:s3cret\n\n  bo:with:colons and spaces \n", encoding="utf-8")
    got = auth_users(_server(auth_file=str(users), auth="cy:pw"), {"XQA_DEMO_AUTH": "dee:1, eve:2,"})
    assert got == [("ann", "s3cret"), ("bo", "with:colons and spaces "), ("dee", "1"), ("eve", "2"), ("cy", "pw")]
    assert auth_users(_server(), {}) == []
    assert auth_users(_server(auth="solo:pw"), {}) == [("solo", "pw")]
    assert auth_users(_server(), {"XQA_DEMO_AUTH": "one:pw"}) == [("one", "pw")]


@pytest.mark.parametrize("line, why", [
    ("no-colon", "users.txt:2: expected USER:PASSWORD, found no ':'"),
    (":pw", "users.txt:2: expected USER:PASSWORD, the user name is empty"),
    ("ann:", "users.txt:2: the password of 'ann' is empty"),
    ("a b:pw", "users.txt:2: the user name 'a b' contains white space"),
    ("ok:pw", "the user 'ok' is given twice"),
])
def test_a_malformed_auth_file_names_its_line_and_never_the_password(tmp_path, line, why):
    from apps.demo import auth_users

    users = tmp_path / "users.txt"
    users.write_text(f"ok:first-secret\n{line}\n", encoding="utf-8")
    with pytest.raises(XqaError) as e:
        auth_users(_server(auth_file=str(users)), {})
    assert why in str(e.value) and "first-secret" not in str(e.value)


def test_malformed_variable_flag_and_missing_file_are_clear_errors(tmp_path):
    from apps.demo import auth_users

    def error(server, env):
        with pytest.raises(XqaError) as e:
            auth_users(server, env)
        return str(e.value)

    assert "$XQA_DEMO_AUTH entry 2: expected USER:PASSWORD" in error(_server(), {"XQA_DEMO_AUTH": "a:1,b"})
    assert "$XQA_DEMO_AUTH is set but empty" in error(_server(), {"XQA_DEMO_AUTH": " , "})
    assert "--auth: the password of 'ann' is empty" in error(_server(auth="ann:"), {})
    assert "given twice ($XQA_DEMO_AUTH and --auth)" in error(_server(auth="ann:x"), {"XQA_DEMO_AUTH": "ann:y"})
    assert f"--auth-file {tmp_path / 'none'}: no such file" in error(_server(auth_file=str(tmp_path / "none")), {})
    (tmp_path / "empty").write_text("# nobody yet\n", encoding="utf-8")
    assert "holds no USER:PASSWORD line" in error(_server(auth_file=str(tmp_path / "empty")), {})


def test_a_non_loopback_host_without_accounts_gets_a_warning():
    from apps.demo import exposure_warning, is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.20", "demo.example.org"]))
    assert exposure_warning("127.0.0.1", 7860, guarded=False) is None
    assert exposure_warning("0.0.0.0", 7860, guarded=True) is None
    w = exposure_warning("0.0.0.0", 7860, guarded=False)
    assert "0.0.0.0:7860" in w and "every network interface" in w and "WITHOUT AUTHENTICATION" in w
    assert "--auth-file" in w and "XQA_DEMO_AUTH" in w
    assert "the address 192.168.1.20" in exposure_warning("192.168.1.20", 80, guarded=False)


def test_a_host_that_names_no_address_is_said_before_gradio_starts():
    """Gradio would report "Cannot find empty port" for a host it cannot bind; xqa names the host.
    ('a..b' is refused by the name codec, so nothing is looked up on the network.)"""
    from apps.demo import launch

    class NeverLaunched:
        def launch(self, **kw):
            raise AssertionError("launched")

    with pytest.raises(XqaError, match=r"cannot serve on a\.\.b: no address of that name .*e\.g\. 127\.0\.0\.1"):
        launch(NeverLaunched(), host="a..b", port=7860, block=False)


def test_readiness_turns_ready_after_the_warm_up_or_reports_its_failure():
    from apps.demo import Readiness

    r = Readiness()
    assert r.report() == (503, {"ready": False, "state": "loading"})
    said = []
    assert warm_up(FakePipeline(), said.append, r) is not None
    status, body = r.report()
    assert status == 200 and body["ready"] and body["state"] == "ready" and body["seconds"] >= 0
    assert "models loaded" in said[-1]
    r = Readiness()
    assert warm_up(FakePipeline(error=XqaError("no reader")), said.append, r) is None
    assert r.report()[0] == 503 and r.report()[1]["state"] == "failed" and r.report()[1]["error"] == "no reader"
    assert Readiness("lazy").report() == (200, {"ready": True, "state": "lazy"})


def test_the_ready_route_answers_without_a_login_while_the_page_asks_for_one():
    import urllib.error
    import urllib.parse
    import urllib.request

    from apps.demo import Readiness, launch

    def status(url, data=None):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as resp:
                return resp.status
        except urllib.error.HTTPError as e:
            return e.code

    readiness = Readiness()
    demo = build_app(FakePipeline())
    url = launch(demo, port=_free_port(), auth=[("ann", "pw:1")], readiness=readiness, block=False).rstrip("/")
    try:
        assert status(url + "/ready") == 503
        readiness.set("ready", 1.0)
        assert status(url + "/ready") == 200
        assert status(url + "/config") == 401 and status(url + "/gradio_api/info") == 401
        login = url + "/login"
        assert status(login, urllib.parse.urlencode({"username": "ann", "password": "pw"}).encode()) == 400
        assert status(login, urllib.parse.urlencode({"username": "ann", "password": "pw:1"}).encode()) == 200
    finally:
        demo.close()


def test_demo_command_checks_accounts_before_loading_and_warns_when_exposed(tmp_path, capsys, monkeypatch):
    from xqa.cli import main

    monkeypatch.setenv("XQA_DEMO_AUTH", "ann")
    assert main(["demo", "--config", str(tmp_path / "none.json")]) == 1
    err = capsys.readouterr().err
    assert "$XQA_DEMO_AUTH entry 1: expected USER:PASSWORD" in err and "no such pipeline config" not in err
    monkeypatch.delenv("XQA_DEMO_AUTH")
    assert main(["demo", "--host", "0.0.0.0", "--config", str(tmp_path / "none.json")]) == 1
    err = capsys.readouterr().err
    assert "WITHOUT AUTHENTICATION" in err and "no such pipeline config" in err
    assert main(["demo", "--host", "0.0.0.0", "--auth", "ann:pw", "--config", str(tmp_path / "none.json")]) == 1
    assert "WITHOUT AUTHENTICATION" not in capsys.readouterr().err


# ------------------------------------------------------------------ the real pipeline: 20 concurrent users

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_pipeline):
    from apps.demo import launch
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(tiny_pipeline)
    demo = build_app(pipe)  # questions asked together are answered together (xqa.batching)
    url = launch(demo, port=_free_port(), block=False)
    yield url, pipe, demo
    demo.close()


def _questions(pipe, n):
    from xqa.io import read_questions

    qs = [(e["question"], e.get("lang", "")) for e in pipe.config.examples]
    if len(qs) < 4:
        test = Path(pipe.config.base_dir) / "world" / "test.jsonl"
        qs += [(q.question, q.lang) for q in read_questions(test)]
    assert qs, "the tiny pipeline has no questions to ask"
    return [qs[i % len(qs)] for i in range(n)]


@pytest.mark.slow
def test_twenty_concurrent_users_are_all_answered(served):
    from gradio_client import Client

    url, pipe, demo = served
    method = pipe.config.retrieval.method if pipe.config.retrieval.method in pipe.methods else pipe.methods[0]
    questions = _questions(pipe, 20)
    # what each question should get, asked alone and in order
    expected = {}
    for q, _ in questions:
        if q not in expected:
            rec = Answerer(pipe)(q, "auto", method, 10, 4)[4]
            expected[q] = (rec["answer"], [e["id"] for e in rec["evidence"]])
    results, errors = [None] * 20, []
    barrier = threading.Barrier(20)

    def user(i):
        try:
            client = Client(url, verbose=False, download_files=False)
            barrier.wait(timeout=120)
            results[i] = client.predict(questions[i][0], "auto", method, 10, 4, api_name="/answer")
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append(f"user {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=user, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    ids = set()
    for (q, _), res in zip(questions, results):
        assert res is not None
        status, answer_html, _nbest, evidence, record = res
        assert not status.startswith("⚠️"), status
        assert record["answer"] == expected[q][0], q
        assert [e["id"] for e in record["evidence"]] == expected[q][1], q
        assert len(record["evidence"]) == 4 and record["evidence"][0]["id"] in evidence
        assert html.escape(record["answer"]) in answer_html
        ids.add(record["id"])
    assert len(ids) == 20
    assert max(demo.xqa_batcher.sizes) > 1, demo.xqa_batcher.sizes  # some were answered together


@pytest.mark.slow
def test_bench_demo_times_every_method(tiny_pipeline):
    from xqa.tools.lib.demo import bench_demo
    from xqa.pipeline import Pipeline
    from xqa.records import Question

    pipe = Pipeline.load(tiny_pipeline)
    qs = [Question(id=str(i), question=q, lang=lang) for i, (q, lang) in enumerate(_questions(pipe, 3))]
    result = bench_demo(pipe, qs, k=10, n_passages=4)
    assert [m.method for m in result.methods] == pipe.methods
    for m in result.methods:
        assert m.n == 3 and 0 < m.p50 <= m.p95 and m.retrieve_p50 > 0 and m.read_p50 > 0
        assert 0 <= m.lang_accuracy <= 1
    table = result.table()
    assert all(m in table for m in pipe.methods) and "p50 ms" in table
    header, *rows = table.splitlines()[1:]   # every row's numbers under their heading, long names too
    end = header.index("p50 ms") + len("p50 ms")
    assert all(row[end - 1].isdigit() and row[end] == " " for row in rows), table
    # language identification loads with the cold start, not in the first method's first question
    asked = []
    real = pipe.question_language
    pipe.question_language = lambda text, *a, **k: asked.append(text) or real(text, *a, **k)
    from xqa.tools.lib.demo import load_all

    load_all(pipe, pipe.methods[:1], [q.question for q in qs])
    assert asked == [q.question for q in qs]


@pytest.mark.slow
def test_twenty_users_with_abusive_requests_are_each_answered_or_warned(served):
    """A bounded version of ``xqa bench demo --concurrency 50``: 20 users, 3 requests each, a third
    of them abusive (empty, 100 kB, binary, an HTML language code, script tags in the question)."""
    from xqa.tools.lib.load import BAD_KINDS, run_load

    url, pipe, demo = served
    method = pipe.config.retrieval.method if pipe.config.retrieval.method in pipe.methods else pipe.methods[0]
    questions = [q for q, _ in _questions(pipe, 8)]
    result = run_load(url, questions, method, 10, 4, users=20, duration=240, requests_per_user=3,
                      bad_share=0.35, seed=7, server_pid=os.getpid())
    assert sum(result.requests.values()) == 60, result.table()
    assert sum(result.failures.values()) == 0, result.table()
    assert result.requests["valid"] > 0 and sum(result.requests[k] for k in BAD_KINDS) > 0, result.table()
    assert 0 < result.percentile(50) <= result.percentile(95)
    start, peak, end = result.rss_mb
    assert peak - start < 1024, result.table()  # memory stays bounded (the test process serves and asks)
    table = result.table()
    assert "failed valid requests: 0" in table and "p95" in table


@pytest.mark.slow
def test_an_api_client_gets_a_status_line_for_each_bad_value(served, caplog):
    """Through the served app, as gradio_client sends them: each bad value is answered with the
    status line that says what is wrong, and the server logs no error."""
    from gradio_client import Client

    url, pipe, demo = served
    method = pipe.methods[0]
    client = Client(url, verbose=False, download_files=False)
    with caplog.at_level("ERROR"):
        for args, says in ((("Who?", "auto", method, 10**9, 4), "K (passages retrieved): choose a number"),
                           (("Who?", "auto", method, 10, 0), "Passages read: choose a number"),
                           (("Who?", "auto", method, 10, 2.5), "expected a whole number"),
                           (("Who?", "auto", "bogus", 10, 4), "Retrieval method 'bogus' is not available"),
                           (("Who?", "auto", method, None, "x"), "got 'x'")):
            status, answer, nbest, evidence, record = client.predict(*args, api_name="/answer")
            assert status.startswith("⚠️") and says in status, (args, status)
            assert record is None
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


def test_abusive_requests_get_escaped_warnings_without_calling_the_pipeline(monkeypatch):
    from xqa.tools.lib.load import BAD_KINDS, _check, abusive_request

    # the one valid question is identified by the script and word rules alone: which language it is
    # does not matter here, and lingua's models take seconds to load (test_langid loads them)
    monkeypatch.setattr("xqa.langid.model._lingua", lambda preload=False: None)
    pipe = FakePipeline()
    ans = Answerer(pipe)
    for kind in BAD_KINDS:
        text, lang = abusive_request(kind, "Who wrote Don Quixote?")
        out = ans(text, lang, "sparse", 10, 2)
        assert _check(kind, out) is None, (kind, out[0])
        if kind == "bad-lang":
            assert "&lt;img" in out[0] and "<img" not in out[0]
    assert len(pipe.calls) == 1  # only the script-tagged question, a valid one, reached the pipeline
    for k, n in ((10**9, 2), (10, 10**6), (10, -1), ("ten", 2)):
        assert ans("Who?", "auto", "sparse", k, n)[0].startswith("⚠️")
    assert len(pipe.calls) == 1


def test_bench_demo_under_load_is_wired_to_the_cli_and_checks_its_options(tmp_path, capsys):
    """``xqa bench demo --concurrency N`` reaches the load generator and refuses bad options
    before it serves anything."""
    from xqa.cli import main

    config = tmp_path / "pipeline.json"
    config.write_text('{"examples": [{"question": "Who wrote Kalevala?", "lang": "en"}]}', encoding="utf-8")
    assert main(["bench", "demo", "--config", str(config), "--concurrency", "2", "--duration", "0"]) != 0
    assert "--concurrency and --duration must be positive" in capsys.readouterr().err
    assert main(["bench", "demo", "--config", str(config), "--concurrency", "2", "--batch", "0"]) != 0
    assert "--batch must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_demo_compares_one_at_a_time_with_batched_in_one_table(tiny_pipeline, tmp_path, capsys):
    """``xqa bench demo --concurrency 1 3 --batch 1 4 --batcher xqa gradio``: three servers (one
    at a time, xqa's batcher, Gradio's), each loaded by 1 then 3 users; one table line per load,
    every valid request answered."""
    import json

    from xqa.cli import main

    out = tmp_path / "load.json"
    code = main(["bench", "demo", "--config", str(tiny_pipeline), "--concurrency", "1", "3", "--batch", "1", "4",
                 "--batcher", "xqa", "gradio", "--duration", "4", "--requests-per-user", "2", "--bad-share", "0.2",
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    table = text[text.index("demo under load:"):].splitlines()
    rows = [line.split() for line in table[2:8]]
    assert [tuple(r[:-7]) for r in rows] == [("1", "1"), ("1", "3"), ("4", "xqa", "1"), ("4", "xqa", "3"),
                                             ("4", "gradio", "1"), ("4", "gradio", "3")], table
    assert all(int(r[-2]) == 0 and int(r[-6]) > 0 for r in rows), table  # failed 0, some answered
    saved = json.loads(out.read_text())
    assert [(s["server"], s["users"]) for s in saved] == [("1", 1), ("1", 3), ("4 xqa", 1), ("4 xqa", 3),
                                                          ("4 gradio", 1), ("4 gradio", 3)]
    assert all(s["answered"] > 0 and s["answered_per_second"] > 0 for s in saved)


# ------------------------------------------------------------------ several readers

def _two_reader_fake():
    from xqa.config import ReaderConfig

    pipe = FakePipeline()
    pipe.config.reader.name, pipe.config.reader.n_passages = "span", 5
    pipe.config.readers = {"fid": ReaderConfig(model="fid", n_passages=12, answerability_threshold=0.9)}
    return pipe


def test_a_reader_selector_is_shown_only_where_the_pipeline_has_several_readers():
    single = build_app(FakePipeline())
    assert not [b for b in single.blocks.values() if getattr(b, "elem_id", None) == "reader"]
    pipe = _two_reader_fake()
    demo = build_app(pipe)
    reader = _by_id(demo, "reader")
    assert [v for _, v in reader.choices] == ["span", "fid"] and reader.value == "span"
    [fn] = [fn for fn in demo.fns.values() if fn.api_name == "answer"]
    assert [b.elem_id for b in fn.inputs] == ["question", "lang", "method", "k", "n_passages", "reader"]
    assert _by_id(demo, "n_passages").value == 5 and pipe.calls == [] and pipe.loaded_readers == []
    # choosing a reader moves the passages slider to what that reader reads
    [change] = [fn for fn in demo.fns.values() if [b.elem_id for b in fn.inputs] == ["reader"]]
    assert [b.elem_id for b in change.outputs] == ["n_passages"] and change.fn("fid") == 12


def test_the_chosen_reader_answers_with_its_own_settings_and_an_unknown_one_is_refused():
    pipe = _two_reader_fake()
    answerer = Answerer(pipe)
    status, _, _, _, record = answerer("Who wrote the Kalevala?", "en", "scd", 30, None, "fid")
    assert pipe.calls[-1]["reader"] == "fid" and pipe.calls[-1]["n_passages"] == 12   # fid's passages read
    assert record["reader"] == "fid"   # the fake's retrieval finds 2 passages of the 12 fid reads
    assert "**Reader:** fid, 2 of 12 passages (retrieval found 2)" in status
    answerer("Who wrote the Kalevala?", "en", "scd", 30, None)
    assert pipe.calls[-1]["reader"] == "span" and pipe.calls[-1]["n_passages"] == 5   # the default
    status = answerer("Who?", "en", "scd", 30, 5, "bert")[0]
    assert "Reader 'bert' is not available here; choose one of: span, fid." in status and len(pipe.calls) == 2
    # Gradio's batched event: one call per reader
    pipe.calls.clear()
    columns = answerer.batch(["Who?", "Who?", "Who?"], ["en"] * 3, ["scd"] * 3, [30] * 3, [5] * 3,
                             ["fid", "span", "fid"])
    assert sorted((c["reader"], len(c["questions"])) for c in pipe.calls) == [("fid", 2), ("span", 1)]
    assert [r["reader"] for r in columns[4]] == ["fid", "span", "fid"]


def test_warm_up_loads_every_reader():
    pipe = _two_reader_fake()
    assert warm_up(pipe, lambda _: None) is not None
    assert pipe.loaded_readers == ["span", "fid"]


def test_the_demo_routes_to_the_chosen_reader_of_a_real_pipeline(tiny_pipeline, tmp_path):
    from test_readers import _two_readers

    from reader.registry import get

    pipe = Pipeline.load(_two_readers(Path(tiny_pipeline), tmp_path))
    demo = build_app(pipe, batch=1)
    intro = _by_id(demo, "intro").value
    assert "**fid**" in intro and "**short**" in intro and intro.count(get("fid").description) == 2
    answerer = Answerer(pipe)
    question = "What continent is Mexico in?"
    short = answerer(question, "en", None, None, None, "short")[4]
    default = answerer(question, "en", None, None, None, "fid")[4]
    assert short["reader"] == "short" and short["n_passages"] == 1 and len(short["evidence"]) == 1
    assert len(short["candidates"]) == 1
    assert default["reader"] == "fid" and default["n_passages"] == 4 and len(default["evidence"]) == 4



def test_the_intro_says_which_readers_answers_carry_no_calibrated_probability(tiny_pipeline, tmp_path):
    from test_readers import CALIBRATOR, _two_readers

    from xqa.config import PipelineConfig

    path = _two_readers(Path(tiny_pipeline), tmp_path)
    cfg = PipelineConfig.load(path)
    cfg.reader.answerability = CALIBRATOR   # the default reader's; "short" has none (an --also-reader folder's lot)
    cfg.save(path)
    intro = _by_id(build_app(Pipeline.load(path), batch=1), "intro").value
    fid, short = (line for line in intro.splitlines() if line.startswith("- **"))
    assert fid.startswith("- **fid**") and "no calibrated P(right)" not in fid
    assert short.startswith("- **short**") and short.endswith("Its answers carry no calibrated P(right).")
