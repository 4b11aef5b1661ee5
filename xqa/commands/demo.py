"""``xqa demo``: serve the Gradio demo for a pipeline config (127.0.0.1 by default).

Examples::

    xqa demo                                   # the embedded default (make demo builds it)
    xqa demo --config /data/mia/pipeline.json --port 8080
    xqa demo --also-reader mine=runs/mine-reader   # an adapted reader selectable beside the config's
    XQA_DEMO_AUTH=ann:s3cret xqa demo --host 0.0.0.0  # served to the network, behind a login
    xqa demo --host 0.0.0.0 --auth-file ~/.xqa-demo-users   # USER:PASSWORD lines

The page is up in seconds: the app is built from the config alone, and the
indexes and models load in a background thread ("ready in N s: models loaded"
is logged, and ``GET /ready`` turns from 503 to 200); a question asked earlier
waits for them. No public share link is offered and nothing is sent anywhere:
the server talks only to the browsers that reach it. Accounts (``--auth-file``,
``$XQA_DEMO_AUTH``, ``--auth``) are checked before anything loads; a
non-loopback ``--host`` without any gets a warning on stderr.

This command is the one place ``xqa`` reaches into ``apps`` (the CLI serves
the app; the app's own code imports only ``xqa``).
"""
from __future__ import annotations

import argparse

from apps.demo import ServerConfig
from xqa.cli_config import ConfigCommand
from xqa.cli_options import add_pipeline_arguments

COMMAND = ConfigCommand(ServerConfig, groups={"server": ("host", "port", "batch", "batcher", "concurrency", "max_queue", "max_chars",
                                                         "warm_up"),
                                              "access": ("auth_file", "auth")})


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_pipeline_arguments(p)
    p.add_argument("--pipeline", dest="config", default=argparse.SUPPRESS, metavar="CONFIG",
                   help="alias of --config")
    COMMAND.add_arguments(p)
    p.add_argument("--also-reader", action="append", default=[], metavar="[NAME=]FOLDER",
                   help="a reader's folder the page offers beside the config's readers (repeatable), e.g. "
                        "an adapted reader (xqa train reader's OUT), named NAME or by its path; read with "
                        "the config's reader settings, its answers without P(right)")


def run(args: argparse.Namespace) -> int:
    import os
    import sys
    import threading
    import time

    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from xqa.errors import XqaError

    server = COMMAND.config(args)
    if (server.concurrency is not None and server.concurrency < 1) or min(server.batch, server.max_queue,
                                                                           server.max_chars) < 1:
        raise XqaError("--batch, --concurrency, --max-queue and --max-chars must be at least 1")
    from apps.demo import Readiness, auth_users, exposure_warning

    accounts = auth_users(server)
    warning = exposure_warning(server.host, server.port, guarded=bool(accounts))
    if warning:
        print(warning, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    from xqa.cli_options import config_path, load_pipeline, reader_choice

    pipeline = load_pipeline(args)
    for folder in args.also_reader:   # each joins the reader selector (NAME=FOLDER: as NAME)
        if reader_choice(pipeline.config, folder, say=lambda line: print(f"xqa demo: {line}", file=sys.stderr),
                         flag="--also-reader") not in pipeline.readers:
            raise XqaError(f"--also-reader {folder}: no such reader folder")
    source = config_path(args) or "the indexes named on the command line"
    if not pipeline.methods:
        raise XqaError(f"{source}: names no sparse, dense or SPAR index; nothing to retrieve with")
    from apps.demo import build_app, launch, warm_up

    app = build_app(pipeline, max_chars=server.max_chars, batch=server.batch, batcher=server.batcher,
                    concurrency=server.concurrency,
                    max_queue=server.max_queue)
    readiness = Readiness("loading" if server.warm_up else "lazy")
    url = launch(app, host=server.host, port=server.port, auth=accounts, readiness=readiness, block=False)
    def say(line: str) -> None:  # one write a line: the warm-up thread's lines never interleave with these
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    if server.warm_up:   # once the page is served: loading beside the launch slowed it on 2 cores
        threading.Thread(target=warm_up, args=(pipeline, say, readiness), name="xqa-warm-up",
                         daemon=True).start()
    guard = f"; login: {len(accounts)} account{'s' * (len(accounts) != 1)}" if accounts else ""
    say(f"xqa demo: serving {source} on {url}  (up in {time.perf_counter() - t0:.1f} s{guard}; Ctrl+C stops)")
    app.block_thread()
    return 0
