"""A warm-started FiD shipped small: the encoder as its int8 difference to the converted encoder,
the decoder in int8 per row.

Folder (``kind: fid_reader_delta``)::

    config.json        the reader's settings, how the decoder is tied (``warm_start``), the model's
                       config, the base's SHA-256, which encoder tensors are unchanged
    delta.safetensors  ``encoder.<name>``: :func:`xqa.encoders.delta.diff` of the encoder over the
                       base (int8 row deltas of changed matrices, changed vectors as they are);
                       ``decoder.<name>.q``/``.scale``: each decoder matrix in int8 with an fp16 scale
                       per row (the decoder has no base: its cross-attention and LM head are new);
                       decoder vectors in fp32

The word-embedding matrix, shared by the encoder, the decoder's input and its output layer, is
the base's and is not stored. :func:`unpack` makes the FiD reader of it over the converted encoder.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from xqa.artifacts import CONFIG_NAME, atomic_dir, load_config, save_config
import xqa.encoders.delta as delta
from xqa.errors import XqaError

KIND = "fid_reader_delta"
READER_KIND = "fid_reader"


def pack(reader_dir: str | Path, base: str | Path, out: str | Path) -> Path:
    """Write the packed form of the warm-started FiD reader in ``reader_dir`` over the encoder ``base``."""
    from reader.fid import warm
    from reader.fid.inference import FiDReader

    reader_dir, base = Path(reader_dir), Path(base)
    sha = delta.required_sha(base)   # checked before the model is read
    reader = FiDReader.load(reader_dir, device="cpu")
    spec = reader.warm_start_spec
    if spec is None:
        raise XqaError(f"{reader_dir}: a FiD reader on a seq2seq checkpoint has no encoder base to pack over; "
                       f"only a warm-started one (xqa train reader --family fid --kit, or --init ENCODER) packs")
    state = warm.unique_state(reader.model.t5)
    word = "encoder.embeddings.word_embeddings.weight"
    base_tensors = delta.base_state(base)
    if not torch.equal(state[word], base_tensors["embeddings.word_embeddings.weight"]):
        raise XqaError(f"{reader_dir}: its word embeddings are not those of {base}")
    enc = {k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.") and k != word}
    tensors, unchanged = delta.diff(enc, base_tensors, base)
    tensors = {f"encoder.{k}": v for k, v in tensors.items()}
    for name, w in state.items():
        if not name.startswith("decoder."):
            continue
        w = w.detach().float()
        if w.ndim == 2:
            scale = w.abs().amax(dim=1).clamp_min(1e-12) / 127.0
            tensors[f"{name}.q"] = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
            tensors[f"{name}.scale"] = scale.to(torch.float16).contiguous()
        else:
            tensors[name] = w.contiguous()
    from safetensors.torch import save_file

    with atomic_dir(out, overwrite=True) as tmp:
        save_file(tensors, str(tmp / "delta.safetensors"))
        save_config(tmp, KIND, {
            "reader": {k: getattr(reader, k) for k in ("max_length", "max_answer_len", "n_context")},
            "warm_start": spec.to_dict(), "model_config": reader.model.t5.config.to_dict(),
            "pointer": {"copy_head": list(reader.model.copy_head) if reader.model.copy_head else None,
                        "copy_weight": reader.model.copy_weight, "generator_share": reader.model.generator_share},
            "base_sha256": sha, "unchanged": [f"encoder.{n}" for n in unchanged],
            "quantization": f"encoder: {delta.QUANTIZATION} of its difference to the base; decoder: "
                            f"int8 per row (fp16 scales)"})
    return Path(out)


def is_packed(folder: str | Path) -> bool:
    try:
        return json.loads((Path(folder) / CONFIG_NAME).read_text(encoding="utf-8")).get("kind") == KIND
    except (OSError, ValueError, AttributeError):
        return False


def unpack(delta_dir: str | Path, base: str | Path, out: str | Path) -> Path:
    """Write the FiD reader of the packed folder ``delta_dir`` over the encoder ``base`` into ``out``."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from reader.fid import warm
    from reader.fid.inference import FiDReader
    from reader.fid.warm import WarmStart

    delta_dir, base = Path(delta_dir), Path(base)
    cfg, packed = delta.read(delta_dir, KIND, base)
    spec = WarmStart.from_dict(cfg["warm_start"])
    enc_cfg = BertConfig(**{k: v for k, v in cfg["model_config"]["encoder"].items() if not k.startswith("_")})
    encoder = BertModel(enc_cfg, add_pooling_layer=False)
    enc_delta = {k[len("encoder."):]: v for k, v in packed.items() if k.startswith("encoder.")}
    state = delta.apply([n for n in encoder.state_dict() if not n.endswith("position_ids")], enc_delta,
                        delta.base_state(base), delta_dir)
    encoder.load_state_dict(state, strict=False)
    tok = AutoTokenizer.from_pretrained(str(base))
    reader = FiDReader.warm_start(encoder, tok, spec, base=f"{delta_dir} over {base}", **cfg["reader"])
    pointer = cfg.get("pointer") or {}
    if pointer.get("copy_head"):
        reader.model.copy_head = tuple(pointer["copy_head"])
        reader.model.copy_weight = float(pointer.get("copy_weight", 1.0))
        reader.model.generator_share = pointer.get("generator_share")
    model = reader.model.t5
    own = model.state_dict()
    dec = {}
    for name in own:
        if not name.startswith("decoder."):
            continue
        if f"{name}.q" in packed:
            dec[name] = packed[f"{name}.q"].float() * packed[f"{name}.scale"].float()[:, None]
        elif name in packed:
            dec[name] = packed[name].float()
    covered = {own[n].data_ptr() for n in dec} | {model.encoder.embeddings.word_embeddings.weight.data_ptr()}
    missing = [n for n in own if n.startswith("decoder.") and own[n].data_ptr() not in covered
               and not n.endswith("position_ids")]
    if missing:
        raise XqaError(f"{delta_dir}: nothing gives the decoder's {missing[0]}")
    model.load_state_dict(dec, strict=False)
    warm.tie(model, spec)
    return reader.save(out)
