"""The FiD training task for ``xqa.training.train`` (duck-typed ``TrainTask``).

The loop owns the optimisation; this class says what a batch is (``FiDCollator``),
what the loss is (token cross-entropy of the gold answer given all passages),
how to validate (greedy decoding on dev, EM/F1 by an injected scorer) and how
to save (a ``FiDReader`` artifact). The scorer is injected so the reader
package needs nothing of ``xqa`` beyond the leaf modules; ``xqa train reader``
passes the official MIA scorer.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from reader.fid.data import FiDCollator
from reader.fid.inference import FiDReader
from reader.scoring import Scorer, score_predictions, simple_score

def copy_attention_loss(cross_attention: torch.Tensor, copy_mask: torch.Tensor, head: int = 0) -> torch.Tensor:
    """Guided cross-attention: -log of the attention mass one head puts on the answer in the passages.

    ``cross_attention`` [B, H, T, N*L] is one decoder layer's, ``copy_mask``
    [B, T, N*L] from :func:`reader.fid.data.copy_attention_targets`. Mean over the answer tokens
    that have a target; 0 when none has. Supervising one head of the layer whose output
    feeds the LM head tells the decoder *where* the answer is from the first step, instead of
    leaving it to find that out through the token loss alone: trained without this term, no
    head of the tiny reader put more than 4 % of its attention on the answer; with it, the
    supervised head put 59 % there after the same 1,600 steps.
    """
    mass = (cross_attention[:, head].float() * copy_mask).sum(-1)      # [B, T]
    valid = copy_mask.sum(-1) > 0
    if not bool(valid.any()):
        return cross_attention.sum() * 0.0     # keeps the graph (DDP) with a zero gradient
    return -mass[valid].clamp_min(1e-6).log().mean()


class FiDTask:
    """Plug a :class:`FiDReader` into the shared training loop."""

    metric = "f1"

    def __init__(self, reader: FiDReader, collator: FiDCollator,
                 dev_examples: Sequence[Mapping[str, Any]] = (), scorer: Scorer = simple_score,
                 eval_batch_size: int = 16, eval_beams: int = 1, copy_attention: float = 0.0,
                 eval_span_beams: int = 0):
        self.reader, self.collator = reader, collator
        self.copy_attention, self.eval_span_beams = copy_attention, eval_span_beams
        if copy_attention and not collator.copy_targets:
            raise ValueError("copy_attention needs a collator made with copy_targets=True")
        if copy_attention and reader.model.copy_head is None:
            # head 0 of the last decoder layer, whose output feeds the LM head; saved with the artifact
            reader.model.copy_head = (reader.model.decoder_layers - 1, 0)
        if copy_attention:
            # Candidates are scored with the pointer weighted as in the loss: a candidate's score is
            # then minus the terms its training loss averages (token NLL + W x copy term, summed over
            # its tokens). Dev fusion F1 of the
            # embedded reader (trained with W=2) scored with 0.5, 1, 2, 3: 0.259, 0.274, 0.281, 0.283.
            reader.model.copy_weight = float(copy_attention)
        self.dev_examples, self.scorer = list(dev_examples), scorer
        self.eval_batch_size, self.eval_beams = eval_batch_size, eval_beams

    @property
    def model(self) -> torch.nn.Module:
        return self.reader.model

    def collate(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        return self.collator(examples)

    def length(self, example: Mapping[str, Any]) -> int:
        """Characters of the example's longest encoder row (for length-grouped batches)."""
        q = len(example["question"]) + len(example.get("lang", ""))
        rows = list(zip(example["titles"], example["texts"]))[: self.collator.n_context]
        return q + max((len(t) + len(x) for t, x in rows), default=0)

    def loss(self, model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean token cross-entropy (+ the guided cross-attention term); ``model`` is FiD or its DDP wrapper."""
        guided = bool(self.copy_attention) and "copy_mask" in batch
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    passage_mask=batch["passage_mask"], labels=batch["labels"],
                    decoder_input_ids=batch.get("decoder_input_ids"), output_attentions=guided)
        if not guided:
            return out.loss
        layer, head = self.reader.model.copy_head
        return out.loss + self.copy_attention * copy_attention_loss(out.cross_attentions[layer], batch["copy_mask"],
                                                                    head)

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """EM/F1 of greedy (or ``eval_beams``) answers on the dev examples; {} without dev.
        With ``eval_span_beams`` the dev questions are read as the pipeline reads them (4 beams
        plus that many span candidates, the pointer's when the reader has a copy head)."""
        if not self.dev_examples:
            return {}
        self.reader.device = next(self.reader.model.parameters()).device
        beams = max(self.eval_beams, 4) if self.eval_span_beams else self.eval_beams
        outputs = self.reader.read_examples(self.dev_examples, n_context=self.collator.n_context,
                                            beams=beams, n_best=1 if beams == 1 else beams,
                                            batch_size=self.eval_batch_size, span_beams=self.eval_span_beams)
        return score_predictions(self.dev_examples, [o.text for o in outputs], self.scorer)

    def save(self, model: torch.nn.Module, folder: Path) -> None:
        self.reader.n_context = self.collator.n_context
        self.reader.write_to(folder)

    def enable_gradient_checkpointing(self) -> None:
        self.reader.model.t5.gradient_checkpointing_enable()
