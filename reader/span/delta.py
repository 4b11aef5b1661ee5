"""A trained span reader shipped as what training changed over its base encoder.

A span reader on multilingual-e5-small keeps the base's word-embedding matrix frozen (96M of
its 118M parameters) and changes the rest. The shipped form stores only that: for each
changed weight matrix the difference to the base, quantised to int8 per row (an fp16 scale
per row: the error of a weight is at most half its row's step, small against the change
itself); vectors (biases, LayerNorms) and the heads as they are, in fp32; nothing for an
unchanged tensor. :func:`unpack` adds it back onto the same base (checked by the base file's
SHA-256) and writes an ordinary span reader folder.

Folder (``kind: span_reader_delta``)::

    config.json         base encoder source and SHA-256, encoder config, reader settings
    delta.safetensors   "<name>.q" int8 [rows, cols] + "<name>.scale" fp16 [rows] for matrices,
                        "<name>" fp32 for vectors and heads
"""
from __future__ import annotations

import json
from pathlib import Path

from xqa.artifacts import atomic_dir, load_config, save_config
import xqa.encoders.delta as delta

KIND = "span_reader_delta"


def pack(reader_dir: str | Path, base: str | Path, out: str | Path) -> Path:
    """Write the delta of the span reader in ``reader_dir`` over the encoder folder ``base``."""
    from safetensors.torch import load_file, save_file

    reader_dir, base = Path(reader_dir), Path(base)
    sha = delta.required_sha(base)   # checked before the model is read
    if not (reader_dir / "encoder").is_dir() and (reader_dir / "best" / "encoder").is_dir():
        reader_dir = reader_dir / "best"
    cfg = load_config(reader_dir, "span_reader")
    trained = load_file(str(reader_dir / "encoder" / "model.safetensors"))
    tensors, unchanged = delta.diff(trained, delta.base_state(base), base)
    for name, w in load_file(str(reader_dir / "heads.safetensors")).items():
        tensors[f"heads.{name}"] = w.float().contiguous()
    encoder_config = json.loads((reader_dir / "encoder" / "config.json").read_text(encoding="utf-8"))
    with atomic_dir(out, overwrite=True) as tmp:
        save_file(tensors, str(tmp / "delta.safetensors"))
        save_config(tmp, KIND, {"reader": {k: cfg[k] for k in ("settings", "layers") if k in cfg},
                                "base_sha256": sha, "encoder_config": encoder_config,
                                "unchanged": unchanged, "quantization": delta.QUANTIZATION})
    return Path(out)


def unpack(delta_dir: str | Path, base: str | Path, out: str | Path) -> Path:
    """Write the span reader of ``delta_dir`` over the encoder folder ``base`` into ``out``."""
    from transformers import AutoTokenizer

    from reader.span.inference import SpanReader, SpanSettings
    from reader.span.model import SpanModel, build_encoder

    delta_dir, base = Path(delta_dir), Path(base)
    cfg, packed = delta.read(delta_dir, KIND, base)
    model = SpanModel(build_encoder(cfg["encoder_config"]))
    state = delta.apply(model.encoder.state_dict(), packed, delta.base_state(base), delta_dir)
    model.encoder.load_state_dict(state, strict=False)
    heads = {k[len("heads."):]: v for k, v in packed.items() if k.startswith("heads.")}
    model.span_head.load_state_dict({k[len("span_head."):]: v for k, v in heads.items() if k.startswith("span_head.")})
    model.rank_head.load_state_dict({k[len("rank_head."):]: v for k, v in heads.items() if k.startswith("rank_head.")})
    tok = AutoTokenizer.from_pretrained(str(base))
    settings = SpanSettings.from_dict(cfg.get("reader", {}).get("settings", {}))
    return SpanReader(model, tok, settings, base=f"{delta_dir} over {base}").save(out)
