"""``FiDReader``: a FiD model with its tokenizer and settings, as one artifact.

Artifact folder (``kind: fid_reader``)::

    config.json        xqa config: settings (max_length, max_answer_len, n_context, decoder_prompt),
                       base, copy head, versions
    model/             the (m)T5 model: Hugging Face config.json + model.safetensors
    tokenizer/         the tokenizer (AutoTokenizer.from_pretrained loads it)

``FiDReader.load`` also accepts a plain Hugging Face T5/mT5 checkpoint (hub name
such as ``google/mt5-small`` or a local folder); it then starts from that
model with default settings.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reader.base import ReaderOutput
from reader.fid.data import copy_attention_targets, encode_passages, encode_prompts, example_from_records
from reader.fid import warm
from reader.fid.model import FiD, DecoderPrompt, Search, SpanHooks, build_t5, load_t5
from reader.fid.warm import WarmStart
from xqa.artifacts import CONFIG_NAME, atomic_dir, check_model_source, save_config, save_tokenizer
from xqa.errors import XqaError
from xqa.records import Answer, Context, Question

KIND = "fid_reader"


def _load_warm(folder: Path, spec: WarmStart):
    """A warm-started encoder-decoder saved by :meth:`FiDReader.write_to`."""
    import json

    from safetensors.torch import load_file

    model = warm.from_config(json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8")), spec)
    stored = load_file(str(folder / "model.safetensors"))
    missing, unexpected = model.load_state_dict(stored, strict=False)
    have = {t.data_ptr() for k, t in model.state_dict().items() if k in stored}
    untied = [k for k in missing if model.state_dict()[k].data_ptr() not in have]
    if untied or unexpected:
        raise XqaError(f"{folder}: the weights do not fit the model (missing {untied[:3]}, unexpected {unexpected[:3]})")
    return model


def _device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class FiDReader:
    """Batch-first FiD reader: ``read(questions, contexts) -> list[ReaderOutput]``."""

    family = "fid"

    def __init__(self, model: FiD, tokenizer, max_length: int = 192, max_answer_len: int = 24,
                 n_context: int = 20, base: str = "", device: str | torch.device | None = "cpu",
                 decoder_prompt: bool = False, precision: str = "fp32"):
        self.model, self.tokenizer = model, tokenizer
        # CPU reading: fp32 | bf16 | int8 | auto (as reader.fid.runtime's check here chose:
        # xqa.encoders.runtime.choose). A reader saved without one reads in fp32.
        self.precision = precision
        self.runtime_dir: Path | None = None   # the loaded folder, whose runtime.json records the check
        self._quantized = False
        # The decoder reads "question: {q} lang: {lang} answer:" before the answer
        # (reader.fid.data.format_decoder_prompt): a property of how the model was trained.
        self.decoder_prompt = bool(decoder_prompt)
        self.max_length, self.max_answer_len, self.n_context = max_length, max_answer_len, n_context
        self.base = base
        self._twins = None  # reader.fid.spans.piece_twins of the tokenizer, made on first span-constrained read
        self.warm_start_spec: WarmStart | None = None   # how a warm-started decoder is tied (reader.fid.warm)
        self.device = _device(device)
        self.model.to(self.device).eval()

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_config(cls, size: str | dict[str, Any], tokenizer, seed: int = 0, **settings) -> FiDReader:
        """A randomly initialised reader of a named size (``tiny``, ``small``) over ``tokenizer``."""
        t5 = build_t5(size, vocab_size=len(tokenizer), seed=seed)
        return cls(FiD(t5), tokenizer, base=f"config:{size if isinstance(size, str) else 'custom'}", **settings)

    @classmethod
    def warm_start(cls, encoder, tokenizer, spec: WarmStart = WarmStart(), seed: int = 0, base: str = "",
                   **settings) -> FiDReader:
        """A reader whose encoder is ``encoder`` (a ``BertModel``, e.g. multilingual-e5-small or the
        span reader's) and whose decoder is warm-started from it (:mod:`reader.fid.warm`)."""
        model = warm.build(encoder, spec, start=tokenizer.cls_token_id, eos=tokenizer.sep_token_id,
                           pad=tokenizer.pad_token_id, seed=seed)
        settings.setdefault("precision", "auto")   # checked on the CPU it reads on (reader.fid.runtime)
        reader = cls(FiD(model), tokenizer, base=base or "warm-start", **settings)
        reader.warm_start_spec = spec
        return reader

    @classmethod
    def warm_start_from(cls, folder: str | Path, spec: WarmStart = WarmStart(), **settings) -> FiDReader:
        """:meth:`warm_start` from a Hugging Face BERT folder: a converted encoder (``xqa convert e5``)
        or a span reader's ``encoder/`` (its tokenizer is the reader's ``tokenizer/``)."""
        from transformers import AutoTokenizer, BertModel

        folder = Path(folder)
        tok_dir = folder if (folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file() \
            else folder.parent / "tokenizer"
        encoder = BertModel.from_pretrained(str(folder), add_pooling_layer=False, attention_probs_dropout_prob=0.0)
        return cls.warm_start(encoder, AutoTokenizer.from_pretrained(str(tok_dir)), spec, base=str(folder), **settings)

    @classmethod
    def load(cls, name_or_folder: str | Path, device: str | torch.device | None = None,
             **overrides) -> FiDReader:
        """Load an xqa reader artifact (or a training run folder: its ``best/``), or start
        from a Hugging Face T5/mT5 checkpoint (hub name or folder)."""
        from transformers import AutoTokenizer

        from xqa.artifacts import load_config

        share = overrides.pop("generator_share", ...)   # ...: the artifact's own
        folder = Path(name_or_folder)
        if not (folder / "model").is_dir() and (folder / "best" / "model").is_dir():
            folder = folder / "best"  # a training run folder (xqa train reader --out)
        if (folder / CONFIG_NAME).is_file() and (folder / "model").is_dir():
            cfg = load_config(folder, KIND)
            if "pointer_mix" in cfg:
                raise XqaError(f"{folder}: a reader saved by an earlier version of xqa (its config.json "
                               "has 'pointer_mix'); train it again (xqa train reader, or delete the "
                               "build's reader/ folder and run xqa embedded build)")
            spec = WarmStart.from_dict(cfg["warm_start"]) if cfg.get("warm_start") else None
            t5 = _load_warm(folder / "model", spec) if spec else load_t5(str(folder / "model"))
            tok = AutoTokenizer.from_pretrained(str(folder / "tokenizer"))
            settings = {k: cfg[k] for k in ("max_length", "max_answer_len", "n_context", "decoder_prompt",
                                            "precision") if k in cfg}
            settings.update(overrides)
            fid = FiD(t5, copy_head=cfg.get("copy_head"), copy_weight=cfg.get("copy_weight", 1.0),
                      generator_share=cfg.get("generator_share") if share is ... else share)
            reader = cls(fid, tok, base=cfg.get("base", ""), device=device, **settings)
            reader.warm_start_spec = spec
            reader.runtime_dir = folder
            if reader.device.type == "cpu" and reader.cpu_precision() == "int8":
                reader._quantize()
            return reader
        if folder.exists() and not (folder / CONFIG_NAME).is_file():
            raise FileNotFoundError(f"{folder}: neither an xqa reader nor a Hugging Face model folder")
        check_model_source(name_or_folder, "a FiD reader or a T5/mT5 model")
        try:
            t5 = load_t5(str(name_or_folder))
            tok = AutoTokenizer.from_pretrained(str(name_or_folder))
        except OSError as e:  # not a folder, and not on the hub (or the hub is offline)
            raise XqaError(f"{name_or_folder}: no xqa reader, HF folder or reachable hub model "
                           f"({' '.join(str(e).split())})") from None
        return cls(FiD(t5, generator_share=None if share is ... else share), tok, base=str(name_or_folder),
                   device=device, **overrides)

    def write_to(self, folder: str | Path) -> None:
        """Write the artifact into an existing (empty) ``folder``; see :meth:`save` for the atomic form."""
        folder = Path(folder)
        if self._quantized:
            raise XqaError("an int8 (quantised) reader is not saved: save the one it was made from")
        spec = self.warm_start_spec
        if spec is None:
            self.model.t5.save_pretrained(str(folder / "model"))
        else:   # tied and shared tensors stored once; the config says how to tie them again
            from safetensors.torch import save_file

            (folder / "model").mkdir(parents=True, exist_ok=True)
            self.model.t5.config.to_json_file(str(folder / "model" / CONFIG_NAME))
            save_file({k: v.detach().cpu() for k, v in warm.unique_state(self.model.t5).items()},
                      str(folder / "model" / "model.safetensors"))
        save_tokenizer(self.tokenizer, folder / "tokenizer")
        save_config(folder, KIND, {"max_length": self.max_length, "max_answer_len": self.max_answer_len,
                                   "n_context": self.n_context, "base": self.base,
                                   "decoder_prompt": self.decoder_prompt,
                                   "model_type": self.model.config.model_type,
                                   "parameters": sum(p.numel() for p in self.model.parameters()),
                                   "copy_head": list(self.model.copy_head) if self.model.copy_head else None,
                                   "copy_weight": self.model.copy_weight,
                                   "generator_share": self.model.generator_share,
                                   "precision": self.precision,
                                   "warm_start": spec.to_dict() if spec else None})

    # ------------------------------------------------------------------ CPU precision

    def cpu_precision(self) -> str:
        """What reading on a CPU runs in: ``fp32``, ``bf16`` (autocast) or ``int8`` (dynamically
        quantised linear layers), as ``precision`` resolves here (:func:`reader.fid.precision.resolve`)."""
        from reader.fid.precision import resolve

        return "int8" if self._quantized else resolve(self.runtime_dir, self.precision)

    def _quantize(self) -> None:
        from reader.fid.precision import quantized

        quantized(self.model, inplace=True)
        self._quantized = True

    def with_precision(self, precision: str) -> FiDReader:
        """This reader reading in ``precision`` on the CPU (int8: a quantised copy of the model)."""
        import copy

        from reader.fid.precision import quantized

        other = copy.copy(self)
        other.precision = precision
        if precision == "int8" and not self._quantized:
            other.model = quantized(self.model)
            other._quantized = True
        return other

    def save(self, folder: str | Path, overwrite: bool = True) -> Path:
        """Write the artifact to ``folder`` atomically (temporary folder, then rename)."""
        with atomic_dir(folder, overwrite=overwrite) as tmp:
            self.write_to(tmp)
        return Path(folder)

    # ------------------------------------------------------------------ inference

    def read(self, questions: Sequence[Question], contexts: Sequence[Sequence[Context]],
             n_context: int | None = None, beams: int = 4, n_best: int = 4,
             max_answer_len: int | None = None, batch_size: int = 8,
             progress: bool = False, span_beams: int = 0, **_ignored) -> list[ReaderOutput]:
        """Answer each question from its contexts (kept in the given order; the first
        ``n_context`` are read). ``beams=1`` is greedy decoding (one candidate).
        ``span_beams`` > 0 adds that many candidates from a beam search restricted to
        spans of the passages read (:mod:`reader.fid.spans`). Other families' settings are ignored."""
        if len(questions) != len(contexts):
            raise ValueError(f"{len(questions)} questions but {len(contexts)} context lists")
        examples = [example_from_records(q, c) for q, c in zip(questions, contexts)]
        return self.read_examples(examples, n_context=n_context, beams=beams, n_best=n_best,
                                  max_answer_len=max_answer_len, batch_size=batch_size, progress=progress,
                                  span_beams=span_beams)

    # ------------------------------------------------------------------ the reader contract (reader.base)

    fusion_keys = ("beta", "gamma", "miss", "soft")

    def answer(self, question: Question, contexts: Sequence[Context], output: ReaderOutput,
               params=None, labels=None) -> Answer:
        """Evidence fusion of the n-best over the passages read (:func:`reader.evidence.build_answer`);
        with ``labels``, a candidate is shown as the table writes it in the question's language."""
        from reader.evidence import build_answer

        n = min(len(contexts), len(output.relevance))
        shown = (labels.shown_all([t for t, _ in output.candidates], question.lang)
                 if labels is not None else None)
        return build_answer(question.id, output.candidates, list(output.relevance)[:n], list(contexts)[:n],
                            params, getattr(output, "candidate_relevance", None), shown)

    @staticmethod
    def output_from_dict(d: Mapping[str, Any]) -> ReaderOutput:
        return ReaderOutput.from_dict(d)

    @staticmethod
    def settings_key(beams: int = 4, span_beams: int = 0, **_ignored) -> str:
        """``beam{B}`` (``.span{K}`` with span candidates): the n-best differs with these."""
        return f"beam{beams}" + (f".span{span_beams}" if span_beams else "")

    @staticmethod
    def tune_fusion(outputs, contexts, answers, langs, scorer, labels=None, passes: int = 3,
                    progress: bool = False) -> dict[str, Any]:
        """β, γ, ε and soft matching by grid search (:func:`reader.tuning.tune_fusion`)."""
        from reader.tuning import prepare, tune_fusion

        return tune_fusion(prepare(outputs, contexts, answers, langs, scorer, labels), passes=passes,
                           progress=progress)

    def read_examples(self, examples: Sequence[Mapping[str, Any]], n_context: int | None = None,
                      beams: int = 4, n_best: int = 4, max_answer_len: int | None = None,
                      batch_size: int = 8, progress: bool = False, span_beams: int = 0) -> list[ReaderOutput]:
        """:meth:`read` over example dicts (``reader.fid.data.example_from_record``)."""
        from reader.fid.spans import allowed_tokens_fn, passage_ranges, piece_twins, span_indexes

        n_context = n_context or self.n_context
        max_answer_len = max_answer_len or self.max_answer_len
        outputs: list[ReaderOutput] = []
        if span_beams > 0 and self._twins is None:
            self._twins = piece_twins(self.tokenizer)  # a pass over the vocabulary: once per reader
        self.model.eval()
        import contextlib

        cast = (torch.autocast("cpu", dtype=torch.bfloat16)
                if self.device.type == "cpu" and self.cpu_precision() == "bf16" else contextlib.nullcontext())
        if self.device.type == "cpu":
            # one question a batch (its passages are the batch's rows): int8 activations are quantised
            # with one scale per batch, and bf16 and fp32 round the products of kernels chosen by the
            # batch's shape, so another question's passages would change this one's answer
            batch_size = 1
        for start in _batches(len(examples), batch_size, progress):
            chunk = examples[start:start + batch_size]
            # Never pad beyond the largest passage list in the chunk: padding rows cost encoder time.
            n = max(1, min(n_context, max(len(ex["texts"]) for ex in chunk)))
            batch = encode_passages(self.tokenizer, chunk, n, self.max_length)
            batch = {k: v.to(self.device) for k, v in batch.items()}
            allowed = indexes = prompt = None
            if self.decoder_prompt:
                _, ids, mask = encode_prompts(self.tokenizer, chunk, self.model.config.decoder_start_token_id)
                prompt = DecoderPrompt(ids.to(self.device), mask.to(self.device))
            if span_beams > 0:
                indexes = span_indexes(self.tokenizer, chunk, n, self.max_length, self._twins)
                allowed = allowed_tokens_fn(indexes, start_len=1 if prompt is None else prompt.ids.shape[1])
            hooks = SpanHooks(allowed_tokens=allowed)
            if self.model.copy_head is not None:
                ids = batch["input_ids"].cpu()
                spans_at = point_first = None
                if indexes is not None:
                    point_first = partial(_point_first, indexes, ids, span_beams)
                if indexes is not None and self.model.generator_share is not None:
                    ranges = passage_ranges(self.tokenizer, chunk, n, self.max_length, ids.shape[-1])
                    spans_at = partial(_pointer_spans, ids, ranges, span_beams, self.tokenizer,
                                       self.model.config.decoder_start_token_id, max_answer_len)
                hooks = SpanHooks(allowed, point_first, partial(_copy_targets, self.tokenizer, ids), spans_at)
            with cast:
                gen = self.model.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                                          Search(beams, n_best, max_answer_len, span_beams), hooks, prompt)
            outputs.extend(self._outputs(chunk, gen, n_context))
        return outputs

    def _outputs(self, chunk: Sequence[Mapping[str, Any]], gen: dict[str, torch.Tensor],
                 n_context: int) -> Iterable[ReaderOutput]:
        seqs, logprobs, rel = gen["sequences"].cpu(), gen["logprobs"].cpu(), gen["relevance"].cpu()
        B, k, _ = seqs.shape
        texts = self.tokenizer.batch_decode(seqs.reshape(B * k, -1), skip_special_tokens=True)
        for b, ex in enumerate(chunk):
            n_real = min(len(ex["texts"]), n_context)
            keep = [j for j in range(k) if torch.isfinite(logprobs[b, j])]       # repeats were set to -inf
            # An empty answer is no answer: a question of an open-domain set always has one, so an
            # empty candidate (</s> first) is dropped whenever the n-best holds another.
            written = [j for j in keep if answer_text(texts[b * k + j])]
            keep = written or keep
            weights = logprobs[b, keep].softmax(dim=0)                           # [k'] within the n-best
            cand_rel = rel[b, keep, :n_real].numpy()                             # [k', n_real]
            pooled = (weights[:, None] * rel[b, keep, :n_real]).sum(0).numpy()
            yield ReaderOutput(candidates=[(answer_text(texts[b * k + j]), float(logprobs[b, j])) for j in keep],
                               relevance=pooled.astype(np.float32), candidate_relevance=cand_rel.astype(np.float32))


# Sentence punctuation a span candidate carries over from its passage piece ("▁1958." before a
# full stop): not part of an answer. Scores are unaffected (the metrics drop punctuation too).
_TRAILING = ".,;:。、，؛،।"


def answer_text(decoded: str) -> str:
    """A decoded candidate as shown: white space and trailing sentence punctuation trimmed
    (``"1958."`` -> ``"1958"``); a candidate that is only punctuation is kept as it is."""
    text = decoded.strip()
    return text.rstrip(_TRAILING).rstrip() or text


def _copy_targets(tokenizer, input_ids: torch.Tensor, labels: torch.Tensor, k: int) -> torch.Tensor:
    """Copy mask of k candidates per question (labels [B*k, T]) over the batch's passages [B, N, L]."""
    return copy_attention_targets(tokenizer, input_ids.repeat_interleave(k, dim=0), labels.cpu())


def _pointer_spans(input_ids: torch.Tensor, ranges, n_starts: int, tokenizer, start_id: int,
                   max_answer_len: int, looks: torch.Tensor) -> torch.Tensor:
    """The passage spans starting where the copy head looks (pointer-generator reading), of at
    most ``max_answer_len`` tokens (and :data:`reader.fid.model.POINTER_SPAN_TOKENS`)."""
    from reader.fid.model import POINTER_SPAN_TOKENS
    from reader.fid.spans import pointer_span_sequences

    return pointer_span_sequences(input_ids, ranges, looks.cpu(), n_starts, min(POINTER_SPAN_TOKENS, max_answer_len),
                                  start_id, tokenizer.eos_token_id, tokenizer.pad_token_id)


def _point_first(indexes: Sequence[Any], input_ids: torch.Tensor, n_starts: int, attention: torch.Tensor) -> None:
    """Let each question's span search start at the ``n_starts`` distinct tokens its copy head
    attends to most (``attention`` [B, N*L] at the first answer step)."""
    flat = input_ids.reshape(input_ids.shape[0], -1)                              # [B, N, L] -> [B, N*L]
    for b, index in enumerate(indexes):
        picked: list[int] = []
        for pos in attention[b].argsort(descending=True).tolist():
            token = int(flat[b, pos])
            if token not in picked and token in index.tokens:
                picked.append(token)
                if len(picked) == n_starts:
                    break
        index.point(picked)


def _batches(n: int, batch_size: int, progress: bool):
    starts = range(0, n, batch_size)
    if not progress:
        return starts
    from tqdm.auto import tqdm

    return tqdm(starts, desc="read", unit="batch", dynamic_ncols=True)
