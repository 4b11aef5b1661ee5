"""BM25 query augmentation learned end to end (Chen & Wiseman 2023, "BM25 Query Augmentation
Learned End-to-End").

Plain BM25 over pieces is ``(v ⊙ bow(q))ᵀ f(d)`` (``v`` Lucene's idf, ``f(d)``
Lucene's BM25 term weights, :mod:`.pieces`). The model re-weights and expands
the query's bag of pieces with a multilingual-e5 encoder ``enc``::

    a(q)   = ReLU(E · enc(q)[CLS] + bias)      over the vocabulary (E: the frozen word embeddings;
                                              softplus instead of ReLU with activation="softplus")
    w(q)_t = ReLU(uᵀ enc(q)_t + c)             for each query token t
    score(q, d) = (w(q) ⊙ v ⊙ (bow(q) + a(q)))ᵀ f(d)

A vocabulary entry that occurs in the query gets ``w`` = the largest ``w_t``
of its positions; an entry only in the augmentation gets ``w = 1``. ``c``
starts at 1 and ``u`` at 0 (so ``w = 1``), and ``bias`` starts so that only
about ``INIT_ACTIVE`` entries of ``a`` are positive for a typical query: the
untrained model is close to plain BM25 over pieces, and ``a`` gets gradients.

At search time the query keeps its own pieces and the ``top_terms`` largest
augmentation entries; it is an ordinary Lucene BM25 query whose term ``i`` is
boosted by ``w_i · (bow_i + a_i)`` (:meth:`AugmentationModel.query_weights`),
so documents are never re-encoded. Questions are encoded without e5's
``"query: "`` prefix, so that ``bow(q)`` is exactly the question's pieces.

A saved model folder holds ``config.json`` (kind ``"bm25_aug_model"``, the
base encoder folder it was trained from, relative and absolute) and
``model.safetensors``: every trained tensor, i.e. all but the word embeddings,
which are read from the base encoder.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from retriever.base import check_k
from xqa.artifacts import check_model_source, folder_ref, is_complete, load_config, resolve_ref, save_config
from xqa.errors import XqaError
from xqa.records import Hit, Question

KIND = "bm25_aug_model"
SOURCE = "bm25-aug"
WEIGHTS = "model.safetensors"
FROZEN = "encoder.embeddings.word_embeddings.weight"
INIT_ACTIVE = 32
# ReLU as the paper; softplus keeps a gradient on every entry, so an entry that falls below zero
# can come back (with ReLU the augmentation can die: no entry positive, no gradient)
ACTIVATIONS = ("relu", "softplus")
PROBES = ("Who wrote the novel?", "Wann wurde die Stadt gegründet?", "東京の人口は何人ですか", "Siapa presiden pertama?",
          "What is the capital of France?")


def model_folder(folder: str | Path) -> Path:
    """A model folder: ``folder`` itself or, for a training run, ``folder/best``."""
    folder = Path(folder)
    if (folder / "best" / "config.json").is_file():
        folder = folder / "best"
    if not is_complete(folder) or load_config(folder).get("kind") != KIND:
        raise XqaError(f"{folder}: not a BM25 query-augmentation model (run `xqa train bm25-aug`)")
    return folder


class AugmentationModel(nn.Module):
    """The query encoder: token ids → ``a(q)`` ``[B, V]`` and per-token ``w`` ``[B, L]``."""

    def __init__(self, encoder, tokenizer, base_dir: str | Path, top_terms: int = 32,
                 query_max_length: int = 64, activation: str = "relu"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise XqaError(f"activation {activation!r} is not one of {', '.join(ACTIVATIONS)}")
        self.activation = activation
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.base_dir = Path(base_dir)
        self.top_terms = int(top_terms)
        self.query_max_length = int(query_max_length)
        self.vocab_size = int(encoder.config.vocab_size)
        hidden = int(encoder.config.hidden_size)
        self.bias = nn.Parameter(torch.zeros(self.vocab_size))
        self.u = nn.Parameter(torch.zeros(hidden))
        self.c = nn.Parameter(torch.ones(()))
        encoder.get_input_embeddings().weight.requires_grad_(False)
        special = torch.zeros(self.vocab_size + 1, dtype=torch.bool)
        ids = [i for i in tokenizer.all_special_ids if 0 <= i < self.vocab_size]
        special[ids] = True
        special[self.vocab_size] = True
        self.register_buffer("special", special, persistent=False)

    # ---------------------------------------------------------------- build / save / load
    @classmethod
    def from_pretrained(cls, encoder_dir: str | Path, top_terms: int = 32, query_max_length: int = 64,
                        init_bias: bool = True, activation: str = "relu") -> AugmentationModel:
        """A fresh model over the encoder folder ``encoder_dir`` (a BERT, e.g. converted multilingual-e5-small)."""
        from transformers import AutoConfig, BertModel

        from .pieces import load_tokenizer

        encoder_dir = Path(encoder_dir)
        if not encoder_dir.is_dir():
            raise XqaError(f"{encoder_dir}: no such folder (the encoder BM25 augmentation starts from: "
                           f"xqa convert e5 OUT)")
        check_model_source(encoder_dir, "the encoder BM25 augmentation starts from")
        cfg = AutoConfig.from_pretrained(str(encoder_dir))
        cfg.attention_probs_dropout_prob = 0.0  # fused attention kernels need it
        encoder = BertModel.from_pretrained(str(encoder_dir), config=cfg, add_pooling_layer=False)
        model = cls(encoder, load_tokenizer(encoder_dir), encoder_dir, top_terms, query_max_length, activation)
        if init_bias:
            model.init_bias()
        return model

    @torch.no_grad()
    def init_bias(self, active: int = INIT_ACTIVE) -> None:
        """Set ``bias`` to minus the ``active``-th largest augmentation logit of a few probe questions
        (their mean), so that about ``active`` entries of ``a`` start positive."""
        was = self.training
        self.eval()
        self.bias.zero_()
        enc = self.tokenize(list(PROBES))
        logits = self.logits(enc["input_ids"], enc["attention_mask"])
        kth = logits.topk(min(active, self.vocab_size), dim=1).values[:, -1]
        self.bias.fill_(-float(kth.mean()))
        self.train(was)

    def write(self, folder: str | Path) -> None:
        """Save ``config.json`` and the trained tensors (all but the frozen word embeddings)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items() if k != FROZEN}
        save_file(tensors, str(folder / WEIGHTS), metadata={"format": "pt"})
        save_config(folder, KIND, {"base": folder_ref(self.base_dir, folder),
                                   "top_terms": self.top_terms, "query_max_length": self.query_max_length,
                                   "activation": self.activation,
                                   "vocab_size": self.vocab_size,
                                   "method": "Chen & Wiseman 2023, BM25 Query Augmentation Learned End-to-End"})

    @classmethod
    def load(cls, folder: str | Path, device: str = "cpu") -> AugmentationModel:
        """Load a saved model (``folder`` or a training run's ``folder/best``)."""
        from safetensors.torch import load_file

        folder = model_folder(folder)
        cfg = load_config(folder, KIND)
        base = resolve_ref(folder, cfg["base"], "base encoder")
        model = cls.from_pretrained(base, cfg.get("top_terms", 32), cfg.get("query_max_length", 64),
                                    init_bias=False, activation=cfg.get("activation", "relu"))
        state = load_file(str(folder / WEIGHTS))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or set(missing) - {FROZEN}:
            raise XqaError(f"{folder}: weights do not fit the base encoder {base} "
                           f"(missing {sorted(set(missing) - {FROZEN})[:3]}, unexpected {unexpected[:3]})")
        return model.to(device).eval()

    # ---------------------------------------------------------------- forward
    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        return self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.query_max_length,
                              return_tensors="pt")

    def _hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self._hidden(input_ids, attention_mask)
        return self._logits(h)

    def _logits(self, h: torch.Tensor) -> torch.Tensor:
        emb = self.encoder.get_input_embeddings().weight  # [V, d]
        return h[:, 0] @ emb.T + self.bias

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(a [B, V], w_tok [B, L])``."""
        h = self._hidden(input_ids, attention_mask)
        logits = self._logits(h)
        a = torch.relu(logits) if self.activation == "relu" else torch.nn.functional.softplus(logits)
        w_tok = torch.relu(h @ self.u + self.c)
        return a, w_tok

    def query_vectors(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                      top_terms: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(w ⊙ (bow + a) [B, V], a [B, V])``: the boosts of every vocabulary entry, and ``a``.

        ``top_terms`` (≥ 0) keeps only that many augmentation entries outside the
        query's own pieces, as a search does; None keeps all (training).
        """
        a, w_tok = self(input_ids, attention_mask)
        b, v = a.shape
        ids = input_ids.clamp(0, v)
        valid = attention_mask.bool() & ~self.special[ids]
        ids = torch.where(valid, ids, torch.full_like(ids, v))  # invalid positions → a scratch column
        bow = torch.zeros(b, v + 1, device=a.device, dtype=a.dtype).scatter_add(1, ids, valid.to(a.dtype))[:, :v]
        w = torch.ones(b, v + 1, device=a.device, dtype=a.dtype).scatter_reduce(
            1, ids, w_tok.to(a.dtype), reduce="amax", include_self=False)[:, :v]
        aug = a
        if top_terms is not None:
            outside = torch.where(bow > 0, torch.zeros_like(a), a)
            t = min(int(top_terms), v)
            keep = torch.zeros_like(a, dtype=torch.bool)
            if t > 0:
                keep.scatter_(1, outside.topk(t, dim=1).indices, True)
            aug = torch.where((bow > 0) | keep, a, torch.zeros_like(a))
        return w * (bow + aug), a

    @torch.no_grad()
    def query_weights(self, texts: Sequence[str], batch_size: int = 32,
                      top_terms: int | None = None) -> list[dict[str, float]]:
        """``{piece: w_i · (bow_i + a_i)}`` per text (non-zero entries only): its Lucene query."""
        was = self.training
        if was:   # switching modes walks every submodule: only when needed
            self.eval()
        t = self.top_terms if top_terms is None else top_terms
        out: list[dict[str, float]] = []
        device = self.bias.device
        try:
            for s in range(0, len(texts), batch_size):
                enc = self.tokenize(texts[s:s + batch_size])
                q, _ = self.query_vectors(enc["input_ids"].to(device), enc["attention_mask"].to(device), t)
                for row in q:
                    idx = torch.nonzero(row > 0).flatten()
                    vals = row[idx].tolist()
                    pieces = self.tokenizer.convert_ids_to_tokens(idx.tolist())
                    out.append(dict(zip(pieces, vals)))
        finally:
            if was:
                self.train()
        return out


