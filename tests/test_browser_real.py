"""The demo on real text in a real browser: a real question about a real paragraph, answered by
the shipped span reader, with its answer and evidence on the page (headless Debian Chromium)."""
from __future__ import annotations

import pytest

from test_browser import TIMEOUT_MS, _ask, _free_port, browser_context  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def served_real(real_build):
    from apps.demo import build_app, launch, warm_up
    from xqa.pipeline import Pipeline

    _, out, asked = real_build
    pipe = Pipeline.load(out / "pipeline.json")
    demo = build_app(pipe)
    url = launch(demo, port=_free_port(), block=False)
    warm_up(pipe)
    yield url, pipe, asked
    demo.close()


def test_a_real_question_shows_its_answer_and_evidence(browser_context, served_real):
    from urllib.parse import urlparse

    from apps.demo import Answerer

    url, pipe, asked = served_real
    page = browser_context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    outside = []
    page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).hostname != "127.0.0.1"
            and not r.url.startswith(("data:", "blob:")) else None)
    page.goto(url)
    intro = page.locator("#intro").inner_text()
    assert "searches 12 passages in" in intro and "extractive reader" in intro
    right = 0
    for q in asked[:2]:
        expected = Answerer(pipe)(q["question"], "auto", pipe.config.retrieval.method, pipe.config.retrieval.k,
                                  pipe.config.reader.n_passages)[4]
        _ask(page, q["question"])
        answer = page.locator("#xqa-answer-text")
        page.wait_for_function("(want) => { const e = document.querySelector('#xqa-answer-text');"
                               " return e && e.innerText.includes(want); }", arg=expected["answer"].strip())
        shown = answer.inner_text().strip()
        assert shown.startswith(expected["answer"].strip())
        gold = q["positive_ids"][0]
        rows = page.locator("tr.xqa-passage")
        ids = [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]
        assert gold in ids or q["xling"]["en"]["positive_ids"][0] in ids   # its own paragraph is evidence
        assert page.locator("tr.xqa-hit mark").count() >= 1                  # the answer highlighted in it
        # the answer as the German paragraph or its English twin writes it (both are searched)
        right += any(a.lower() in shown.lower() for a in [*q["answers"], *q["xling"]["en"]["answers"]])
    assert right >= 1
    page.close()
    assert not outside, f"the page contacted other hosts: {outside}"


def test_answers_below_the_thresholds_show_as_uncertain_or_not_found(browser_context, served_real):
    from apps.demo import Answerer
    from apps.render import NO_ANSWER_TITLE, UNCERTAIN_TITLE

    url, pipe, asked = served_real
    reader = pipe.config.reader
    assert reader.answerability is not None, "xqa build with the shipped reader writes the shipped calibrator"
    page = browser_context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    q = asked[0]["question"]
    kept = reader.answerability_threshold, reader.not_found_threshold
    # no answer is that sure: every answer is below both thresholds, so not found, with its best guess
    reader.answerability_threshold = reader.not_found_threshold = 1.0
    try:
        expected = Answerer(pipe)(q, "auto", pipe.config.retrieval.method, pipe.config.retrieval.k,
                                  reader.n_passages)[4]
        assert expected["answered"] is False and expected["state"] == "not found"
        assert 0.0 <= expected["confidence"] < 1.0
        _ask(page, q)
        page.locator("#xqa-no-answer").wait_for()
        assert page.locator("#xqa-no-answer").inner_text().strip() == NO_ANSWER_TITLE
        assert page.locator("#xqa-answer-text").inner_text().strip().startswith(expected["answer"].strip())
        assert float(page.locator("#xqa-answer-prob").inner_text()) == pytest.approx(expected["confidence"], abs=0.01)
        assert "< 1.00 and P(answerable)" in page.locator("#answer").inner_text()   # the shipped calibrators
        # below the answerability threshold only: the answer itself, shown as uncertain
        reader.not_found_threshold = 0.0
        _ask(page, q + " ")
        page.locator("#xqa-uncertain").wait_for()
        assert page.locator("#xqa-uncertain").inner_text().strip().lower() == UNCERTAIN_TITLE.lower()  # CSS upper-cases labels
        assert page.locator("#xqa-no-answer").count() == 0
        assert page.locator("#xqa-answer-text").inner_text().strip().startswith(expected["answer"].strip())
    finally:
        reader.answerability_threshold, reader.not_found_threshold = kept
    page.close()
