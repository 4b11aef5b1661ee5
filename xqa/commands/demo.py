"""``xqa demo``: serve the Gradio demo for a pipeline config (127.0.0.1 by default).

Examples::

    xqa demo                                   # the embedded default (make demo builds it)
    xqa demo --config /data/mia/pipeline.json --port 8080

The page is up in seconds: the app is built from the config alone, and the
indexes and models load in a background thread ("ready in N s" is logged);
a question asked earlier waits for them. No public share link is offered and
nothing is sent anywhere: the server talks only to the browsers that reach it.

This command is the one place ``xqa`` reaches into ``apps`` (the CLI serves
the app; the app's own code imports only ``xqa``).
"""
from __future__ import annotations

import argparse

from xqa.cli_options import add_pipeline_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_pipeline_arguments(p)
    p.add_argument("--pipeline", dest="config", default=argparse.SUPPRESS, metavar="CONFIG",
                   help="alias of --config")
    s = p.add_argument_group("server")
    s.add_argument("--host", default="127.0.0.1",
                   help="interface to bind; 0.0.0.0 exposes the demo to your network (no authentication)")
    s.add_argument("--port", type=int, default=7860, help="port to serve on (env GRADIO_SERVER_PORT is ignored)")
    s.add_argument("--concurrency", type=int, default=2,
                   help="questions answered at once; more wait in the queue (the reader runs one at a time)")
    s.add_argument("--max-queue", type=int, default=64,
                   help="waiting questions beyond which new ones are turned away")
    s.add_argument("--max-chars", type=int, default=500, help="longest question accepted, in characters")
    s.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                   help="load indexes and models on the first question instead of at start")


def run(args: argparse.Namespace) -> int:
    import os
    import threading
    import time

    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from xqa.errors import XqaError

    if args.concurrency < 1 or args.max_queue < 1 or args.max_chars < 1:
        raise XqaError("--concurrency, --max-queue and --max-chars must be at least 1")
    t0 = time.perf_counter()
    from xqa.cli_options import config_path, load_pipeline

    pipeline = load_pipeline(args)
    source = config_path(args) or "the indexes named on the command line"
    if not pipeline.methods:
        raise XqaError(f"{source}: names no sparse, dense or SPAR index; nothing to retrieve with")
    from apps.demo import build_app, launch, warm_up

    app = build_app(pipeline, max_chars=args.max_chars, concurrency=args.concurrency, max_queue=args.max_queue)
    url = launch(app, host=args.host, port=args.port, block=False)
    if args.warm_up:   # once the page is served: loading beside the launch slowed it on 2 cores
        threading.Thread(target=warm_up, args=(pipeline,), name="xqa-warm-up", daemon=True).start()
    print(f"xqa demo: serving {source} on {url}  (up in {time.perf_counter() - t0:.1f} s; Ctrl+C stops)",
          flush=True)
    app.block_thread()
    return 0
