"""The README's picture of the demo: the embedded default answering a real question.

    .venv/bin/python scripts/demo_screenshot.py [--config build/embedded/pipeline.json]
        [--question "Wer konzipierte QRpedia?"] [--out docs/demo.png]

Serves the pipeline on a free 127.0.0.1 port in this process, asks the question in headless
Debian Chromium (``make browser``; ``XQA_CHROMIUM`` names another binary) as a user would, waits
until the page shows the answer the pipeline gives for the same question, and saves the top
``--height`` pixels of the page (0: all of it). It says what the page answered, and stops with
an error when the page asked for anything outside 127.0.0.1. Chromium draws each script only
with a font for it on the machine (Debian: ``fonts-noto-core`` and ``fonts-noto-cjk``; without
them Hindi, Chinese, Japanese and Korean text are boxes in the picture, not on a user's page).
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("XQA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=str(ROOT / "build" / "embedded" / "pipeline.json"),
                   help="pipeline config (default: the embedded default, which 'make embedded' builds)")
    p.add_argument("--question", default="Wer konzipierte QRpedia?", help="the question asked")
    p.add_argument("--out", default=str(ROOT / "docs" / "demo.png"), help="the screenshot (PNG)")
    p.add_argument("--width", type=int, default=1280, help="the page's width in pixels")
    p.add_argument("--height", type=int, default=1500, help="pixels of the page kept from the top (0: all)")
    args = p.parse_args(argv)
    if not Path(args.config).is_file():
        print(f"demo_screenshot: {args.config} not found: run 'make embedded' first", file=sys.stderr)
        return 1
    if not Path(CHROMIUM).is_file():
        print(f"demo_screenshot: Chromium not found at {CHROMIUM}: run 'make browser' or set XQA_CHROMIUM",
              file=sys.stderr)
        return 1
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from playwright.sync_api import sync_playwright

    from apps.demo import Answerer, build_app, launch, warm_up
    from xqa.pipeline import Pipeline

    pipe = Pipeline.load(args.config)
    cfg = pipe.config
    expected = Answerer(pipe)(args.question, "auto", cfg.retrieval.method, cfg.retrieval.k,
                              cfg.reader.n_passages)[4]
    demo = build_app(pipe)
    url = launch(demo, port=_free_port(), block=False)
    warm_up(pipe)
    outside: list[str] = []
    try:
        with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": args.width, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(180_000)
            page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).hostname != "127.0.0.1"
                    and not r.url.startswith(("data:", "blob:")) else None)
            page.goto(url)
            box = page.locator("#question textarea")
            box.press_sequentially(args.question, delay=5)
            page.locator("#ask").click()
            page.wait_for_function("(want) => { const e = document.querySelector('#xqa-answer-text');"
                                   " return e && e.innerText.includes(want); }",
                                   arg=expected["answer"].strip() or "(no answer)")
            page.locator("#evidence tr.xqa-passage").first.wait_for()
            shown = page.locator("#xqa-answer-text").inner_text().strip()
            height = page.evaluate("document.documentElement.scrollHeight")
            clip = {"x": 0, "y": 0, "width": args.width, "height": min(args.height or height, height)}
            page.screenshot(path=args.out, full_page=True, clip=clip)
            context.close()
    finally:
        demo.close()
    if outside:
        print(f"demo_screenshot: the page contacted other hosts: {outside}", file=sys.stderr)
        return 1
    print(f"{args.question} -> {shown} (P(right) {expected['confidence']:.2f}); screenshot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
