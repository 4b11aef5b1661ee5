"""``xqa reader unpack``: a packed span reader (``xqa reader pack``) added onto its base encoder."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.data.corpus import SHIPPED_READER

    p.add_argument("--delta", default=None, help="packed reader folder (default: the shipped one, xqa/models/span-reader)")
    p.add_argument("--base", required=True, help="the encoder folder (xqa convert e5 --out DIR)")
    p.add_argument("--out", required=True, help="span reader folder to write")


def run(args: argparse.Namespace) -> int:
    from reader.span.delta import unpack

    print(f"wrote {unpack(args.delta or SHIPPED_READER, args.base, args.out)}")
    return 0
