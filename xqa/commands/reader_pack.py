"""``xqa reader pack``: a trained span reader as the int8 difference to its base encoder.

The repository ships its default reader this way (``xqa/models/span-reader``, ~11 MB instead
of the 430 MB folder); ``xqa reader unpack`` (and ``xqa build``) adds it back onto the
converted encoder.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reader", required=True, help="span reader folder (xqa train reader --arch span OUT or OUT/best)")
    p.add_argument("--base", required=True, help="the encoder folder it was trained from (xqa convert e5)")
    p.add_argument("--out", required=True, help="folder to write (config.json, delta.safetensors)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reader.span.delta import pack

    out = pack(args.reader, args.base, args.out)
    size = sum(f.stat().st_size for f in Path(out).iterdir())
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return 0
