"""A FiD backbone warm-started from an encoder-only checkpoint (BERT2BERT).

Where no pretrained multilingual seq2seq model can be had, both halves of the encoder–decoder
start from one encoder-only checkpoint (Rothe, Narayan & Severyn, "Leveraging Pre-trained
Checkpoints for Sequence Generation Tasks", TACL 2020): the encoder is the checkpoint; each
decoder layer's self-attention and feed-forward weights are a copy of one of its layers (or, with
``share``, the very same weights, every layer), its cross-attention is new; the decoder's word
embeddings and its output layer are the encoder's word-embedding matrix. The model is the stock
``EncoderDecoderModel`` (``BertModel`` encoder, ``BertLMHeadModel`` decoder), which
:class:`reader.fid.model.FiD` drives as it drives (m)T5.

The decoder starts with the tokenizer's ``<s>`` (CLS) and ends answers with ``</s>`` (SEP).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

MODEL_TYPE = "encoder-decoder"


@dataclass(frozen=True)
class WarmStart:
    """How the decoder is made from the encoder.

    ``decoder_layers``: how many (0: as many as the encoder); their self-attention and
    feed-forward start as copies of encoder layers spread evenly over its depth (first and
    last included). ``share``: the decoder's self-attention and feed-forward ARE the encoder's
    (same tensors; ``decoder_layers`` must then be 0 or the encoder's depth)."""

    decoder_layers: int = 4
    share: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "WarmStart":
        d = dict(d or {})
        return cls(decoder_layers=int(d.get("decoder_layers", 4)), share=bool(d.get("share", False)))


def spread(n_layers: int, k: int) -> list[int]:
    """``k`` layer indexes of ``n_layers`` spread evenly, first and last included."""
    if k <= 0 or k >= n_layers:
        return list(range(n_layers))
    if k == 1:
        return [n_layers - 1]
    return [round(i * (n_layers - 1) / (k - 1)) for i in range(k)]


def decoder_config(encoder_config, layers: int):
    """The decoder's ``BertConfig``: the encoder's, made causal with cross-attention."""
    from transformers import BertConfig

    d = {k: v for k, v in encoder_config.to_dict().items() if not k.startswith("_")}
    d.update(is_decoder=True, add_cross_attention=True, num_hidden_layers=layers, architectures=None)
    return BertConfig(**d)


def tie(model, spec: WarmStart) -> None:
    """Make the decoder use the encoder's word embeddings (input and output) and, with
    ``spec.share``, its layers' self-attention and feed-forward modules."""
    emb = model.encoder.embeddings.word_embeddings
    model.decoder.bert.embeddings.word_embeddings = emb
    model.decoder.cls.predictions.decoder.weight = emb.weight
    if spec.share:
        for enc_layer, dec_layer in zip(model.encoder.encoder.layer, model.decoder.bert.encoder.layer):
            dec_layer.attention = enc_layer.attention
            dec_layer.intermediate = enc_layer.intermediate
            dec_layer.output = enc_layer.output


def set_token_ids(model, start: int, eos: int, pad: int) -> None:
    """The decoder's start, end and padding tokens, where generation and the loss look for them."""
    for cfg in (model.config, model.generation_config):
        cfg.decoder_start_token_id, cfg.eos_token_id, cfg.pad_token_id = start, eos, pad
    model.config.decoder.bos_token_id = start


def build(encoder, spec: WarmStart, start: int, eos: int, pad: int, seed: int | None = 0):
    """An ``EncoderDecoderModel`` around ``encoder`` (a ``BertModel`` with its trained weights):
    the decoder warm-started from it as ``spec`` says."""
    from transformers import BertLMHeadModel, EncoderDecoderModel

    n = encoder.config.num_hidden_layers
    if spec.share and spec.decoder_layers not in (0, n):
        raise ValueError(f"a decoder sharing the encoder's layers has its {n} layers, not {spec.decoder_layers}")
    picks = spread(n, spec.decoder_layers)
    if seed is not None:
        torch.manual_seed(seed)
    decoder = BertLMHeadModel(decoder_config(encoder.config, len(picks)))
    encoder.pooler = None
    own = decoder.state_dict()
    copied = {}
    for j, i in enumerate(picks):
        for name, w in encoder.encoder.layer[i].state_dict().items():
            copied[f"bert.encoder.layer.{j}.{name}"] = w
    for name, w in encoder.embeddings.state_dict().items():
        copied[f"bert.embeddings.{name}"] = w
    missing = [k for k in copied if k not in own]
    if missing:
        raise ValueError(f"decoder has no {missing[0]}")
    decoder.load_state_dict(copied, strict=False)
    model = EncoderDecoderModel(encoder=encoder, decoder=decoder)
    set_token_ids(model, start, eos, pad)
    tie(model, spec)
    return model


def from_config(config: dict[str, Any], spec: WarmStart):
    """An ``EncoderDecoderModel`` of a saved config (weights to be loaded), tied as ``spec`` says."""
    from transformers import EncoderDecoderConfig, EncoderDecoderModel

    model = EncoderDecoderModel(config=EncoderDecoderConfig.from_dict(config))
    model.encoder.pooler = None
    set_token_ids(model, config["decoder_start_token_id"], config["eos_token_id"], config["pad_token_id"])
    tie(model, spec)
    return model


def unique_state(model) -> dict[str, torch.Tensor]:
    """The model's tensors, each stored once (a tied or shared tensor under its first name)."""
    seen: set[int] = set()
    out = {}
    for name, t in model.state_dict().items():
        key = t.data_ptr()
        if key in seen:
            continue
        seen.add(key)
        out[name] = t.contiguous()
    return out
