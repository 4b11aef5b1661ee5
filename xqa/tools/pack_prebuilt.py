"""Write the shipped build parts (``xqa/corpus/prebuilt``) from a finished build of the shipped corpus.

    python -m xqa.tools.pack_prebuilt --build build/embedded

The build's own recipe (``build.json``) and files give the key (:mod:`xqa.prebuilt`), so the
parts are reused exactly by builds made the same way. Its dense vectors should be fp32 ones
(``xqa build --precision fp32``, or a CPU where ``auto`` picks fp32): they are the reference
that the int8 runtime is checked against.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from xqa.recipes.corpus import CorpusBuild, Recipe
    from xqa.prebuilt import SHIPPED, pack

    p = argparse.ArgumentParser(prog="python -m xqa.tools.pack_prebuilt", description=__doc__.split("\n\n")[0])
    p.add_argument("--build", required=True, help="a finished `xqa build` / `xqa embedded build` folder")
    p.add_argument("--out", default=str(SHIPPED), help="folder to write (default: the shipped one)")
    args = p.parse_args(argv)
    build = Path(args.build)
    meta = json.loads((build / "build.json").read_text(encoding="utf-8"))
    cb = CorpusBuild(meta["source"], build, recipe=Recipe.from_dict(meta["recipe"]))
    out = pack(build, args.out, cb.prebuilt_key())
    size = sum(f.stat().st_size for f in Path(out).rglob("*") if f.is_file())
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
