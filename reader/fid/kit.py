"""A warm-started FiD trained from the span reader's kit (``xqa reader kit``), on any machine.

The kit (:mod:`reader.span.kit`) holds every training question's tokens, its paragraph, the
answer's token spans in it, 4 BM25 negatives, and the base encoder in the kit's own vocabulary.
A FiD row is cut from those ids exactly as the reader formats a passage
(:func:`reader.fid.data.row_from_ids`, with the marker ids the kit keeps); each question reads
``n_context`` passages: its paragraph, its negatives, and same-language paragraphs drawn at
random, in random order, so that the decoder learns to pick the answer out of several. The target
is the answer's tokens as the paragraph writes them, then ``</s>``.

The model is :func:`reader.fid.warm.build` over the kit's encoder (optionally first moved to the
shipped span reader's weights, ``encoder_init``): the decoder over the kit's vocabulary, the word
embeddings frozen. A run's ``best/`` (``kind: fid_kit_reader``) holds what training changed in
fp16 shards of at most 15 MiB — the encoder's tensors as their difference to the base, the
decoder's as they are — and ``vocab.npy``; :func:`to_reader` makes the FiD reader of it over the
converted encoder, with the full vocabulary.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

import xqa.encoders.delta as delta
from reader.fid.model import FiD, Search
from reader.fid.warm import WarmStart
from xqa.artifacts import save_config, save_shards
from xqa.errors import XqaError

READER_KIND = "fid_kit_reader"
SHARD_BYTES = 15 * 2 ** 20
# weight of the dev token loss in the checkpoint choice: under one dev question's F1 out of 300 for
# any loss below 30 nats, so it only orders checkpoints of (nearly) equal F1
LOSS_TIE_BREAK = 1e-4
WORD = "embeddings.word_embeddings.weight"
UNSEEN_MARGIN = 10.0   # nats below the lowest output bias of a kit token, for tokens outside the kit


def kit_encoder(kit, encoder_init: str | Path | None = None):
    """The kit's encoder as a ``BertModel`` (the kit's vocabulary), or with ``encoder_init`` (a
    packed span reader, ``xqa/models/span-reader``) that reader's encoder."""
    from transformers import BertConfig, BertModel

    cfg = dict(kit.config["encoder_config"])
    model = BertModel(BertConfig(**cfg), add_pooling_layer=False)
    state = kit.base_state()
    if encoder_init:
        state = _span_reader_state(Path(encoder_init), state, kit.config["base_sha256"])
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise XqaError(f"{kit.folder}: the encoder's tensors do not fit (missing {missing[:3]}, unexpected {unexpected[:3]})")
    return model


def _span_reader_state(folder: Path, base: dict[str, torch.Tensor], sha: str) -> dict[str, torch.Tensor]:
    """The packed span reader's encoder over the kit's base tensors (same values as the converted
    encoder's, on the kit's tokens)."""
    cfg, packed = delta.read(folder, "span_reader_delta", None)   # the base is checked here:
    if cfg.get("base_sha256") and cfg["base_sha256"] != sha:
        raise XqaError(f"{folder} was trained over another encoder file than the kit's")
    if int(cfg["encoder_config"]["num_hidden_layers"]) < sum(1 for k in base if k.endswith("attention.self.query.weight")):
        raise XqaError(f"{folder} has fewer layers than the kit's encoder")
    return delta.apply([n for n in base if n != WORD], packed, base, folder) | {WORD: base[WORD]}


