"""``xqa reader pack``: a trained span reader as the int8 difference to its base encoder.

The repository ships its default reader this way (``xqa/models/span-reader``, ~11 MB instead
of the 430 MB folder); ``xqa reader unpack`` (and ``xqa build``) adds it back onto the
converted encoder.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reader", required=True,
                   help="span reader folder (xqa train reader --arch span OUT or OUT/best; a --kit run's too)")
    p.add_argument("--base", required=True, help="the encoder folder it was trained from (xqa convert e5)")
    p.add_argument("--out", required=True, help="folder to write (config.json, delta.safetensors)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import tempfile

    from reader.span.delta import pack
    from reader.span.kit import is_kit_reader, to_reader

    if is_kit_reader(args.reader) or is_kit_reader(Path(args.reader) / "best"):
        with tempfile.TemporaryDirectory(prefix="xqa-kit-reader-") as tmp:   # base + what training changed
            out = pack(to_reader(args.reader, args.base, Path(tmp) / "reader"), args.base, args.out)
    else:
        out = pack(args.reader, args.base, args.out)
    size = sum(f.stat().st_size for f in Path(out).iterdir())
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return 0
