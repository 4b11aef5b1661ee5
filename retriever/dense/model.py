"""The bi-encoder: a question tower and a passage tower over any HF encoder.

DPR (Karpukhin et al., 2020) as used by the MIA 2022 system (Tu & Padmanabhan 2022, §3.1): the
representation of a text is the last layer's hidden state of its first token
(``pooling="cls"``); relevance is the dot product of the two vectors. The
towers are any Hugging Face encoder — ``LukeModel`` (mLUKE, word inputs only:
mLUKE-W), ``BertModel`` (mBERT), ``DPRQuestionEncoder``/``DPRContextEncoder`` —
shared (one set of weights) or separate.

Artifact (kind ``bi_encoder``)::

    config.json        backbone, pooling, shared, max lengths, tower classes
    query_encoder/     HF folder (safetensors, in shards of at most 100 MB: the word embeddings apart)
    passage_encoder/   HF folder (absent when the towers are shared)
    tokenizer/         HF tokenizer folder

Inputs: a question is ``[CLS] question [SEP]``; a passage is
``[CLS] title [SEP] text [SEP]`` in the model's own special tokens. Tokenizers
without a CLS token (the embedded T5-style SentencePiece one) use their
``<cls>``/``<sep>`` control symbols and ``</s>`` at the end. A text-embedding model
trained with prefixes (multilingual-e5: ``query_prefix="query: "``,
``passage_prefix="passage: "``, mean pooling, L2-normalised vectors; recorded by
``xqa convert e5`` in the folder's ``xqa_encoder.json``) reads one sequence,
``<s> query: question </s>`` and ``<s> passage: title text </s>``.
"""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from xqa.artifacts import atomic_dir, check_model_source, load_config, save_config, save_tokenizer
from xqa.encoders.info import autocast as _precision_autocast
from xqa.encoders.info import read_info
from xqa.encoders.runtime import resolve_precision
from xqa.errors import XqaError
from xqa.records import Passage

KIND = "bi_encoder"
# a tower is saved in shards of at most this size: the word-embedding matrix (e5's 250k × 384,
# 384 MB), larger than one, gets a file of its own, which builds that keep it frozen share
# (xqa.runtime_cache.share_files)
TOWER_SHARD = "100MB"
POOLINGS = ("cls", "mean", "pooler")
_TOWER_LOCK = threading.Lock()   # towers built on demand (BiEncoder.load) are built once
# Tower classes an artifact may name; anything else loads through AutoModel.
_TOWER_CLASSES = ("LukeModel", "BertModel", "XLMRobertaModel", "RobertaModel",
                  "DistilBertModel", "DPRQuestionEncoder", "DPRContextEncoder")

# Architectures for models built from scratch (``--config``). "tiny" is the
# embedded default: small enough to train on a 2-core CPU in minutes.
SIZES: dict[str, dict[str, int]] = {
    "tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512),
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}


@dataclass
class BiEncoderConfig:
    """What the artifact's ``config.json`` records besides the tower weights."""

    backbone: str = "luke"            # HF model_type of the towers
    pooling: str = "cls"              # cls | mean | pooler (DPR's pooler_output)
    shared: bool = True               # one tower for questions and passages
    query_max_length: int = 64
    passage_max_length: int = 256
    query_class: str = "LukeModel"
    passage_class: str = "LukeModel"
    normalize: bool = False           # L2-normalise the vectors (cosine similarity)
    query_prefix: str = ""            # text-embedding models: "query: " ...
    passage_prefix: str = ""          # ... and "passage: " (then one sequence, no [SEP] pair)
    precision: str = "fp32"           # inference on CPU: fp32 | bf16 | auto (bf16 where native)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BiEncoderConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def _tower_class(name: str):
    import transformers

    if name in _TOWER_CLASSES:
        return getattr(transformers, name)
    return transformers.AutoModel


