"""``xqa bench fusion``: fusion overhead at k=60 beside search time; SPAR's one index vs a two-index hybrid.

Prints one Markdown table per part (see ``xqa.tools.lib.fusion``). Without
indexes (no pipeline config, no folders) only the fusion functions are timed.
"""
from __future__ import annotations

import argparse

from xqa.cli_options import add_source_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_arguments(p)
    p.add_argument("--questions", help="questions to time retrieval with (default: dev.jsonl beside the passages)")
    p.add_argument("--lang", help="language of question files that carry none")
    p.add_argument("--k", type=int, default=60, help="depth of every list (the MIA system's K)")
    p.add_argument("--n-questions", type=int, default=100, help="questions timed one at a time and batched")
    p.add_argument("--batch-size", type=int, default=32, help="batch size of the throughput column")
    p.add_argument("--synthetic", type=int, default=2000, help="synthetic list pairs for the fusion timing")
    p.add_argument("--overlap", type=float, default=0.2, help="share of sparse ids also in the dense list (synthetic)")
    p.add_argument("--repeats", type=int, default=5, help="repeats of the fusion timing (median reported)")
    p.add_argument("--fusion-only", action="store_true", help="time only the fusion functions")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")


def run(args: argparse.Namespace) -> int:
    import os
    import platform
    from pathlib import Path

    from xqa.tools.lib.fusion import (
        Report,
        bench_fusion_functions,
        bench_retrievers,
        render,
    )
    from xqa.cli_options import config_path, pipeline_config
    from xqa.errors import XqaError

    report = Report(k=args.k)
    report.fusion = bench_fusion_functions(args.k, args.synthetic, args.overlap, args.repeats)
    report.notes.append(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                        f"Python {platform.python_version()}")
    path = config_path(args)
    if not args.fusion_only and path is not None and not path.is_file() and not args.config:
        report.notes.append(f"no indexes given (--config / --sparse-index --dense-index --spar-index --passages, no {path}): "
                            "retrieval latency not measured")
    elif not args.fusion_only:
        cfg = pipeline_config(args)
        r = cfg.retrieval
        from xqa.methods import index_kinds, index_value

        named = {kind.name: index_value(r, kind) for kind in index_kinds()}
        if not any(named.values()) or not cfg.passages:
            report.notes.append("no indexes given (--config / --sparse-index --dense-index --spar-index --passages): "
                                "retrieval latency not measured")
        else:
            import torch

            from xqa.io import read_questions
            from xqa.pipeline import Pipeline

            if args.threads:
                torch.set_num_threads(args.threads)
            qfile = args.questions or str(Path(cfg.path(cfg.passages)).with_name("dev.jsonl"))
            if not Path(qfile).is_file():
                raise XqaError(f"{qfile}: no question file; give --questions")
            pipe = Pipeline(cfg)
            parts = {n: pipe.component(n) for n, v in named.items() if v}
            langs = set(getattr(parts.get("sparse"), "languages", []) or [])
            qs = [q for q in read_questions(qfile, lang=args.lang) if not langs or q.lang in langs]
            qs = qs[: args.n_questions]
            if not qs:
                raise XqaError(f"{qfile}: no question in a language the indexes cover")
            report.latency, report.throughput = bench_retrievers(
                parts, qs, args.k, args.batch_size, alpha=r.alpha, max_frac=r.max_frac, mu=r.mu)
            report.notes.append(f"{len(qs)} questions from {qfile}; torch threads {torch.get_num_threads()}; "
                                f"indexes: " + ", ".join(f"{n} {v}" for n, v in named.items() if v))
            from xqa.tools.lib.fusion import folder_size

            report.notes.append("index sizes: " + ", ".join(
                f"{n} {folder_size(cfg.path(v)) / 2**20:.1f} MiB" for n, v in named.items() if v))
    print(render(report))
    return 0