class AugmentedRetriever:
    """Search the pieces index with each question's learned, weighted and expanded query."""

    source = SOURCE

    def __init__(self, model: AugmentationModel, pieces: Any, batch_size: int = 32):
        self.model, self.pieces, self.batch_size = model, pieces, batch_size
        if len(pieces.tokenizer) != len(model.tokenizer):
            raise XqaError(f"the pieces index {pieces.folder} and the model use different tokenizers "
                           f"({len(pieces.tokenizer)} vs {len(model.tokenizer)} pieces)")

    @classmethod
    def load(cls, model_folder: str | Path, pieces: Any, device: str = "cpu") -> AugmentedRetriever:
        """The model saved by ``xqa train bm25-aug`` (its run folder or ``best/``) over a
        :class:`~retriever.bm25_aug.pieces.PiecesRetriever`."""
        return cls(AugmentationModel.load(model_folder, device=device), pieces)

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Top-``k`` passages per question: sorted by score, unique ids."""
        k = check_k(k)
        if not questions:
            return []
        weights = self.model.query_weights([q.question for q in questions], batch_size=self.batch_size)
        return self.pieces.search_weighted(weights, k, source=self.source)


__all__ = ["KIND", "SOURCE", "AugmentationModel", "AugmentedRetriever", "model_folder"]
