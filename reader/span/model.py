"""The span reader's network: a pretrained encoder, a start/end head and a relevance head.

The extractive reader of DPR (Karpukhin et al. 2020) as Ma et al. 2022 ("Another Look at DPR", §2.2) train it: each (question, passage) window is
encoded alone as ``<s> question </s> title </s> text </s>``; a linear layer maps every token
to a start and an end score, and another maps the first token (``<s>``, BERT's [CLS]) to the
window's relevance score r. The encoder is any Hugging Face encoder; the real-text default
is multilingual-e5-small converted by ``xqa convert e5`` (a ``BertModel``), optionally cut
to its first ``layers`` layers (half the layers, half the reading time).
"""
from __future__ import annotations

import torch
from torch import nn

from xqa.errors import XqaError


class SpanHeads(nn.Module):
    """The two heads alone: what reading needs besides the encoder's hidden states (all of it
    where an int8 runtime computes those)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.span_head = nn.Linear(hidden, 2)   # start, end
        self.rank_head = nn.Linear(hidden, 1)   # relevance from the first token
        for head in (self.span_head, self.rank_head):
            nn.init.normal_(head.weight, std=0.02)
            nn.init.zeros_(head.bias)

    def heads(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Start and end logits ``[n, L]`` and the relevance ``[n]`` from the encoder's hidden states."""
        logits = self.span_head(hidden).float()                                                      # [n, L, 2]
        rel = self.rank_head(hidden[:, 0]).float().squeeze(-1)                                        # [n]
        return logits[..., 0], logits[..., 1], rel

    def load_heads(self, state: dict[str, torch.Tensor]) -> None:
        """The heads' weights from ``heads.safetensors``' ``span_head.*`` / ``rank_head.*``."""
        for name in ("span_head", "rank_head"):
            getattr(self, name).load_state_dict({k[len(name) + 1:]: v for k, v in state.items()
                                                 if k.startswith(name + ".")})


class SpanModel(SpanHeads):
    """``forward(input_ids [n, L], attention_mask [n, L]) -> (start [n, L], end [n, L], rel [n])``."""

    def __init__(self, encoder: nn.Module):
        super().__init__(encoder.config.hidden_size)
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # [n, L, h]
        return self.heads(hidden)

    def freeze_embeddings(self) -> None:
        """Keep the word-embedding matrix fixed (96M of multilingual-e5-small's 118M parameters):
        a third of the memory and optimizer work on CPU, and the shipped weights need none of it."""
        self.encoder.get_input_embeddings().weight.requires_grad_(False)


def load_encoder(folder: str, layers: int = 0, dropout: float | None = None) -> nn.Module:
    """A pretrained encoder from ``folder`` (BERT: without the pooler it never uses), keeping its
    first ``layers`` layers when ``layers`` > 0. Attention dropout is 0 whatever the checkpoint
    says: with dropout PyTorch's fused attention falls back to the unfused path (2-4x slower)."""
    from transformers import AutoConfig, AutoModel

    cfg = AutoConfig.from_pretrained(folder)
    kwargs = {"attention_probs_dropout_prob": 0.0}
    if dropout is not None:
        kwargs["hidden_dropout_prob"] = dropout
    if layers:
        if layers > cfg.num_hidden_layers:
            raise XqaError(f"--layers {layers}: {folder} has {cfg.num_hidden_layers} layers; keep at most "
                           f"{cfg.num_hidden_layers} (0: all)")
        kwargs["num_hidden_layers"] = layers
    cfg.update(kwargs)
    extra = {"add_pooling_layer": False} if cfg.model_type == "bert" else {}
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()   # the layers left out are reported as unexpected weights
    try:
        return AutoModel.from_pretrained(folder, config=cfg, **extra)
    finally:
        logging.set_verbosity(level)


def build_encoder(config: dict, init: bool = True) -> nn.Module:
    """An encoder of the given Hugging Face config: random weights, or with ``init=False`` left
    as allocated (faster, for a caller that loads every weight next: ``load_state_dict``)."""
    import contextlib

    from transformers import AutoConfig, AutoModel

    cfg = AutoConfig.for_model(**config)
    extra = {"add_pooling_layer": False} if cfg.model_type == "bert" else {}
    if init:
        skip = contextlib.nullcontext()
    else:
        from transformers.initialization import no_init_weights

        skip = no_init_weights()
    with skip:
        return AutoModel.from_config(cfg, **extra)