class KitFiDTask:
    """``xqa.training``'s task for a FiD trained from a kit: token cross-entropy of the answer given
    ``n_context`` passages; validation by greedy decoding on the kit's dev questions (token F1). The
    run keeps the checkpoint of best ``select``: token F1, ties (F1 0 early in a run, say) broken by
    the lower answer token loss."""

    metric = "select"
    cpu_bf16 = True

    def __init__(self, kit, spec: WarmStart = WarmStart(), n_context: int = 10, encoder_init: str | None = None,
                 max_length: int | None = None, max_answer_len: int | None = None, dev_questions: int = 300,
                 seed: int = 0, copy_attention: float = 0.0, generator_share: float | None = None):
        cfg = kit.config
        if not cfg.get("markers"):
            raise XqaError(f"{kit.folder} keeps no FiD marker tokens: make it again with 'xqa reader kit'")
        self.kit, self.spec, self.n_context = kit, spec, n_context
        self.max_length = max_length or kit.settings.max_length
        self.max_answer_len = max_answer_len or kit.settings.max_answer_len
        self.markers = cfg["markers"]
        self.lang_tokens = [cfg["lang_tokens"].get(lang, []) for lang in cfg["langs"]]
        self.encoder_init = str(encoder_init) if encoder_init else None
        encoder = kit_encoder(kit, encoder_init)
        from reader.fid import warm

        self.model = FiD(warm.build(encoder, spec, start=kit.cls_id, eos=kit.sep_id, pad=kit.pad_id, seed=seed))
        self.model.t5.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
        # Guided cross-attention (reader.fid.task.copy_attention_loss): one head of the last decoder
        # layer is taught where each answer token is in the gold passage, which the kit knows exactly;
        # the reader then scores candidates with that pointer too (pointer-generator, generator_share).
        self.copy_attention = float(copy_attention)
        if self.copy_attention:
            self.model.copy_head = (self.model.decoder_layers - 1, 0)
            self.model.copy_weight = self.copy_attention
            self.model.generator_share = generator_share
        self.dev_questions = min(dev_questions, len(kit.arrays.get("dev.passage", [])))
        by_lang: dict[int, list[int]] = {}
        for p, lang in enumerate(kit.arrays["passages.lang"].tolist()):
            by_lang.setdefault(lang, []).append(p)
        self._by_lang = by_lang
        self._rng = random.Random(seed)
        self.eval_split, self.eval_indices = "dev", list(range(self.dev_questions))

    def validate_on(self, split: str, indices: list[int]) -> None:
        """Validate on these questions of ``split`` instead of the first dev questions (``--overfit``
        validates on the questions it trains on)."""
        self.eval_split, self.eval_indices = split, [int(i) for i in indices]

    # ------------------------------------------------------------------ rows

    def passages_for(self, split: str, i: int, rng: random.Random) -> tuple[list[int], int]:
        """The passages question ``i`` reads (its paragraph among negatives and same-language
        others, shuffled) and where its paragraph is among them."""
        a = self.kit.arrays
        _, p, _ = self.kit.question(split, i)
        chosen = [p] + [x for x in a[f"{split}.negatives"][i].tolist() if x >= 0 and x != p][: self.n_context - 1]
        same = self._by_lang.get(int(a[f"{split}.lang"][i]), [])
        pool = same if len(same) > len(chosen) else range(len(a["passages.lang"]))
        tries = 0
        while len(chosen) < self.n_context and tries < 20 * self.n_context:
            c = rng.choice(pool)
            tries += 1
            if c not in chosen:
                chosen.append(c)
        rng.shuffle(chosen)
        return chosen, chosen.index(p)

    def rows(self, split: str, i: int, passages: list[int]) -> list[list[int]]:
        q, _, _ = self.kit.question(split, i)
        lang = self.lang_tokens[int(self.kit.arrays[f"{split}.lang"][i])]
        out = []
        for p in passages:
            title, text = self.kit.passage(p)
            out.append(_row(self, q, lang, title, text))
        return out

    def target(self, split: str, i: int, rng: random.Random | None = None) -> list[int]:
        """The answer's tokens in its paragraph (the first occurrence, or one drawn by ``rng``), ``</s>``."""
        return self._target(split, i, rng)[0]

    def _target(self, split: str, i: int, rng: random.Random | None = None) -> tuple[list[int], int]:
        """:meth:`target` and where the answer starts among the paragraph's text tokens."""
        _, p, spans = self.kit.question(split, i)
        s, e = rng.choice(spans) if rng is not None else spans[0]
        _, text = self.kit.passage(p)
        return [int(t) for t in text[s: e + 1][: self.max_answer_len - 1]] + [self.kit.sep_id], s

    def text_start(self, split: str, i: int, p: int) -> int:
        """Where passage ``p``'s text starts in question ``i``'s row (:func:`reader.fid.data.row_from_ids`)."""
        q, _, _ = self.kit.question(split, i)
        lang = self.lang_tokens[int(self.kit.arrays[f"{split}.lang"][i])]
        title, _ = self.kit.passage(p)
        m = self.markers
        return 1 + len(m["question"]) + len(q) + len(m["lang"]) + len(lang) + len(m["title"]) + len(title) \
            + len(m["context"])

    def _batch(self, split: str, indices, rng: random.Random,
               draw_target: bool | None = None) -> dict[str, torch.Tensor]:
        """Rows, masks and labels of these questions; the target is one of the answer's spans drawn
        by ``rng`` (training) or its first (``draw_target`` False; default: training split only)."""
        draw_target = split == "train" if draw_target is None else draw_target
        rows, masks, labels, copies = [], [], [], []
        for i in indices:
            passages, at = self.passages_for(split, int(i), rng)
            r = self.rows(split, int(i), passages)
            r += [r[0]] * (self.n_context - len(r))      # a kit with too few paragraphs: repeat, masked
            masks.append([1] * len(passages) + [0] * (self.n_context - len(passages)))
            rows.append(r)
            target, s = self._target(split, int(i), rng if draw_target else None)
            labels.append(target)
            start = self.text_start(split, int(i), passages[at]) + s
            # the gold row's positions of the answer's tokens, one per target token (</s> has none)
            copies.append([(at, start + t) for t in range(len(target) - 1) if start + t < len(r[at]) - 1])
        L = max(len(x) for r in rows for x in r)
        B, N = len(rows), self.n_context
        ids = torch.full((B, N, L), self.kit.pad_id, dtype=torch.long)
        att = torch.zeros((B, N, L), dtype=torch.long)
        for b, r in enumerate(rows):
            for n, x in enumerate(r):
                ids[b, n, : len(x)] = torch.tensor(x)
                att[b, n, : len(x)] = 1
        T = max(len(x) for x in labels)
        lab = torch.full((B, T), -100, dtype=torch.long)
        for b, x in enumerate(labels):
            lab[b, : len(x)] = torch.tensor(x)
        batch = {"input_ids": ids, "attention_mask": att, "passage_mask": torch.tensor(masks), "labels": lab}
        if self.copy_attention:
            copy = torch.zeros((B, T, N * L))
            for b, steps in enumerate(copies):
                for t, (n, pos) in enumerate(steps):
                    copy[b, t, n * L + pos] = 1.0
            batch["copy_mask"] = copy
        return batch

    # ------------------------------------------------------------------ the task

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        return self._batch("train", indices, self._rng)

    def loss(self, model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Token cross-entropy (+ ``copy_attention`` x the guided cross-attention term)."""
        from reader.fid.task import copy_attention_loss

        guided = "copy_mask" in batch
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    passage_mask=batch["passage_mask"], labels=batch["labels"], output_attentions=guided)
        if not guided:
            return out.loss
        layer, head = self.model.copy_head
        return out.loss + self.copy_attention * copy_attention_loss(out.cross_attentions[layer], batch["copy_mask"],
                                                                    head)

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """Token EM/F1 of greedy answers to the validation questions (the first dev questions, or
        those of :meth:`validate_on`), each reading its paragraph among
        ``n_context`` (the same draw every time), against the answer's tokens; ``token_loss``: the
        answers' mean token cross-entropy there (comparable with and without guided attention)."""
        split, questions = self.eval_split, self.eval_indices
        if not questions:
            return {}
        fid = getattr(model, "module", model)
        device = next(fid.parameters()).device
        was_training = fid.training
        fid.eval()
        rng = random.Random(12345)
        em = f1 = loss = 0.0
        for start in range(0, len(questions), 16):
            idx = questions[start: start + 16]
            batch = {k: v.to(device) for k, v in self._batch(split, idx, rng, draw_target=False).items()}
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss += float(fid(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                  passage_mask=batch["passage_mask"], labels=batch["labels"]).loss) * len(idx)
                out = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                                   Search(beams=1, n_best=1, max_new_tokens=self.max_answer_len))
            for b, i in enumerate(idx):
                got = _answer_tokens(out["sequences"][b, 0].tolist(), self.kit)
                gold = [self.target(split, i)[:-1]]
                _, p, spans = self.kit.question(split, i)
                _, text = self.kit.passage(p)
                gold += [[int(t) for t in text[s: e + 1]] for s, e in spans[1:]]
                em += float(any(got == g for g in gold))
                f1 += max(_bag_f1(got, g) for g in gold)
        if was_training:
            fid.train()
        f1, loss = f1 / len(questions), loss / len(questions)
        return {"f1": f1, "em": em / len(questions), "token_loss": loss,
                "select": f1 - LOSS_TIE_BREAK * loss}

    def save(self, model: torch.nn.Module, folder) -> None:
        save_kit_reader(getattr(model, "module", model), self, folder)

    def enable_gradient_checkpointing(self) -> None:
        self.model.t5.gradient_checkpointing_enable()


