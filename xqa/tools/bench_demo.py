"""``xqa bench demo``: end-to-end answer latency p50/p95 per retrieval method (a table), or with
``--concurrency N`` the served demo under load: N users at once for ``--duration`` seconds, a
tenth of their requests abusive (:mod:`xqa.tools.lib.load`), with throughput, p50/p95 and
failures. ``--concurrency`` takes several user counts and ``--batch`` several server settings
(``xqa demo --batch``): each server is started once and loaded with each user count in turn,
and one table compares them (answered with and without batching, in one run).

Examples::

    xqa bench demo                                   # embedded default, its world's test questions
    xqa bench demo --config /data/mia/pipeline.json --questions mia_dev.jsonl --n 200
    xqa bench demo --concurrency 50 --duration 120   # serves the demo on 127.0.0.1 and loads it
    xqa bench demo --concurrency 1 10 50 --batch 1 16 --duration 60   # one at a time vs batched
    xqa bench demo --concurrency 10 50 --batch 16 --batcher xqa gradio  # xqa's batcher vs Gradio's
"""
from __future__ import annotations

import argparse

from xqa.cli_config import at_least


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.cli_options import CONFIG_HELP

    p.add_argument("--config", "--pipeline", dest="config", default=None, help=CONFIG_HELP)
    p.add_argument("--questions", default=None,
                   help="question file (any layout xqa reads); default: the config's demo examples, "
                        "else world/test.jsonl next to the config")
    p.add_argument("--n", type=at_least(1), default=40, help="questions timed per method (the first N)")
    p.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help="methods to time (default: every method the config offers)")
    p.add_argument("--k", type=at_least(1), default=None, help="passages retrieved (default: the config's)")
    p.add_argument("--n-passages", type=at_least(1), default=None, help="passages read (default: the config's)")
    p.add_argument("--threads", type=at_least(1), default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON to OUT")
    g = p.add_argument_group("load (--concurrency)")
    g.add_argument("--concurrency", type=int, nargs="+", default=None, metavar="N",
                   help="serve the demo (xqa demo, 127.0.0.1) and send it N users' requests at once; "
                        "several N: one load after another on the same server")
    g.add_argument("--batch", type=int, nargs="+", default=None, metavar="B",
                   help="the server's --batch (1: each question on its own); several: one server each, "
                        "compared in one table (default: xqa demo's)")
    g.add_argument("--batcher", nargs="+", default=None, choices=("xqa", "gradio"), metavar="WHO",
                   help="the server's --batcher for each --batch above 1 (xqa, gradio; several: one server "
                        "each; default: xqa demo's)")
    g.add_argument("--duration", type=float, default=120.0, help="seconds of load (each user count)")
    g.add_argument("--requests-per-user", type=int, default=1000, help="most requests one user sends")
    g.add_argument("--bad-share", type=float, default=0.1,
                   help="share of abusive requests: empty, 100 kB, binary, HTML language, script tags")
    g.add_argument("--port", type=int, default=0, help="port of the served demo (0: a free one)")


def _questions(args, pipeline):
    from pathlib import Path

    from xqa.errors import XqaError
    from xqa.io import read_questions
    from xqa.records import Question

    if args.questions:
        qs = read_questions(args.questions)
    elif pipeline.config.examples:
        qs = [Question(id=f"example-{i}", question=e["question"], lang=e.get("lang", ""))
              for i, e in enumerate(pipeline.config.examples)]
    else:
        test = Path(pipeline.config.base_dir or ".") / "world" / "test.jsonl"
        if not test.is_file():
            raise XqaError("no questions to time: pass --questions FILE (the config has no examples "
                           f"and {test} does not exist)")
        qs = read_questions(test)
    qs = [q for q in qs if q.question.strip()][: args.n]
    if not qs:
        raise XqaError("no questions to time")
    return qs


def run(args: argparse.Namespace) -> int:
    from xqa.tools.lib.demo import bench_demo
    from xqa.cli_options import config_path, pipeline_config
    from xqa.methods import method_names
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline

    if args.concurrency:
        return _run_load(args)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    pipeline = Pipeline(pipeline_config(args))
    methods = args.methods or pipeline.methods
    unknown = [m for m in methods if m not in pipeline.methods]
    if unknown:
        raise XqaError(f"methods {unknown} are not available in {config_path(args)} "
                       f"(it offers {pipeline.methods}; all methods: {list(method_names())})")
    result = bench_demo(pipeline, _questions(args, pipeline), methods, k=args.k, n_passages=args.n_passages)
    print(result.table())
    if args.json:
        from xqa.artifacts import write_json_atomic

        write_json_atomic(args.json, result.to_dict())
    return 0


def _run_load(args: argparse.Namespace) -> int:
    """For each ``--batch``: serve the demo in a child process on 127.0.0.1, load it with each
    ``--concurrency``, stop it; print one table and each load's failures."""
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline
    from xqa.tools.lib.load import load_table

    if min(args.concurrency) < 1 or args.duration <= 0 or not 0 <= args.bad_share <= 1:
        raise XqaError("--concurrency and --duration must be positive and --bad-share between 0 and 1")
    if args.batch and min(args.batch) < 1:
        raise XqaError("--batch must be at least 1")
    pipeline = Pipeline.load(args.config)  # the config only: the server loads the models
    questions = [q.question for q in _questions(args, pipeline)]
    cfg = pipeline.config
    method = args.methods[0] if args.methods else cfg.retrieval.method
    k, n = args.k or cfg.retrieval.k, args.n_passages or cfg.reader.n_passages
    rows = []
    variants = []
    for batch in args.batch or [None]:
        who = [None] if batch == 1 or not args.batcher else args.batcher
        variants += [(batch, b) for b in who]
    for batch, batcher in variants:
        label = None if batch is None else f"{batch} {batcher}" if batcher else str(batch)
        for users, result in _serve_and_load(args, batch, batcher, questions, method, k, n):
            rows.append((label, result))
            failures = result.failure_lines()
            if failures:
                print("\n".join(failures), flush=True)
    print(load_table(rows, method=method, k=k, n_passages=n, duration=args.duration, bad_share=args.bad_share))
    if args.json:
        from xqa.artifacts import write_json_atomic

        write_json_atomic(args.json, [{"server": b, **r.to_dict()} for b, r in rows])
    return 1 if any(r.failed_valid for _, r in rows) else 0


def _serve_and_load(args, batch, batcher, questions, method, k, n):
    """Yield ``(users, LoadResult)`` for each ``--concurrency``, against one served demo."""
    import socket
    import subprocess
    import sys
    import threading
    import time

    from xqa.errors import XqaError
    from xqa.tools.lib.load import run_load

    port = args.port
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "xqa.cli", "demo", "--config", args.config, "--host", "127.0.0.1",
           "--port", str(port)]
    if batch is not None:
        cmd += ["--batch", str(batch)]
    if batcher is not None:
        cmd += ["--batcher", batcher]
    print(f"bench demo: serving {' '.join(cmd[3:])}", flush=True)
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 600
        for line in server.stdout:  # wait until the warm-up has loaded every model
            print(line.rstrip(), flush=True)
            if "ready in" in line or "warm-up failed" in line or time.monotonic() > deadline:
                break
        if server.poll() is not None:
            raise XqaError(f"the demo server exited ({server.returncode}) before it was ready")
        # keep reading what the server prints, or a full pipe would stall it
        threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
        for users in args.concurrency:
            print(f"bench demo: {users} users for {args.duration:.0f} s ...", flush=True)
            yield users, run_load(f"http://127.0.0.1:{port}/", questions, method, k, n, users=users,
                                  duration=args.duration, requests_per_user=args.requests_per_user,
                                  bad_share=args.bad_share, server_pid=server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
