"""The demo in a real browser: headless Debian Chromium driven by Playwright, REAL tiny pipeline.

The app is launched in-process on a free 127.0.0.1 port; the test types
questions, submits them, and reads the answer, the n-best and the evidence
from the page, comparing them with what the pipeline answers directly. Every
request the page makes must go to 127.0.0.1 (no CDN, fonts or analytics).

Chromium comes from Debian (``make browser`` installs it; CI runs that step),
never from Playwright's own download. A screenshot goes to the test's tmp
folder (the README's picture of the embedded default is ``scripts/demo_screenshot.py``'s).
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import pytest

from apps import render

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("XQA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 180_000  # the first question may wait for the warm-up (JVM, models)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_pipeline):
    from apps.demo import build_app, launch, warm_up
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(tiny_pipeline)
    demo = build_app(pipe)
    url = launch(demo, port=_free_port(), block=False)
    warm_up(pipe)
    yield url, pipe
    demo.close()


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run 'make browser' (installs Debian's chromium; "
                    "needs root and apt) or point XQA_CHROMIUM at a Chromium binary")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 1000})
        yield context
        context.close()


@pytest.fixture
def page(browser_context, served):
    page = browser_context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    outside = []
    page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).hostname not in ("127.0.0.1",)
            and not r.url.startswith(("data:", "blob:")) else None)
    page.goto(served[0])
    yield page
    page.close()
    assert not outside, f"the page contacted other hosts: {outside}"


def _example(pipe) -> tuple[str, str]:
    """A question from the config's examples, preferring one answered from another language."""
    from xqa.io import read_questions

    exs = [(e["question"], e.get("lang", "")) for e in pipe.config.examples]
    if not exs:
        q = read_questions(Path(pipe.config.base_dir) / "world" / "test.jsonl")[0]
        exs = [(q.question, q.lang)]
    return exs[0]


def _ask(page, question: str):
    box = page.locator("#question textarea")
    box.fill("")
    box.press_sequentially(question[:40], delay=5)  # type like a user (the rest pasted: long questions)
    if len(question) > 40:
        box.fill(question)
    page.locator("#ask").click()


def test_ask_read_answer_and_evidence(page, served, tmp_path):
    from apps.demo import Answerer
    from xqa.langid import language_name

    _url, pipe = served
    cfg = pipe.config
    method = cfg.retrieval.method if cfg.retrieval.method in pipe.methods else pipe.methods[0]
    question, _ = _example(pipe)
    # what the pipeline answers directly, through the same event function, for comparison
    expected = Answerer(pipe)(question, "auto", method, cfg.retrieval.k, cfg.reader.n_passages)[4]
    assert expected is not None

    _ask(page, question)
    answer = page.locator("#xqa-answer-text")
    answer.wait_for()
    assert answer.inner_text().strip() == (expected["answer"].strip() or "(no answer)")
    assert float(page.locator("#xqa-answer-prob").inner_text()) == pytest.approx(expected["score"], abs=1e-3)

    status = page.locator("#status").inner_text()
    assert language_name(expected["lang"]) in status and "detected" in status

    rows = page.locator("#evidence tr.xqa-passage")
    assert rows.count() == len(expected["evidence"]) == min(cfg.reader.n_passages, cfg.retrieval.k)
    first = expected["evidence"][0]
    cells = rows.nth(0).locator("td")
    assert cells.nth(1).inner_text().strip() == first["title"].strip()
    assert cells.nth(2).inner_text().strip() == first["lang"]
    assert cells.nth(3).inner_text().strip() == first["source"]
    assert float(cells.nth(4).inner_text()) == pytest.approx(first["score"], abs=1e-3)
    sources = {rows.nth(i).locator("td").nth(3).inner_text().strip() for i in range(rows.count())}
    assert sources <= {"dense", "sparse", "corroborated", "spar", "hybrid", "rrf", "roman", "sparse+roman"}

    marks = [m.strip().casefold() for m in page.locator("#evidence mark").all_inner_texts()]
    # the demo marks whole-word occurrences only ("1" is not marked inside "1931")
    in_text = any(render.contains(e[f], expected["answer"]) for e in expected["evidence"] for f in ("title", "text"))
    if expected["answer"].strip() and in_text:
        assert marks and all(m == " ".join(expected["answer"].casefold().split()) for m in marks), marks
    elif expected["answer"].strip():    # e.g. "1" inside "1931": nothing is marked as the answer
        assert " ".join(expected["answer"].casefold().split()) not in marks, marks
    nbest = page.locator("#nbest").inner_text()
    for c in expected["candidates"][:2]:
        assert c["text"].strip() in nbest

    shot = tmp_path / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_empty_and_over_long_questions_get_a_message(page):
    page.locator("#ask").click()
    page.locator("#status", has_text="Please type a question.").wait_for()
    assert page.locator("#xqa-answer-text").count() == 0
    _ask(page, "why " * 130)  # 520 characters
    page.locator("#status", has_text="the limit is 500").wait_for()
    assert page.locator("#xqa-answer-text").count() == 0