def _row(task: KitFiDTask, q, lang, title, text) -> list[int]:
    from reader.fid.data import row_from_ids

    return row_from_ids(task.markers, task.kit.cls_id, task.kit.sep_id, q.tolist(), lang, title.tolist(),
                        text.tolist(), task.max_length)


def _answer_tokens(seq: list[int], kit) -> list[int]:
    """A generated sequence's answer: after the start token, up to ``</s>``, no padding."""
    out = []
    for t in seq[1:]:
        if t == kit.sep_id:
            break
        if t != kit.pad_id:
            out.append(t)
    return out


def _bag_f1(got: list[int], gold: list[int]) -> float:
    from collections import Counter

    common = sum((Counter(got) & Counter(gold)).values())
    if not common:
        return 0.0
    p, r = common / len(got), common / len(gold)
    return 2 * p * r / (p + r)


# ----------------------------------------------------------------------------- what a run keeps


def save_kit_reader(model: FiD, task: KitFiDTask, folder: str | Path) -> None:
    """The encoder's tensors as fp16 differences to the kit's base, the decoder's in fp16 (its
    output bias in fp32), in shards of at most 15 MiB; ``vocab.npy`` maps the kit's tokens."""
    from reader.fid import warm

    folder = Path(folder)
    kit = task.kit
    base = kit.base_state()
    tensors: dict[str, torch.Tensor] = {}
    for name, w in warm.unique_state(model.t5).items():
        w = w.detach().float().cpu()
        if name == f"encoder.{WORD}" or name.endswith("position_ids"):
            continue
        if name.startswith("encoder."):
            tensors[f"delta.{name}"] = (w - base[name[len("encoder."):]]).half().contiguous()
        elif w.shape and w.shape[0] == len(kit.arrays["vocab"]):
            tensors[f"vocab.{name}"] = w.contiguous()       # over the kit's tokens: widened by to_reader
        else:
            tensors[name] = w.half().contiguous()
    files = save_shards(tensors, folder, "fid", SHARD_BYTES)
    np.save(folder / "vocab.npy", kit.arrays["vocab"])
    cfg = kit.config
    save_config(folder, READER_KIND, {
        "warm_start": task.spec.to_dict(), "encoder_init": task.encoder_init, "base_sha256": cfg["base_sha256"],
        "copy_head": list(model.copy_head) if model.copy_head else None, "copy_weight": model.copy_weight,
        "generator_share": model.generator_share,
        "settings": {"max_length": task.max_length, "max_answer_len": task.max_answer_len,
                     "n_context": task.n_context},
        "encoder_config": {**cfg["encoder_config"], "vocab_size": cfg["base_vocab_size"], "pad_token_id": 1},
        "files": files})


