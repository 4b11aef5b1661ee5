"""A bi-encoder trained from the converted encoder, stored as its difference to it.

SPAR's Λ is a few layers of multilingual-e5-small trained with the word embeddings fixed;
this folder (``kind: bi_encoder_delta``) holds what training changed
(:mod:`xqa.encoders.delta`: int8 row deltas of matrices, vectors as they are) and the
bi-encoder's settings; :func:`unpack` adds it back onto the same base and writes an ordinary
bi-encoder folder. Only shared-tower models (one tower for questions and passages) pack.

Folder::

    config.json         bi-encoder settings, the tower's HF config, base SHA-256
    delta.safetensors   "<name>.q" int8 + "<name>.scale" fp16 per changed matrix, vectors fp32
"""
from __future__ import annotations

import json
from pathlib import Path

from xqa.artifacts import atomic_dir, load_config, save_config
import xqa.encoders.delta as delta
from xqa.errors import XqaError

KIND = "bi_encoder_delta"


def pack(model_dir: str | Path, base: str | Path, out: str | Path) -> Path:
    """Write the delta of the bi-encoder in ``model_dir`` (or its training run's ``best``)
    over the converted encoder folder ``base``."""
    from safetensors.torch import save_file

    from retriever.dense.model import tower_state

    model_dir, base = Path(model_dir), Path(base)
    sha = delta.required_sha(base)   # checked before the model is read
    if not (model_dir / "query_encoder").is_dir() and (model_dir / "best" / "query_encoder").is_dir():
        model_dir = model_dir / "best"
    cfg = load_config(model_dir, "bi_encoder")
    if not cfg.get("shared", True):
        raise XqaError(f"{model_dir}: two towers; only a shared-tower bi-encoder packs as a delta")
    tower = model_dir / "query_encoder"
    tensors, unchanged = delta.diff(tower_state(tower), delta.base_state(base), base)
    encoder_config = json.loads((tower / "config.json").read_text(encoding="utf-8"))
    settings = {k: v for k, v in cfg.items() if k not in ("kind", "versions", "dim")}
    with atomic_dir(out, overwrite=True) as tmp:
        save_file(tensors, str(tmp / "delta.safetensors"))
        save_config(tmp, KIND, {"bi_encoder": settings, "encoder_config": encoder_config,
                                "base_sha256": sha, "unchanged": unchanged,
                                "quantization": delta.QUANTIZATION})
    return Path(out)


def unpack(delta_dir: str | Path, base: str | Path, out: str | Path) -> Path:
    """Write the bi-encoder of ``delta_dir`` over the encoder folder ``base`` into ``out``."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from .model import BiEncoder, BiEncoderConfig

    delta_dir, base = Path(delta_dir), Path(base)
    cfg, packed = delta.read(delta_dir, KIND, base)
    hf = dict(cfg["encoder_config"])
    hf_cfg = AutoConfig.for_model(hf.pop("model_type"), **{k: v for k, v in hf.items()
                                                          if k not in ("architectures", "transformers_version")})
    tower = AutoModel.from_config(hf_cfg, add_pooling_layer=False)
    state = delta.apply(tower.state_dict(), packed, delta.base_state(base), delta_dir)
    tower.load_state_dict(state, strict=False)
    tok = AutoTokenizer.from_pretrained(str(base))
    model = BiEncoder(tower.eval(), None, tok, BiEncoderConfig.from_dict(cfg["bi_encoder"]))
    return model.save(out)