def tower_state(folder: str | Path) -> dict[str, torch.Tensor]:
    """The weights of a saved tower (``query_encoder/``, ``passage_encoder/``): one
    ``model.safetensors``, or the shards its ``model.safetensors.index.json`` names."""
    from safetensors.torch import load_file

    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return load_file(str(folder / "model.safetensors"))
    import json

    state: dict[str, torch.Tensor] = {}
    for shard in sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())):
        state.update(load_file(str(folder / shard)))
    return state


def _load_tower(class_name: str, folder: str, pooling: str, layers: int = 0):
    """A tower from a hub name or folder; BERT towers skip the pooler they do not use;
    ``layers`` > 0 keeps the first ``layers`` layers."""
    from transformers.utils import logging

    cls = _tower_class(class_name)
    kwargs: dict[str, Any] = {}
    if class_name == "BertModel" and pooling != "pooler":
        kwargs["add_pooling_layer"] = False
    if layers:
        kwargs["num_hidden_layers"] = layers
    level = logging.get_verbosity()
    logging.set_verbosity_error()   # layers left out are reported as unexpected weights
    try:
        return cls.from_pretrained(folder, **kwargs)
    finally:
        logging.set_verbosity(level)


def _tower_name(hf_cfg) -> str:
    """The tower class of a (non-DPR) HF encoder config."""
    arch = (hf_cfg.architectures or [""])[0]
    return {"luke": "LukeModel", "bert": "BertModel", "xlm-roberta": "XLMRobertaModel",
            "roberta": "RobertaModel", "distilbert": "DistilBertModel"}.get(hf_cfg.model_type, arch)


def check_init(name: str | Path) -> bool:
    """Whether ``name`` is an xqa bi-encoder (or its training run) to continue from; otherwise
    it must be what :meth:`BiEncoder.from_pretrained` starts from (a Hugging Face model folder or
    hub name), or an error says what it is (said before a training writes anything)."""
    if _is_bi_encoder(Path(name)) or _is_bi_encoder(Path(name) / "best"):
        return True
    check_model_source(name, "the encoder to start from")
    return False


def _is_bi_encoder(folder: Path) -> bool:
    try:
        load_config(folder, KIND)
        return True
    except (FileNotFoundError, ValueError):
        return False


def _special_ids(tok) -> tuple[int, int, int]:
    """``(cls, sep, end)`` ids for the manual input layout of CLS-less tokenizers."""
    cls_id = tok.convert_tokens_to_ids("<cls>")
    sep_id = tok.convert_tokens_to_ids("<sep>")
    if cls_id is None or cls_id == tok.unk_token_id or sep_id is None or sep_id == tok.unk_token_id:
        raise XqaError("tokenizer has neither a CLS token nor <cls>/<sep> control symbols; "
                       "train it with `xqa train tokenizer`")
    end = tok.eos_token_id if tok.eos_token_id is not None else sep_id
    return cls_id, sep_id, end


