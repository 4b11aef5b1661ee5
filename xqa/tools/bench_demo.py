"""``xqa bench demo``: end-to-end answer latency p50/p95 per retrieval method (a table).

Examples::

    xqa bench demo                                   # embedded default, its world's test questions
    xqa bench demo --config /data/mia/pipeline.json --questions mia_dev.jsonl --n 200
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.commands._common import CONFIG_HELP

    p.add_argument("--config", "--pipeline", dest="config", default=None, help=CONFIG_HELP)
    p.add_argument("--questions", default=None,
                   help="question file (any layout xqa reads); default: the config's demo examples, "
                        "else world/test.jsonl next to the config")
    p.add_argument("--n", type=int, default=40, help="questions timed per method (the first N)")
    p.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help="methods to time (default: every method the config offers)")
    p.add_argument("--k", type=int, default=None, help="passages retrieved (default: the config's)")
    p.add_argument("--n-passages", type=int, default=None, help="passages read (default: the config's)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON to OUT")


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
    from xqa.tools.bench.demo import bench_demo
    from xqa.commands._common import config_path, pipeline_config
    from xqa.config import METHODS
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    pipeline = Pipeline(pipeline_config(args))
    methods = args.methods or pipeline.methods
    unknown = [m for m in methods if m not in pipeline.methods]
    if unknown:
        raise XqaError(f"methods {unknown} are not available in {config_path(args)} "
                       f"(it offers {pipeline.methods}; all methods: {list(METHODS)})")
    result = bench_demo(pipeline, _questions(args, pipeline), methods, k=args.k, n_passages=args.n_passages)
    print(result.table())
    if args.json:
        from xqa.artifacts import write_json_atomic

        write_json_atomic(args.json, result.to_dict())
    return 0
