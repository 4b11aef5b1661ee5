"""``SpanReader``: the span model with its tokenizer and settings, as one artifact.

Artifact folder (``kind: span_reader``)::

    config.json     settings (row layout, max answer tokens, precision), base encoder, versions
    encoder/        the encoder: Hugging Face config.json + model.safetensors
    heads.safetensors   the start/end and relevance heads
    tokenizer/      the tokenizer (AutoTokenizer loads it)

``read(questions, contexts)`` returns one :class:`SpanOutput` per question: the best spans
of every passage with their scores s_ij (start + end logit), each passage's relevance r_i
(from its first token; the best of its windows) and log-normaliser log Σ_j exp(s_ij) over
every span the passage allows, which is what evidence fusion needs to compute
softmax(s_i)_j exactly (:func:`reader.evidence.fuse_spans`).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reader.span.data import Encoded, RowLayout, Window, encode, pad_rows, span_text, windows
from reader.span.model import SpanHeads, SpanModel, build_encoder, load_encoder
from xqa.artifacts import atomic_dir, check_model_source, load_config, save_config, save_tokenizer
from xqa.encoders.info import autocast
from xqa.encoders.runtime import READER_RECORD
from xqa.errors import XqaError
from xqa.records import Answer, Context, Question

RUNTIME_RECORD = READER_RECORD   # the int8 runtime's check and choice (reader.span.runtime)

KIND = "span_reader"


@dataclass
class SpanSettings:
    max_length: int = 256      # tokens per row
    max_question: int = 48
    max_title: int = 24
    stride: int = 64           # tokens two windows of a long passage share
    max_answer_len: int = 24   # answer tokens
    precision: str = "auto"    # CPU inference: fp32 | bf16 | int8 | auto (as its check here chose: xqa.encoders.runtime.choose)

    @property
    def layout(self) -> RowLayout:
        return RowLayout(self.max_length, self.max_question, self.max_title, self.stride)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SpanSettings":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class Span:
    text: str
    passage: int      # index among the question's passages
    score: float      # s_ij: start + end logit
    start: int = 0    # characters in the passage text
    end: int = 0


@dataclass
class SpanOutput:
    """What the span reader says about one question's N passages."""

    spans: list[Span]                 # best spans of every passage, best first
    relevance: np.ndarray             # [N] r_i
    norm: np.ndarray                  # [N] log Σ_j exp(s_ij) over every allowed span of passage i
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.spans[0].text if self.spans else ""

    def to_dict(self) -> dict[str, Any]:
        return {"spans": [asdict(s) for s in self.spans], "relevance": [float(x) for x in self.relevance],
                "norm": [float(x) for x in self.norm]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SpanOutput":
        return cls([Span(**s) for s in d["spans"]], np.asarray(d["relevance"], dtype=np.float64),
                   np.asarray(d["norm"], dtype=np.float64))


def _device(device) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class SpanReader:
    """Batch-first extractive reader: ``read(questions, contexts) -> list[SpanOutput]``."""

    family = "span"

    def __init__(self, model: SpanModel | None, tokenizer, settings: SpanSettings | None = None, base: str = "",
                 device: str | torch.device | None = "cpu", *, heads: SpanHeads | None = None,
                 load_model: Callable[[], SpanModel] | None = None):
        """``model`` None: ``load_model`` makes it on first use of :attr:`model`, and until then
        ``heads`` serve a reader whose int8 runtime computes the hidden states."""
        if model is None and (heads is None or load_model is None):
            raise ValueError("a span reader without its model needs its heads and a way to load the model")
        self._model, self._heads, self._load_model = model, heads, load_model
        self.tokenizer = tokenizer
        # passages are tokenized whole and cut into windows here, never fed whole to the model
        self.tokenizer.model_max_length = int(1e9)
        self.settings = settings or SpanSettings()
        self.base = base
        self.device = _device(device)
        (model if model is not None else heads).to(self.device).eval()
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        if self.cls_id is None or self.sep_id is None:
            raise XqaError("the span reader needs a tokenizer with CLS and SEP tokens (<s>, </s>)")

    @property
    def model(self) -> SpanModel:
        """The network; loaded now if :meth:`load` left it for later (int8 reading needs only the heads)."""
        if self._model is None:
            self._model = self._load_model().to(self.device).eval()
            self._heads = None
        return self._model

    @model.setter
    def model(self, model: SpanModel) -> None:
        self._model = model

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_encoder(cls, folder: str | Path, layers: int = 0, device=None, **settings) -> "SpanReader":
        """A new reader on a pretrained encoder folder (e.g. ``xqa convert e5``'s), heads at random."""
        from transformers import AutoTokenizer

        check_model_source(folder, "the encoder a span reader starts from")
        encoder = load_encoder(str(folder), layers)
        tok = AutoTokenizer.from_pretrained(str(folder))
        return cls(SpanModel(encoder), tok, SpanSettings(**settings), base=str(folder), device=device)

    @classmethod
    def load(cls, folder: str | Path, device: str | torch.device | None = None, runtime: bool = True,
             **overrides) -> "SpanReader":
        """Load an artifact (or a training run folder: its ``best/``). ``runtime``: read on CPU
        through the folder's int8 runtime where its precision says so (off for a reader about
        to be trained: the file holds the weights as loaded)."""
        from safetensors.torch import load_file
        from transformers import AutoConfig, AutoTokenizer

        folder = Path(folder)
        if not (folder / "encoder").is_dir() and (folder / "best" / "encoder").is_dir():
            folder = folder / "best"
        try:
            cfg = load_config(folder, KIND)
        except ValueError as e:
            raise XqaError(str(e)) from None
        hf = AutoConfig.from_pretrained(str(folder / "encoder"))
        heads = load_file(str(folder / "heads.safetensors"))

        def load_model() -> SpanModel:
            model = SpanModel(build_encoder(hf.to_dict(), init=False))   # every weight is loaded below
            state = load_file(str(folder / "encoder" / "model.safetensors"))
            missing, unexpected = model.encoder.load_state_dict(state, strict=False)
            missing = [k for k in missing if not k.endswith("position_ids")]
            if missing or unexpected:
                raise XqaError(f"{folder}/encoder: weights do not fit (missing {missing[:3]}, "
                               f"unexpected {unexpected[:3]})")
            model.load_heads(heads)
            return model

        only_heads = SpanHeads(hf.hidden_size)
        only_heads.load_heads(heads)
        tok = AutoTokenizer.from_pretrained(str(folder / "tokenizer"))
        settings = SpanSettings.from_dict({**cfg.get("settings", {}), **overrides})
        reader = cls(None, tok, settings, base=cfg.get("base", ""), device=device, heads=only_heads,
                     load_model=load_model)
        reader.runtime_dir = folder if runtime else None
        if reader.cpu_precision() != "int8":
            reader.model  # noqa: B018 - loaded now: only the int8 runtime reads without it
        return reader

    runtime_dir: Path | None = None      # the loaded folder, whose int8 runtime (if any) holds these weights
    _int8 = None

    def cpu_precision(self) -> str:
        """What reading runs in: on CPU ``fp32``, ``bf16`` or ``int8`` (as the artifact's
        ``precision`` resolves on this CPU), bf16 autocast on CUDA."""
        if self.device.type != "cpu":
            return "bf16"
        from xqa.encoders.info import EncoderInfo
        from xqa.encoders.runtime import resolve_precision

        record = self.runtime_dir / RUNTIME_RECORD if self.runtime_dir is not None else None
        info = EncoderInfo(runtime=json.loads(record.read_text(encoding="utf-8")) if record and record.is_file() else {})
        return resolve_precision(self.runtime_dir, self.settings.precision, info)

    def write_to(self, folder: str | Path) -> None:
        from safetensors.torch import save_file

        folder = Path(folder)
        self.model.encoder.save_pretrained(str(folder / "encoder"), safe_serialization=True)
        heads = {f"span_head.{k}": v.detach().cpu().contiguous() for k, v in self.model.span_head.state_dict().items()}
        heads |= {f"rank_head.{k}": v.detach().cpu().contiguous() for k, v in self.model.rank_head.state_dict().items()}
        save_file(heads, str(folder / "heads.safetensors"))
        save_tokenizer(self.tokenizer, folder / "tokenizer")
        save_config(folder, KIND, {"settings": asdict(self.settings), "base": self.base,
                                   "layers": int(self.model.encoder.config.num_hidden_layers),
                                   "parameters": sum(p.numel() for p in self.model.parameters())})

    def save(self, folder: str | Path, overwrite: bool = True) -> Path:
        with atomic_dir(folder, overwrite=overwrite) as tmp:
            self.write_to(tmp)
        return Path(folder)

    # ------------------------------------------------------------------ the reader contract (reader.base)

    n_context = 10                                 # passages per question where a caller names none
    fusion_keys = ("beta", "gamma", "same_language")

    def answer(self, question: Question, contexts: Sequence[Context], output: SpanOutput,
               params=None, labels=None) -> Answer:
        """Evidence fusion of the spans over the passages read (:func:`reader.evidence.build_span_answer`;
        δ favours passages in the question's language). A span is shown as its passage writes it:
        ``labels`` is not used."""
        from reader.evidence import build_span_answer

        return build_span_answer(question.id, output, contexts, params, question.lang or "")

    @staticmethod
    def output_from_dict(d: dict[str, Any]) -> SpanOutput:
        return SpanOutput.from_dict(d)

    @staticmethod
    def settings_key(n_context: int = 10, **_ignored) -> str:
        """``span{N}``: the spans depend on the passages read."""
        return f"span{n_context}"

    @staticmethod
    def tune_fusion(outputs, contexts, answers, langs, scorer, labels=None, passes: int = 3,
                    progress: bool = False) -> dict[str, Any]:
        """β, γ and δ by grid search (:func:`reader.tuning.tune_span_fusion`)."""
        from reader.tuning import prepare_spans, tune_span_fusion

        return tune_span_fusion(prepare_spans(outputs, contexts, answers, langs, scorer), passes=passes,
                                progress=progress)

    # ------------------------------------------------------------------ inference

    def read(self, questions: Sequence[Question], contexts: Sequence[Sequence[Context]],
             n_best: int = 5, max_answer_len: int | None = None, batch_size: int = 16,
             **_ignored) -> list[SpanOutput]:
        """The best ``n_best`` spans of every passage of every question (see module doc)."""
        if len(questions) != len(contexts):
            raise ValueError(f"{len(questions)} questions but {len(contexts)} context lists")
        A = max_answer_len or self.settings.max_answer_len
        layout = self.settings.layout
        q_enc = encode(self.tokenizer, [q.question for q in questions])
        cache: dict[tuple[str, str], tuple[Encoded, Encoded]] = {}
        rows: list[tuple[int, Window]] = []
        for qi, (qe, ctxs) in enumerate(zip(q_enc, contexts)):
            for pi, c in enumerate(ctxs):
                key = (c.title or "", c.text or "")
                if key not in cache:
                    t, x = encode(self.tokenizer, [key[0], key[1]])
                    cache[key] = (t, x)
                title, text = cache[key]
                rows += [(qi, w) for w in windows(qe, title, text, self.cls_id, self.sep_id, layout, pi)]
        results = self._score_rows([w for _, w in rows], A, n_best, batch_size, [qi for qi, _ in rows])
        per_q: list[list[tuple[Window, Any]]] = [[] for _ in questions]
        for (qi, w), res in zip(rows, results):
            per_q[qi].append((w, res))
        return [self._assemble(ctxs, items, n_best) for ctxs, items in zip(contexts, per_q)]

    @torch.inference_mode()
    def _score_rows(self, rows: list[Window], A: int, k: int, batch_size: int,
                    owners: Sequence[int] | None = None) -> list[Any]:
        """Per row: (relevance, log-normaliser, [(score, s, e)] best k spans in text-token indexes).
        ``owners``: each row's question. On a CPU a batch holds one question's rows only: int8
        quantises activations with one scale per batch, and bf16 and fp32 round the products of
        kernels chosen by the batch's shape, so rows batched with another question's would score
        by their company, and a question would be answered otherwise alone (``xqa ask``) than in
        a batch of ``xqa answer``, or in a resumed run."""
        out: list[Any] = [None] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i].ids), reverse=True)
        precision = self.cpu_precision()
        if precision == "int8" and self._int8 is None:
            from xqa.encoders.runtime import INT8_FILE, Int8Encoder

            self._int8 = Int8Encoder(Path(self.runtime_dir) / INT8_FILE)
        batches = [order[b: b + batch_size] for b in range(0, len(order), batch_size)]
        if self.device.type == "cpu" and owners is not None:
            by_owner: dict[int, list[int]] = {}
            for i in order:
                by_owner.setdefault(owners[i], []).append(i)
            batches = [mine[b: b + batch_size] for mine in by_owner.values() for b in range(0, len(mine), batch_size)]
        with autocast(self.device, "fp32" if precision == "int8" else precision):
            for idx in batches:
                batch = pad_rows([rows[i].ids for i in idx], self.pad_id)
                if precision == "int8":
                    hidden = torch.from_numpy(self._int8.hidden(batch["input_ids"].numpy(),
                                                                batch["attention_mask"].numpy()))
                    start, end, rel = (self._model if self._model is not None else self._heads).heads(hidden)
                else:
                    start, end, rel = self.model(batch["input_ids"].to(self.device),
                                                 batch["attention_mask"].to(self.device))
                start, end, rel = start.float().cpu(), end.float().cpu(), rel.float().cpu()
                for j, i in enumerate(idx):
                    w = rows[i]
                    s = start[j, w.text_start: w.text_start + w.n]
                    e = end[j, w.text_start: w.text_start + w.n]
                    out[i] = (float(rel[j]),) + best_spans(s, e, A, k)
        return out

    def _assemble(self, ctxs: Sequence[Context], items: list[tuple[Window, Any]], n_best: int) -> SpanOutput:
        N = len(ctxs)
        relevance = np.full(N, -np.inf)
        norms: list[list[float]] = [[] for _ in range(N)]
        best: dict[tuple[int, int, int], float] = {}   # (passage, first token, last token) -> score
        for w, (rel, norm, spans) in items:
            p = w.passage
            relevance[p] = max(relevance[p], rel)
            norms[p].append(norm)
            for score, s, e in spans:
                key = (p, w.first + s, w.first + e)
                if score > best.get(key, -np.inf):
                    best[key] = score
        offsets: dict[int, list[tuple[int, int]]] = {}
        for w, _ in items:   # each passage's text offsets, assembled from its windows
            offs = offsets.setdefault(w.passage, [])
            if len(offs) < w.first + w.n:
                offs.extend(w.offsets[len(offs) - w.first:])
        per_passage: dict[int, list[Span]] = {}
        for (p, s, e), score in best.items():
            text, a, b = span_text(ctxs[p].text, offsets[p], s, e)
            if text:
                per_passage.setdefault(p, []).append(Span(text, p, float(score), a, b))
        spans = []
        for p, lst in per_passage.items():
            spans += sorted(lst, key=lambda x: -x.score)[:n_best]
        spans.sort(key=lambda x: -x.score)
        norm = np.array([_logsumexp(v) if v else -np.inf for v in norms])
        relevance = np.where(np.isfinite(relevance), relevance, -1e4)
        return SpanOutput(spans, relevance, norm)


def _logsumexp(values: Sequence[float]) -> float:
    m = max(values)
    return float(m + np.log(np.sum(np.exp(np.asarray(values) - m))))


def best_spans(start: torch.Tensor, end: torch.Tensor, max_len: int, k: int) -> tuple[float, list]:
    """``(log Σ exp(start_i + end_j), [(score, i, j)])`` over spans ``i <= j < i + max_len`` of one
    row's text tokens ``start``/``end`` ``[n]``; the best ``k`` spans."""
    n = start.shape[0]
    if n == 0:
        return -np.inf, []
    A = min(max_len, n)
    idx = torch.arange(n).unsqueeze(1) + torch.arange(A).unsqueeze(0)          # [n, A] end index
    valid = idx < n
    band = start.unsqueeze(1) + end[idx.clamp(max=n - 1)]                        # [n, A]
    band = band.masked_fill(~valid, float("-inf"))
    norm = float(torch.logsumexp(band.flatten(), 0))
    top = torch.topk(band.flatten(), min(k, int(valid.sum())))
    spans = [(float(v), int(f) // A, int(f) // A + int(f) % A) for v, f in zip(top.values, top.indices)]
    return norm, spans