def test_method_and_language_can_be_chosen(page, served):
    from apps.render import method_label
    from xqa.langid import language_name

    _url, pipe = served
    other = [m for m in pipe.methods if m != pipe.config.retrieval.method] or pipe.methods
    method = "dense" if "dense" in other else other[0]
    page.locator("#method input").click()
    page.get_by_role("option", name=method_label(method)).click()
    question, lang = _example(pipe)
    if lang:
        page.locator("#lang input").click()
        page.get_by_role("option", name=f"{lang} — {language_name(lang)}", exact=True).click()
    _ask(page, question)
    page.locator("#xqa-answer-text").wait_for()
    status = page.locator("#status").inner_text()
    assert method_label(method) in status
    if lang:
        assert f"{lang}, chosen" in status
    if method == "dense":
        rows = page.locator("#evidence tr.xqa-passage")
        assert {rows.nth(i).locator("td").nth(3).inner_text().strip() for i in range(rows.count())} == {"dense"}


# ------------------------------------------------------------------ xqa demo behind a login

def _until(lines: list[str], proc, text: str, seconds: float) -> None:
    import time

    end = time.monotonic() + seconds
    while not any(text in line for line in lines):
        if proc.poll() is not None or time.monotonic() > end:
            pytest.fail(f"xqa demo never said {text!r} (exit code {proc.poll()}):\n" + "".join(lines))
        time.sleep(0.2)


@pytest.fixture(scope="module")
def served_with_login(tiny_pipeline, tmp_path_factory):
    """``xqa demo`` in its own process on a free port, with an account from ``--auth-file`` and
    one from ``--auth``; yields (url, {user: password}) once it logs that the models are loaded."""
    import subprocess
    import sys
    import threading

    users = tmp_path_factory.mktemp("accounts") / "users.txt"
    users.write_text("# the browser test's accounts\nann:correct horse:battery\n", encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("XQA_DEMO_AUTH", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "xqa.cli", "demo", "--config", str(tiny_pipeline), "--port", str(port),
         "--auth-file", str(users), "--auth", "bo:flag-given"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    try:
        _until(lines, proc, "login: 2 accounts", TIMEOUT_MS / 1000)
        url = f"http://127.0.0.1:{port}/"
        _until(lines, proc, "models loaded", TIMEOUT_MS / 1000)
        yield url, {"ann": "correct horse:battery", "bo": "flag-given"}, lines
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_demo_behind_a_login_turns_away_a_wrong_password_and_answers_after_login(
        browser_context, served, served_with_login):
    import json
    import urllib.request

    from apps.demo import Answerer

    url, accounts, log = served_with_login
    with urllib.request.urlopen(url + "ready", timeout=30) as resp:   # no login needed to ask
        assert resp.status == 200 and json.loads(resp.read())["state"] == "ready"
    assert not any("WITHOUT AUTHENTICATION" in line for line in log)

    page = browser_context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    outside = []
    page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).hostname not in ("127.0.0.1",)
            and not r.url.startswith(("data:", "blob:")) else None)
    try:
        page.goto(url)
        login = page.get_by_role("button", name="Login")
        login.wait_for()
        assert page.locator("#question").count() == 0   # nothing of the app before the login
        page.get_by_label("username").fill("ann")
        page.get_by_label("password").fill("correct horse")   # the password is everything after the first ':'
        login.click()
        page.get_by_text("Incorrect Credentials").wait_for()
        assert page.locator("#question").count() == 0

        page.get_by_label("username").fill("bo")
        page.get_by_label("password").fill(accounts["bo"])
        login.click()
        page.locator("#question textarea").wait_for()

        _url, pipe = served
        cfg = pipe.config
        method = cfg.retrieval.method if cfg.retrieval.method in pipe.methods else pipe.methods[0]
        question, _ = _example(pipe)
        expected = Answerer(pipe)(question, "auto", method, cfg.retrieval.k, cfg.reader.n_passages)[4]
        _ask(page, question)
        answer = page.locator("#xqa-answer-text")
        answer.wait_for()
        assert answer.inner_text().strip() == (expected["answer"].strip() or "(no answer)")
        assert "detected" in page.locator("#status").inner_text()
    finally:
        page.close()
    assert not outside, f"the page contacted other hosts: {outside}"