def load_kit_reader(task: KitFiDTask, folder: str | Path) -> None:
    """Put a kit run's weights (``OUT`` or ``OUT/best``) into ``task.model`` (the kit's vocabulary), e.g.
    to validate two runs on the same dev draw."""
    folder, _, tensors = delta.read_run(folder, READER_KIND)
    base = task.kit.base_state()
    state = {}
    for name, w in tensors.items():
        if name.startswith("delta.encoder."):
            key = name[len("delta."):]
            state[key] = base[key[len("encoder."):]] + w.float()
        else:
            state[name.removeprefix("vocab.")] = w.float()
    missing, unexpected = task.model.t5.load_state_dict(state, strict=False)
    if unexpected:
        raise XqaError(f"{folder}: {unexpected[0]} is not a tensor of this task's model")


def is_kit_reader(folder: str | Path) -> bool:
    try:
        return json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("kind") == READER_KIND
    except (OSError, ValueError, AttributeError):
        return False


def to_reader(folder: str | Path, base: str | Path, out: str | Path, n_context: int | None = None) -> Path:
    """The FiD reader of a kit run (``OUT`` or ``OUT/best``) over the converted encoder ``base``: the
    encoder's differences added to the base, the decoder loaded, its output bias widened to the full
    vocabulary (a token the kit never held gets the lowest bias any of its tokens has, less
    :data:`UNSEEN_MARGIN`: it was never a target, so nothing taught the decoder when to write it)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from reader.fid.inference import FiDReader

    folder, cfg, tensors = delta.read_run(folder, READER_KIND, base)
    vocab = torch.from_numpy(np.load(folder / "vocab.npy").astype(np.int64))
    layers = int(cfg["encoder_config"]["num_hidden_layers"])
    encoder = BertModel(BertConfig.from_pretrained(str(base), num_hidden_layers=layers,
                                                   attention_probs_dropout_prob=0.0), add_pooling_layer=False)
    base_tensors = delta.base_state(base)
    state = {}
    for name in encoder.state_dict():
        if name in base_tensors:
            d = tensors.get(f"delta.encoder.{name}")
            state[name] = base_tensors[name].float() + (d.float() if d is not None else 0)
    missing, _ = encoder.load_state_dict(state, strict=False)
    if [k for k in missing if not k.endswith("position_ids")]:
        raise XqaError(f"{base}: not the encoder {folder} was trained over (it lacks {missing[0]})")
    tok = AutoTokenizer.from_pretrained(str(base))
    s = cfg["settings"]
    reader = FiDReader.warm_start(encoder, tok, WarmStart.from_dict(cfg["warm_start"]), base=str(base),
                                  max_length=s["max_length"], max_answer_len=s["max_answer_len"],
                                  n_context=n_context or s["n_context"])
    if cfg.get("copy_head"):
        reader.model.copy_head = tuple(cfg["copy_head"])
        reader.model.copy_weight = float(cfg.get("copy_weight", 1.0))
        reader.model.generator_share = cfg.get("generator_share")
    model = reader.model.t5
    own = model.state_dict()
    new: dict[str, torch.Tensor] = {}
    for name, w in tensors.items():
        if name.startswith("delta."):
            continue
        if name.startswith("vocab."):
            name = name[len("vocab."):]
            full = torch.full(own[name].shape, float(w.min()) - UNSEEN_MARGIN, dtype=torch.float32)
            full[vocab] = w.float()
            w = full
        if name not in own:
            raise XqaError(f"{folder}: {name} is not a tensor of the reader")
        new[name] = w.float()
    model.load_state_dict(new, strict=False)
    reader.base = str(base)
    return reader.save(out)
