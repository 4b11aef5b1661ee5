"""``xqa reader unpack``: a packed span reader (``xqa reader pack``) added onto its base encoder,
with its int8 CPU runtime (``reader.span.runtime``) checked and timed on this CPU."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delta", default=None, help="packed reader folder (default: the shipped one, xqa/models/span-reader)")
    p.add_argument("--base", required=True, help="the encoder folder (xqa convert e5 --out DIR)")
    p.add_argument("--out", required=True, help="span reader folder to write")
    p.add_argument("--no-int8", action="store_true",
                   help="skip the int8 runtime (ONNX Runtime) and its check: the reader runs in torch only")
    p.add_argument("--threads", type=int, default=0, help="CPU threads the check times with (0: torch's default)")


def run(args: argparse.Namespace) -> int:
    from reader.span.delta import unpack
    from xqa.data.corpus import SHIPPED_READER

    out = unpack(args.delta or SHIPPED_READER, args.base, args.out)
    print(f"wrote {out}", flush=True)
    if not args.no_int8:
        from reader.span.runtime import build_and_report

        build_and_report(out, threads=args.threads, log=lambda line: print(line, flush=True))
    return 0