def check_device(device: str | torch.device) -> torch.device:
    """``device`` as torch reads it; an error naming it where torch knows no such device or
    cannot use it here (``cuda`` on a machine without one), before any model is loaded."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise XqaError(f"unknown device {str(device)!r}; give cpu, or cuda on a machine with a GPU") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise XqaError(f"device {dev}: torch sees no CUDA device on this machine; give cpu")
    return dev


class BiEncoder(nn.Module):
    """Question and passage towers plus the tokenizer that feeds them.

    Every constructor returns the model in eval mode (as HF ``from_pretrained``
    does); the training loop switches it to train mode.

    ``forward`` is not used; training calls :meth:`embed_queries` /
    :meth:`embed_passages` on tokenized batches, inference calls
    :meth:`encode_queries` / :meth:`encode_passages` on raw records.
    """

    def __init__(self, query_encoder: nn.Module | None, passage_encoder: nn.Module | None,
                 tokenizer, config: BiEncoderConfig, *, load_tower=None, tower_config=None):
        super().__init__()
        if config.pooling not in POOLINGS:
            raise XqaError(f"unknown pooling {config.pooling!r}; choose from {', '.join(POOLINGS)}")
        if query_encoder is None:
            # Shared towers not built yet (:meth:`load` of a folder whose int8 runtime does the
            # encoding): ``load_tower()`` builds the tower the first time anything needs it.
            if load_tower is None or tower_config is None or passage_encoder is not None:
                raise ValueError("a bi-encoder without towers needs load_tower and tower_config (shared towers)")
            self.__dict__["_load_tower"] = load_tower
            self.__dict__["_tower_config"] = tower_config
        else:
            self.query_encoder = query_encoder
        self.passage_encoder = passage_encoder  # None when shared
        self.tokenizer = tokenizer
        self.config = config
        self._native_cls = tokenizer.cls_token_id is not None
        self._ids = None if self._native_cls else _special_ids(tokenizer)
        if query_encoder is not None:
            self._freeze_unused()

    # ------------------------------------------------------- towers on demand
    @property
    def towers_loaded(self) -> bool:
        """False while the towers wait to be built (see :meth:`load`): only the int8 runtime has run."""
        return "_load_tower" not in self.__dict__

    def __getattr__(self, name: str):
        if name == "query_encoder" and "_load_tower" in self.__dict__:
            return self._build_towers()
        return super().__getattr__(name)

    def _build_towers(self) -> nn.Module:
        with _TOWER_LOCK:
            load = self.__dict__.get("_load_tower")
            if load is not None:
                tower = load()
                tower.train(self.training)
                self.query_encoder = tower
                del self.__dict__["_load_tower"], self.__dict__["_tower_config"]
                self._freeze_unused()
        return self._modules["query_encoder"]

    def _ensure_towers(self) -> None:
        if "_load_tower" in self.__dict__:
            self._build_towers()

    # Whatever walks the submodules (parameters, state_dict, .to(), ...) sees the towers.
    def named_children(self):
        self._ensure_towers()
        return super().named_children()

    def named_modules(self, *args, **kwargs):
        self._ensure_towers()
        return super().named_modules(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        self._ensure_towers()
        return super().state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        self._ensure_towers()
        return super().load_state_dict(*args, **kwargs)

    def _apply(self, fn, *args, **kwargs):
        self._ensure_towers()
        return super()._apply(fn, *args, **kwargs)

    def _freeze_unused(self) -> None:
        """Parameters the representation never uses get no gradient (DDP requires it).

        LUKE's entity embeddings and, with entity-aware attention, its word-to-entity,
        entity-to-word and entity-to-entity query projections (word inputs only), and, unless
        ``pooling="pooler"``, the towers' pooler layers.
        """
        for tower in self.towers():
            ent = getattr(tower, "entity_embeddings", None)
            if ent is not None:
                ent.requires_grad_(False)
                for name, param in tower.named_parameters():
                    if name.split(".")[-2] in ("w2e_query", "e2w_query", "e2e_query"):
                        param.requires_grad_(False)
            pooler = getattr(tower, "pooler", None)
            if pooler is not None and self.config.pooling != "pooler":
                pooler.requires_grad_(False)

    def forward(self, q_input_ids: torch.Tensor, q_attention_mask: torch.Tensor,
                p_input_ids: torch.Tensor, p_attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Question vectors ``[b, d]`` and passage vectors ``[m, d]`` (the training step)."""
        return (self.embed_queries(q_input_ids, q_attention_mask),
                self.embed_passages(p_input_ids, p_attention_mask))

    # ------------------------------------------------------------------ build
    @classmethod
    def from_scratch(cls, tokenizer_dir: str | Path, size: str = "tiny", *, shared: bool = True,
                     pooling: str = "cls", query_max_length: int = 32, passage_max_length: int = 128,
                     dropout: float = 0.1, seed: int | None = None) -> "BiEncoder":
        """A randomly initialised mLUKE-architecture bi-encoder (word inputs only)."""
        from transformers import AutoTokenizer, LukeConfig, LukeModel

        if size not in SIZES:
            raise XqaError(f"unknown model size {size!r}; choose from {', '.join(SIZES)}")
        tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        lc = LukeConfig(
            vocab_size=len(tok), **SIZES[size],
            max_position_embeddings=max(query_max_length, passage_max_length) + 2,
            hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
            type_vocab_size=1, entity_vocab_size=2, entity_emb_size=8,
            use_entity_aware_attention=False,
            pad_token_id=tok.pad_token_id, bos_token_id=None,
            eos_token_id=tok.eos_token_id,
        )
        if seed is not None:
            torch.manual_seed(seed)
        q = LukeModel(lc)
        p = None if shared else LukeModel(lc)
        cfg = BiEncoderConfig("luke", pooling, shared, query_max_length, passage_max_length,
                              "LukeModel", "LukeModel")
        return cls(q, p, tok, cfg).eval()

    @classmethod
    def from_pretrained(cls, name: str, passage_name: str | None = None, *, shared: bool | None = None,
                        pooling: str | None = None, query_max_length: int = 64,
                        passage_max_length: int = 256, layers: int = 0) -> "BiEncoder":
        """Start from a hub model or a local HF folder (an xqa bi-encoder folder works too).

        ``passage_name`` gives a separate passage tower (e.g. DPR's ctx encoder);
        without it the towers are shared unless ``shared=False`` (then the
        passage tower starts as a copy of the question tower). ``layers`` > 0 keeps
        the towers' first ``layers`` layers (a cheaper model, e.g. SPAR's Λ).
        """
        from transformers import AutoConfig, AutoTokenizer

        if check_init(name):
            return cls.load(name)  # continue from an xqa model (or its training run)
        info = read_info(name)  # a converted text-embedding model (xqa convert e5) says how it is used
        try:
            hf_cfg = AutoConfig.from_pretrained(name)
        except OSError as e:  # not on the hub, or the hub is offline
            raise XqaError(f"{name}: no such folder, and no model of that name on the hub or in its local cache "
                           f"({' '.join(str(e).split())})") from None
        mtype = hf_cfg.model_type
        if mtype == "dpr":
            q_cls, p_cls = "DPRQuestionEncoder", "DPRContextEncoder"
            pooling = pooling or "pooler"
        else:
            q_cls = p_cls = _tower_name(hf_cfg)
            pooling = pooling or (info.pooling if info else "cls")
        if shared is None:
            shared = passage_name is None
        tok = AutoTokenizer.from_pretrained(name)
        q = _load_tower(q_cls, name, pooling, layers)
        p = None
        if not shared:
            p = _load_tower(p_cls, passage_name or name, pooling, layers)
        cfg = BiEncoderConfig(mtype, pooling, shared, query_max_length, passage_max_length,
                              q_cls, q_cls if shared else p_cls)
        if info is not None:
            cfg.normalize, cfg.precision = info.normalize, info.precision
            cfg.query_prefix, cfg.passage_prefix = info.query_prefix, info.passage_prefix
        return cls(q, p, tok, cfg).eval()

    # ------------------------------------------------------------ save / load
    def save(self, out_dir: str | Path, overwrite: bool = True) -> Path:
        """Write the artifact folder atomically (safetensors towers + tokenizer)."""
        with atomic_dir(out_dir, overwrite=overwrite) as tmp:
            self.write(tmp)
        return Path(out_dir)

    def write(self, folder: str | Path) -> None:
        """Write the artifact into an existing (temporary) folder; ``config.json`` last."""
        folder = Path(folder)
        self.query_encoder.save_pretrained(str(folder / "query_encoder"), max_shard_size=TOWER_SHARD)
        if self.passage_encoder is not None:
            self.passage_encoder.save_pretrained(str(folder / "passage_encoder"), max_shard_size=TOWER_SHARD)
        save_tokenizer(self.tokenizer, folder / "tokenizer")
        save_config(folder, KIND, {**asdict(self.config), "dim": self.dim})

    @classmethod
    def load(cls, model_dir: str | Path, device: str | torch.device = "cpu") -> "BiEncoder":
        from transformers import AutoTokenizer

        model_dir = Path(model_dir)
        if (model_dir / "best" / "config.json").is_file() and not (model_dir / "query_encoder").is_dir():
            model_dir = model_dir / "best"  # a training-run folder: its best model
        check_device(device)
        info = read_info(model_dir)
        if info is not None:   # a converted encoder (xqa convert e5), used as it is
            if torch.device(device).type == "cpu" and resolve_precision(model_dir, info.precision, info) == "int8":
                model = cls._runtime_first(model_dir, info)
                if model is not None:
                    return model
            model = cls.from_pretrained(str(model_dir)).to(device).eval()
            model.runtime_dir = model_dir       # its int8 runtime (if any) holds these very weights
            return model
        try:
            cfg = BiEncoderConfig.from_dict(load_config(model_dir, KIND))
        except ValueError as e:
            raise XqaError(str(e)) from None
        tok = AutoTokenizer.from_pretrained(str(model_dir / "tokenizer"))
        q = _load_tower(cfg.query_class, str(model_dir / "query_encoder"), cfg.pooling)
        p = None
        if not cfg.shared:
            p = _load_tower(cfg.passage_class, str(model_dir / "passage_encoder"), cfg.pooling)
        model = cls(q, p, tok, cfg).to(device)
        model.eval()
        return model

    @classmethod
    def _runtime_first(cls, model_dir: Path, info) -> "BiEncoder | None":
        """A converted encoder that encodes through its int8 runtime, its torch tower built only
        when something needs it (training, another precision, its weights): loading skips
        building a model the runtime already holds. None where the runtime does not serve
        this encoder's pooling."""
        from transformers import AutoConfig, AutoTokenizer

        if info.pooling not in ("mean", "cls"):
            return None
        hf_cfg = AutoConfig.from_pretrained(str(model_dir))
        if hf_cfg.model_type == "dpr":
            return None
        tower_class = _tower_name(hf_cfg)
        cfg = BiEncoderConfig(hf_cfg.model_type, info.pooling, True, query_max_length=64, passage_max_length=256,
                              query_class=tower_class, passage_class=tower_class, normalize=info.normalize,
                              query_prefix=info.query_prefix, passage_prefix=info.passage_prefix,
                              precision=info.precision)
        tok = AutoTokenizer.from_pretrained(str(model_dir))
        model = cls(None, None, tok, cfg, tower_config=hf_cfg,
                    load_tower=lambda: _load_tower(tower_class, str(model_dir), info.pooling).eval())
        model.training = False
        model.runtime_dir = model_dir
        return model

    # ------------------------------------------------------------- properties
    @property
    def dim(self) -> int:
        c = self.__dict__.get("_tower_config") or self.query_encoder.config
        if self.config.pooling == "pooler" and getattr(c, "projection_dim", 0):
            return int(c.projection_dim)
        return int(c.hidden_size)

    @property
    def device(self) -> torch.device:
        if not self.towers_loaded:
            return torch.device("cpu")   # towers on demand only for CPU inference
        return next(self.parameters()).device

    def towers(self) -> list[nn.Module]:
        return [self.query_encoder] + ([self.passage_encoder] if self.passage_encoder is not None else [])

    def freeze_embeddings(self) -> None:
        """Keep the towers' word-embedding matrices fixed (96M of multilingual-e5-small's 118M
        parameters: a CPU step does far less optimizer work)."""
        for tower in self.towers():
            tower.get_input_embeddings().weight.requires_grad_(False)

    def enable_gradient_checkpointing(self) -> None:
        """Recompute each layer's activations in the backward pass (saves memory on GPU)."""
        for m in self.towers():
            fn = getattr(m, "activation_checkpointing_enable", None) or m.gradient_checkpointing_enable
            fn()

    # ------------------------------------------------------------ tokenizing
    def tokenize_queries(self, questions: Sequence[str]) -> dict[str, torch.Tensor]:
        """``{"input_ids", "attention_mask"}``, both ``[n, L<=query_max_length]`` long tensors."""
        L = self.config.query_max_length
        if self.config.query_prefix or self.config.passage_prefix:
            enc = self.tokenizer([self.config.query_prefix + q for q in questions], truncation=True, max_length=L)
            return self._pad(enc["input_ids"])
        if self._native_cls:
            enc = self.tokenizer(list(questions), truncation=True, max_length=L)
            return self._pad(enc["input_ids"])
        cls_id, _, end = self._ids
        body = self.tokenizer(list(questions), add_special_tokens=False)["input_ids"]
        return self._pad([[cls_id] + b[: L - 2] + [end] for b in body])

    def tokenize_passages(self, passages: Sequence[Passage]) -> dict[str, torch.Tensor]:
        """``title [SEP] text`` in the model's own layout; ``[n, L<=passage_max_length]``."""
        L = self.config.passage_max_length
        titles = [p.title or "" for p in passages]
        texts = [p.text or "" for p in passages]
        if self.config.query_prefix or self.config.passage_prefix:
            one = [self.config.passage_prefix + (f"{t} {x}" if t else x) for t, x in zip(titles, texts)]
            return self._pad(self.tokenizer(one, truncation=True, max_length=L)["input_ids"])
        if self._native_cls:
            enc = self.tokenizer(titles, texts, truncation="only_second", max_length=L)
            return self._pad(enc["input_ids"])
        cls_id, sep_id, end = self._ids
        t_ids = self.tokenizer(titles, add_special_tokens=False)["input_ids"]
        x_ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        rows = []
        for t, x in zip(t_ids, x_ids):
            t = t[: max(0, L // 2 - 2)]
            rows.append(([cls_id] + t + [sep_id] + x)[: L - 1] + [end])
        return self._pad(rows)

    def _pad(self, rows: list[list[int]]) -> dict[str, torch.Tensor]:
        n, width = len(rows), max((len(r) for r in rows), default=1)
        ids = torch.full((n, width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    # ----------------------------------------------------------- embeddings
    def _embed(self, tower: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        pooling = self.config.pooling
        is_dpr = type(tower).__name__.startswith("DPR")
        out = tower(input_ids=input_ids, attention_mask=attention_mask,
                    output_hidden_states=(pooling == "mean" and is_dpr))
        if pooling == "pooler" or (is_dpr and pooling == "cls"):
            return out.pooler_output
        hidden = out.hidden_states[-1] if is_dpr else out.last_hidden_state  # [b, L, h]
        if pooling == "cls":
            vec = hidden[:, 0]
        else:
            m = attention_mask.unsqueeze(-1).to(hidden.dtype)  # [b, L, 1]
            vec = (hidden * m).sum(1) / m.sum(1).clamp_min(1.0)
        if self.config.normalize:
            vec = torch.nn.functional.normalize(vec.float(), dim=-1)
        return vec

    def embed_queries(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Question vectors ``[b, d]`` from token ids ``[b, L]`` (differentiable)."""
        return self._embed(self.query_encoder, input_ids, attention_mask)

    def embed_passages(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Passage vectors ``[b, d]`` from token ids ``[b, L]`` (differentiable)."""
        tower = self.passage_encoder if self.passage_encoder is not None else self.query_encoder
        return self._embed(tower, input_ids, attention_mask)

    # ------------------------------------------------------------- inference
    def encode_queries(self, questions: Sequence[str], batch_size: int = 128,
                       progress: bool = False) -> np.ndarray:
        """Question vectors ``[n, d]`` float32 (inference mode). On a CPU each question is encoded
        alone (``batch_size`` is not used there): int8 quantises activations with one scale per
        batch, and bf16 and fp32 round the products of kernels chosen by the batch's shape (bf16 by
        up to ~1e-3, fp32 by ~1e-7), so a question batched with others would get a vector that
        depends on them (and on their padding); alone, a question's vector is the same in ``xqa
        ask`` and in any batch of ``xqa answer``. On a GPU questions are batched."""
        return self._encode(list(questions), self.tokenize_queries, self.embed_queries,
                            batch_size, progress, key=len, alone=True)

    def encode_passages(self, passages: Sequence[Passage], batch_size: int = 64,
                        progress: bool = False) -> np.ndarray:
        """Passage vectors ``[n, d]`` float32 (inference mode)."""
        return self._encode(list(passages), self.tokenize_passages, self.embed_passages,
                            batch_size, progress, key=lambda p: len(p.title) + len(p.text))

    # ------------------------------------------------------------- CPU precision
    runtime_dir: Path | None = None   # set by load() for a converted encoder used as it is

    def train(self, mode: bool = True) -> "BiEncoder":
        if mode:   # weights about to change: the int8 runtime no longer holds them
            self.runtime_dir, self._int8 = None, None
        elif not self.towers_loaded:   # eval mode: nothing to walk yet
            self.training = False
            return self
        return super().train(mode)

    def cpu_precision(self, questions: bool = False) -> str:
        """What inference runs in on CPU: ``fp32``, ``bf16`` or ``int8`` (the converted folder's
        int8 runtime), resolved from the artifact's ``precision`` on this CPU; ``questions``:
        for questions, encoded one at a time, whose fastest precision may differ from a batch
        of passages' (:func:`xqa.encoders.runtime.resolve_precision`)."""
        if self.device.type != "cpu":
            return "bf16"
        return resolve_precision(self.runtime_dir, self.config.precision, questions=questions)

    def _int8_embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if getattr(self, "_int8", None) is None:
            from xqa.encoders.runtime import INT8_FILE, Int8Encoder

            self._int8 = Int8Encoder(Path(self.runtime_dir) / INT8_FILE)
        hidden = torch.from_numpy(self._int8.hidden(input_ids.numpy(), attention_mask.numpy()))
        if self.config.pooling == "cls":
            vec = hidden[:, 0]
        else:
            m = attention_mask.unsqueeze(-1).to(hidden.dtype)
            vec = (hidden * m).sum(1) / m.sum(1).clamp_min(1.0)
        return torch.nn.functional.normalize(vec, dim=-1) if self.config.normalize else vec

    def _encode(self, items: list, tokenize, embed, batch_size: int, progress: bool, key,
                alone: bool = False) -> np.ndarray:
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        alone = alone and self.device.type == "cpu"
        precision = self.cpu_precision(questions=alone)
        if precision == "int8" and self.config.shared and self.config.pooling in ("mean", "cls"):
            embed = self._int8_embed
        if alone:
            batch_size = 1   # a text's vector not shaped by its batch (encode_queries)
        # Length-sorted batches waste little on padding; the output keeps input order.
        order = sorted(range(len(items)), key=lambda i: key(items[i]), reverse=True)
        was_training = self.training
        if was_training:   # switching modes walks every submodule: milliseconds a call, so only when needed
            self.eval()
        device = self.device
        bar = None
        if progress:
            from tqdm import tqdm

            # leave=None: kept alone, cleared when nested in a caller's bar (a shard's, xqa index dense)
            bar = tqdm(total=len(items), desc="encoding", unit="text", leave=None)
        try:
            with torch.inference_mode(), _precision_autocast(device, "bf16" if precision == "bf16" else "fp32"):
                for s in range(0, len(order), batch_size):
                    idx = order[s: s + batch_size]
                    batch = tokenize([items[i] for i in idx])
                    vec = embed(batch["input_ids"].to(device), batch["attention_mask"].to(device))
                    out[idx] = vec.float().cpu().numpy()
                    if bar is not None:
                        bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()
            if was_training:
                self.train()
        return out

