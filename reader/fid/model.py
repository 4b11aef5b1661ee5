"""Fusion-in-Decoder on (m)T5, or on an encoder-decoder warm-started from an encoder-only
checkpoint (``EncoderDecoderModel``, :mod:`reader.fid.warm`), built from the stock Hugging Face model.

Nothing inside transformers is replaced. The encoder of a
``MT5ForConditionalGeneration`` (or ``T5ForConditionalGeneration``, or the ``BertModel``
of a warm-started one) runs on
[B*N, L] passage rows; its ``last_hidden_state`` is reshaped to [B, N*L] and
handed to the same model as ``encoder_outputs`` (with the attention mask
reshaped alike), for training, for ``generate`` and for re-scoring. The
decoder's cross-attention is read through ``output_attentions=True``; only the
decoder stack is switched to the eager attention kernel (through the public
``set_attn_implementation``), because SDPA does not return attention weights.
The encoder keeps the fast default kernel.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput

# Architectures of the sizes ``xqa train reader --size`` can build (random weights).
# ``small`` is mt5-small's shape, ``base`` mt5-base's; ``tiny`` is the generated world's.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"d_model": 128, "d_kv": 32, "d_ff": 384, "num_layers": 2, "num_decoder_layers": 2,
             "num_heads": 4, "dropout_rate": 0.0, "relative_attention_num_buckets": 32,
             "relative_attention_max_distance": 128, "feed_forward_proj": "gated-gelu"},
    "small": {"d_model": 512, "d_kv": 64, "d_ff": 1024, "num_layers": 8, "num_decoder_layers": 8,
              "num_heads": 6, "dropout_rate": 0.1, "relative_attention_num_buckets": 32,
              "relative_attention_max_distance": 128, "feed_forward_proj": "gated-gelu"},
    "base": {"d_model": 768, "d_kv": 64, "d_ff": 2048, "num_layers": 12, "num_decoder_layers": 12,
             "num_heads": 12, "dropout_rate": 0.1, "relative_attention_num_buckets": 32,
             "relative_attention_max_distance": 128, "feed_forward_proj": "gated-gelu"},
}

SUPPORTED_MODEL_TYPES = ("mt5", "t5")


# Added to the copy head's attention mass before the log in the pointer score (FiD.score):
# what a token found in no passage costs, log(1e-4) = -9.2 nats.
POINTER_FLOOR = 1e-4
# Pointer-generator reading: tokens per span read from each place the pointer looks.
POINTER_SPAN_TOKENS = 8


def check_generator_share(value: float | None) -> float | None:
    """``value`` as the generator's share λ of a pointer-generator mixture, in (0, 1]; None or 0: off."""
    if value is None or value == 0:
        return None
    value = float(value)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"generator_share must be in (0, 1] (0 or None: off), got {value}")
    return value


@dataclass(frozen=True)
class Search:
    """How :meth:`FiD.generate` searches: ``beams`` (1: greedy), the ``n_best`` kept, the longest
    answer, and ``span_beams`` candidates of a second search restricted to passage spans."""

    beams: int = 4
    n_best: int = 4
    max_new_tokens: int = 24
    span_beams: int = 0


@dataclass(frozen=True)
class DecoderPrompt:
    """What the decoder reads before the answer (``reader.fid.data.encode_prompts``): ``ids`` and
    ``mask`` [B, P], left-padded, ``mask`` 1 on real tokens."""

    ids: torch.Tensor
    mask: torch.Tensor

    def repeat(self, k: int) -> "DecoderPrompt":
        """Each row ``k`` times in a row ([B, P] -> [B*k, P]), as the candidates are laid out."""
        return DecoderPrompt(self.ids.repeat_interleave(k, dim=0), self.mask.repeat_interleave(k, dim=0))

    def every(self, k: int) -> "DecoderPrompt":
        """Every ``k``-th row: one per question of rows laid out as by :meth:`repeat`."""
        return DecoderPrompt(self.ids[::k], self.mask[::k])


@dataclass(frozen=True)
class SpanHooks:
    """What the reader knows about the passages, as the callbacks :meth:`FiD.generate` calls.

    ``allowed_tokens``: a Hugging Face ``prefix_allowed_tokens_fn`` for the span-restricted
    search (:func:`reader.fid.spans.allowed_tokens_fn`); with a copy head, ``point_first``
    is called with :meth:`FiD.pointer`'s attention [B, N*L] before that search (the reader
    starts the spans where the pointer looks), ``copy_targets(labels [S, T-1], k)`` gives the
    candidates' copy mask for :meth:`FiD.score`, and ``pointer_spans`` maps the same
    attention to more candidates [B, k', T] (the spans that begin where the pointer looks,
    :func:`reader.fid.spans.pointer_span_sequences`)."""

    allowed_tokens: Callable[[int, torch.Tensor], list[int]] | None = None
    point_first: Callable[[torch.Tensor], None] | None = None
    copy_targets: Callable[[torch.Tensor, int], torch.Tensor] | None = None
    pointer_spans: Callable[[torch.Tensor], torch.Tensor] | None = None

# Initial bias of the "previous token" and "next token" heads (see ``locality_prior``).
LOCALITY_BIAS = 8.0


def locality_prior(model: torch.nn.Module, bias: float = LOCALITY_BIAS) -> list[int]:
    """Start two encoder heads as previous-token and next-token heads; returns the buckets set.

    In T5 the only position signal is one learned scalar per (bucket, head) in the
    first layer's relative attention bias. From a zero start, Adam moves each by
    about the learning rate per step, so a head needs thousands of steps before it
    can look at its neighbour (bias ~log(passage length)), and until then no
    "copy the words after X" circuit can form: a from-scratch tiny model learns
    answer types and never copies. On ``xqa diagnose copy`` (copy the 3 tokens after
    a marker among 80 random ones) the tiny model stays at chance for 1,000 steps
    without the prior and reaches 0.995 exact match with it. Setting the
    relative-position-bias entries for offsets -1 (head 0) and +1 (head 1) of the
    encoder's first layer is an initialisation only: the weights stay ordinary
    trainable parameters of the stock model, and pretrained checkpoints are
    never touched.
    """
    from transformers.models.mt5.modeling_mt5 import MT5Attention

    att = model.encoder.block[0].layer[0].SelfAttention
    if not getattr(att, "has_relative_attention_bias", False) or att.n_heads < 2:
        return []
    buckets = MT5Attention._relative_position_bucket(
        torch.tensor([-1, 1]), bidirectional=True, num_buckets=att.relative_attention_num_buckets,
        max_distance=att.relative_attention_max_distance).tolist()
    with torch.no_grad():
        att.relative_attention_bias.weight[buckets[0], 0] = bias   # head 0 looks one token back
        att.relative_attention_bias.weight[buckets[1], 1] = bias   # head 1 looks one token ahead
    return buckets


def build_t5(size: str | dict[str, Any], vocab_size: int, seed: int | None = 0, locality: bool = True):
    """A randomly initialised ``MT5ForConditionalGeneration`` of a named size (or explicit kwargs).

    ``locality`` applies :func:`locality_prior` (on by default: without it a small
    model trained from scratch on a CPU budget does not learn to copy).
    """
    from transformers import MT5Config, MT5ForConditionalGeneration

    kwargs = dict(SIZES[size]) if isinstance(size, str) else dict(size)
    config = MT5Config(vocab_size=vocab_size, pad_token_id=0, eos_token_id=1,
                       decoder_start_token_id=0, **kwargs)
    if seed is not None:
        torch.manual_seed(seed)
    model = MT5ForConditionalGeneration(config)
    # transformers 5 always ties lm_head to the input embedding and, unlike T5, does not rescale
    # the decoder output by d_model**-0.5; with the default N(0, 1) embedding the initial logits
    # have std ~sqrt(d_model) and training starts far above log(vocab). Initialise the shared
    # embedding at std d_model**-0.5 instead (the RMS norms make the encoder insensitive to it).
    if model.lm_head.weight is model.shared.weight:
        torch.nn.init.normal_(model.shared.weight, std=config.d_model ** -0.5)
    if locality:
        locality_prior(model)
    return model


ENCODER_TYPES = ("bert", "xlm-roberta", "roberta", "luke", "distilbert", "electra")


def load_t5(name_or_path: str):
    """Load a T5/mT5 seq2seq checkpoint (hub name or local folder); no remote code."""
    from transformers import (
        AutoConfig,
        MT5ForConditionalGeneration,
        T5ForConditionalGeneration,
    )

    config = AutoConfig.from_pretrained(name_or_path)
    if config.model_type not in SUPPORTED_MODEL_TYPES:
        from xqa.errors import XqaError

        raise XqaError(f"{name_or_path}: not a reader: a Hugging Face {config.model_type!r} model "
                       f"{'(an encoder: xqa convert e5 writes one) ' if config.model_type in ENCODER_TYPES else ''}"
                       f"where a reader goes: a span reader (xqa train reader --family span, or the build's "
                       f"reader/), a FiD reader, or a T5/mT5 checkpoint")
    cls = MT5ForConditionalGeneration if config.model_type == "mt5" else T5ForConditionalGeneration
    return cls.from_pretrained(name_or_path)


class FiD(torch.nn.Module):
    """Fusion-in-Decoder around a T5/mT5 seq2seq model ``t5`` (kept whole, as ``self.t5``).

    Inputs everywhere: ``input_ids``/``attention_mask`` [B, N, L] (N passages per
    question, L tokens per passage) and ``passage_mask`` [B, N] (0 for padding rows).
    """

    def __init__(self, t5: torch.nn.Module, copy_head: Sequence[int] | None = None,
                 copy_weight: float = 1.0, generator_share: float | None = None):
        super().__init__()
        self.t5 = t5
        # cross-attention weights for relevance: every model inside the decoder (a warm-started
        # one's BertModel too: some transformers releases, 5.17, leave it on SDPA otherwise)
        for module in self.t5.decoder.modules():
            if isinstance(module, PreTrainedModel):
                module.set_attn_implementation("eager")
        # (decoder layer, head) trained by guided cross-attention to point at the answer in the
        # passages (``xqa train reader --copy-attention``), or None. When set, candidates are
        # scored with the pointer too (see ``score``) and the span search starts where it points.
        self.copy_head = tuple(int(x) for x in copy_head) if copy_head is not None else None
        self.copy_weight = float(copy_weight)
        # Pointer-generator scoring (``xqa train reader --generator-share``): with a copy head, each
        # answer token's probability is generator_share x the generator's + (1 - generator_share) x
        # the pointer's mass on that token in the passages, and the span search also reads the spans
        # starting where the pointer looks (see ``score`` and ``generate``). None: the product of the
        # two (``copy_weight``).
        self.generator_share = check_generator_share(generator_share)

    def pointer(self, hidden: torch.Tensor, mask: torch.Tensor, prompt: DecoderPrompt | None = None) -> torch.Tensor:
        """The copy head's attention at the first answer step: [B, N*L] over the encoder positions.

        That step reads the start token, or the last token of the decoder ``prompt`` of a
        reader trained with one."""
        layer, head = self.copy_head
        if prompt is None:
            ids = torch.full((hidden.shape[0], 1), self.config.decoder_start_token_id,
                             dtype=torch.long, device=hidden.device)
            prompt = DecoderPrompt(ids, torch.ones_like(ids))
        out = self._decode(hidden, mask, prompt.ids, prompt.mask, output_attentions=True)
        return out.cross_attentions[layer][:, head, -1].float()

    def _decode(self, hidden: torch.Tensor, mask: torch.Tensor, input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None, past_key_values=None, use_cache: bool = False,
                output_attentions: bool = False):
        """One decoder pass over encoder states ``hidden`` [B, N*L, d] (``mask`` [B, N*L]): an
        output with ``logits``, ``cross_attentions`` and ``past_key_values``. A warm-started
        model's decoder is called directly, as its ``EncoderDecoderModel`` would call it: through
        the wrapper, some transformers releases (5.17) return no cross-attention weights."""
        with _cache_argument():
            if not self.warm:
                return self.t5(encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=mask,
                               decoder_input_ids=input_ids, decoder_attention_mask=attention_mask,
                               past_key_values=past_key_values, output_attentions=output_attentions,
                               use_cache=use_cache)
            proj = getattr(self.t5, "enc_to_dec_proj", None)     # only where the two widths differ
            return self.t5.decoder(input_ids=input_ids, attention_mask=attention_mask,
                                   encoder_hidden_states=hidden if proj is None else proj(hidden),
                                   encoder_attention_mask=mask, past_key_values=past_key_values,
                                   output_attentions=output_attentions, use_cache=use_cache, return_dict=True)

    @property
    def config(self):
        return self.t5.config

    @property
    def warm(self) -> bool:
        """Whether the model is an encoder-decoder warm-started from an encoder (:mod:`reader.fid.warm`)."""
        return self.t5.config.model_type == "encoder-decoder"

    @property
    def decoder_layers(self) -> int:
        """The decoder's depth."""
        cfg = self.t5.config
        return cfg.decoder.num_hidden_layers if self.warm else cfg.num_decoder_layers

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               passage_mask: torch.Tensor | None = None) -> tuple[BaseModelOutput, torch.Tensor]:
        """Encode each passage alone; concatenate for the decoder.

        Returns ``encoder_outputs`` with ``last_hidden_state`` [B, N*L, d] and the
        decoder's mask [B, N*L] (padding tokens and padding passages are 0).
        """
        B, N, L = input_ids.shape
        out = self.t5.encoder(input_ids=input_ids.reshape(B * N, L),           # [B, N, L] -> [B*N, L]
                              attention_mask=attention_mask.reshape(B * N, L))
        hidden = out.last_hidden_state.reshape(B, N * L, -1)                   # [B*N, L, d] -> [B, N*L, d]
        mask = attention_mask if passage_mask is None else attention_mask * passage_mask[:, :, None].to(attention_mask.dtype)
        return BaseModelOutput(last_hidden_state=hidden), mask.reshape(B, N * L)  # [B, N, L] -> [B, N*L]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                passage_mask: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                decoder_input_ids: torch.Tensor | None = None,
                output_attentions: bool = False) -> Seq2SeqLMOutput:
        """Teacher-forced pass; ``.loss`` is the mean token cross-entropy when ``labels`` [B, T] are given.

        With ``labels`` the LM head runs on the labelled positions only (``.logits`` is then None):
        the loss is the stock model's, without the vocabulary projection of every prompt and
        padding position, which a decoder prompt makes most of them (a quarter of the embedded
        reader's training step; far more with mT5's 250k vocabulary)."""
        enc, mask = self.encode(input_ids, attention_mask, passage_mask)
        if labels is None:
            out = self._decode(enc.last_hidden_state, mask, decoder_input_ids, output_attentions=output_attentions)
            return Seq2SeqLMOutput(logits=out.logits, decoder_attentions=out.decoder_attentions if not self.warm
                                   else out.attentions, cross_attentions=out.cross_attentions,
                                   encoder_last_hidden_state=enc.last_hidden_state)
        if decoder_input_ids is None:   # as the stock model does: the labels shifted right
            decoder_input_ids = self.t5.prepare_decoder_input_ids_from_labels(labels=labels)
        decoder = self.t5.decoder.bert if self.warm else self.t5.decoder   # the stack without its LM head
        dec = decoder(input_ids=decoder_input_ids, encoder_hidden_states=enc.last_hidden_state,
                      encoder_attention_mask=mask, output_attentions=output_attentions,
                      use_cache=False, return_dict=True)
        keep = labels != -100                                                   # [B, T]
        logits = self._lm_logits(dec.last_hidden_state[keep])                   # [n labelled, V]
        loss = torch.nn.functional.cross_entropy(logits.float(), labels[keep])
        return Seq2SeqLMOutput(loss=loss, decoder_attentions=dec.attentions, cross_attentions=dec.cross_attentions,
                               encoder_last_hidden_state=enc.last_hidden_state)

    def _lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Decoder states -> vocabulary logits as the stock model computes them: T5 v1.0 scales
        the states first (``scale_decoder_outputs``), mT5 and T5 v1.1 do not (tested for both); a
        warm-started BERT decoder applies its LM head (transform, tied output layer, bias)."""
        from transformers import T5ForConditionalGeneration   # MT5ForConditionalGeneration is no subclass

        if self.warm:
            return self.t5.decoder.cls(hidden)
        if isinstance(self.t5, T5ForConditionalGeneration) and getattr(self.config, "scale_decoder_outputs", False):
            hidden = hidden * self.config.d_model ** -0.5
        return self.t5.lm_head(hidden)

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 passage_mask: torch.Tensor | None = None, search: Search = Search(),
                 hooks: SpanHooks = SpanHooks(), prompt: DecoderPrompt | None = None) -> dict[str, torch.Tensor]:
        """Greedy (``search.beams=1``) or beam search; every candidate re-scored exactly.

        With ``search.span_beams`` > 0 and ``hooks.allowed_tokens``, a second, constrained
        beam search adds its ``span_beams`` best candidates to the free ones (same encoder
        pass); a candidate both searches found is kept once (the copy gets log-probability
        ``-inf``). With a ``copy_head`` the other ``hooks`` (see :class:`SpanHooks`) start
        that search where the pointer looks, add the spans there, and score with the pointer.

        With a decoder ``prompt`` every search and score continues it, and
        ``hooks.allowed_tokens`` must skip its P tokens, not 1; the prompt is cut from the
        sequences returned.

        Returns ``sequences`` [B, k, T] (decoder-start token first), ``logprobs``
        [B, k] (sum of token log-probabilities up to and including ``</s>``, best
        first) and ``relevance`` [B, k, N] (each candidate's cross-attention mass
        per passage, see :meth:`score`), with ``k = min(n_best, beams)`` plus
        the span candidates when the constrained search runs.
        """
        B, N, _ = input_ids.shape
        enc, mask = self.encode(input_ids, attention_mask, passage_mask)
        hidden = enc.last_hidden_state                                                   # [B, N*L, d]
        k = max(1, min(search.n_best, search.beams))
        runs = [self._search(hidden, mask, search.beams, k, search.max_new_tokens, None, prompt)]   # [B, k, T]
        if search.span_beams > 0 and hooks.allowed_tokens is not None:
            looks = None
            if self.copy_head is not None and (hooks.point_first is not None or hooks.pointer_spans is not None):
                looks = self.pointer(hidden, mask, prompt)
            if looks is not None and hooks.point_first is not None:
                hooks.point_first(looks)
            runs.append(self._search(hidden, mask, search.span_beams, search.span_beams, search.max_new_tokens,
                                     hooks.allowed_tokens, prompt))
            if looks is not None and hooks.pointer_spans is not None:
                runs.append(hooks.pointer_spans(looks).to(hidden.device))
        T = max(r.shape[-1] for r in runs)
        pad = self.config.pad_token_id
        seqs = torch.cat([torch.nn.functional.pad(r, (0, T - r.shape[-1]), value=pad) for r in runs], dim=1)
        k = seqs.shape[1]
        seqs = seqs.reshape(B * k, T)                                                     # [B, k, T] -> [B*k, T]
        hidden = hidden.repeat_interleave(k, dim=0)                                       # [B*k, N*L, d]
        copy_mask = (hooks.copy_targets(seqs[:, 1:], k)
                     if self.copy_head is not None and hooks.copy_targets else None)
        logprobs, relevance = self.score(hidden, mask.repeat_interleave(k, dim=0), seqs, N, copy_mask,
                                         prompt.repeat(k) if prompt is not None else None, repeats=k)
        logprobs, relevance = logprobs.view(B, k), relevance.view(B, k, N)
        if len(runs) > 1:
            logprobs = _drop_repeats(seqs.view(B, k, T), logprobs, pad, self.config.eos_token_id)
        order = logprobs.argsort(dim=1, descending=True)
        seqs = seqs.view(B, k, -1).gather(1, order[:, :, None].expand(-1, -1, seqs.shape[-1]))
        return {"sequences": seqs, "logprobs": logprobs.gather(1, order),
                "relevance": relevance.gather(1, order[:, :, None].expand(-1, -1, N))}

    def _search(self, hidden: torch.Tensor, mask: torch.Tensor, beams: int, k: int, max_new_tokens: int,
                allowed_tokens_fn: Callable[[int, torch.Tensor], list[int]] | None = None,
                prompt: DecoderPrompt | None = None) -> torch.Tensor:
        """One (possibly constrained) search over encoded passages -> sequences [B, k, T]
        (start token first: a ``prompt`` is cut, its last token replaced by the start token)."""
        gen_kwargs: dict[str, Any] = {"num_beams": beams, "num_return_sequences": k, "do_sample": False,
                                      "max_new_tokens": max_new_tokens}
        if beams > 1:
            gen_kwargs["length_penalty"] = 0.0  # rank beams by their summed log-prob, the score we report
        if allowed_tokens_fn is not None:
            gen_kwargs["prefix_allowed_tokens_fn"] = allowed_tokens_fn
        # generate() expands encoder_outputs in place for the beams: hand it its own wrapper.
        # The cache is given, not left to generate(): transformers sizes a cache made from the
        # config by its encoder layers (num_layers), so a T5 with more decoder layers than encoder
        # layers fails; this one grows a layer for each decoder layer that writes to it.
        # (Newer transformers call the argument `cache`; `past_key_values` works in every version.)
        cache = _decoder_cache()
        with _cache_argument():
            if prompt is not None:
                # Read the prompt but its last token once per question; every beam continues from
                # that cache (generate() would otherwise read the whole prompt for each beam).
                self._decode(hidden, mask, prompt.ids[:, :-1], prompt.mask[:, :-1], past_key_values=cache,
                             use_cache=True)
                if beams > 1:
                    cache.batch_repeat_interleave(beams)
            seqs = self.t5.generate(encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
                                    attention_mask=mask, past_key_values=cache,
                                    decoder_input_ids=None if prompt is None else prompt.ids,
                                    decoder_attention_mask=None if prompt is None else prompt.mask,
                                    **gen_kwargs)                                         # [B*k, T]
        if prompt is not None:
            seqs = seqs[:, prompt.ids.shape[1] - 1:].clone()                              # [B*k, P+T-1] -> [B*k, T]
            seqs[:, 0] = self.config.decoder_start_token_id
        return seqs.view(hidden.shape[0], k, -1)

    @torch.no_grad()
    def score(self, hidden: torch.Tensor, mask: torch.Tensor, sequences: torch.Tensor,
              n_passages: int, copy_mask: torch.Tensor | None = None, prompt: DecoderPrompt | None = None,
              repeats: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability of ``sequences`` [S, T] and their per-passage relevance.

        With ``copy_mask`` [S, T-1, N*L] (and a ``copy_head``), the score also counts
        the pointer: ``copy_weight`` x the sum over answer tokens (``</s>`` excluded) of
        log(mass the copy head puts on that token's text in the passages + POINTER_FLOOR).
        A candidate that occurs in no passage pays log(POINTER_FLOOR) per token; one the
        pointer found pays little. So the generator says what kind of answer and when to
        stop, and the pointer says where it is: a tiny reader whose copy head puts 59 % of
        its attention on the answer, given the passage that holds it, wrote it 7 % of the time
        from its generator alone, and 48 % of the time with span candidates scored by the pointer.

        With ``generator_share`` λ set, the two are mixed instead of multiplied, as in a
        pointer-generator network with a fixed gate: each answer token has probability
        λ·p_gen + (1 - λ)·mass, ``</s>`` λ·p_gen(``</s>``). The generator of a small
        reader cannot spell a name it never saw, so under the product a copied name pays
        the generator's price for every piece after the first and the reader stops early
        ("Nemi" for "Nemi Steel"); under the mixture a piece the pointer finds is cheap
        (the embedded reader's dev fusion F1: 0.480 with the product, 0.545 with λ = 0.1).
        A candidate in no passage pays log λ per token (``</s>`` included) over the
        generator's log-probability.

        ``hidden`` [S, N*L, d] and ``mask`` [S, N*L] are the (repeated) encoder outputs;
        ``prompt`` [S, P] the (repeated) decoder prompt, read before each candidate in
        place of its start token. With ``repeats`` r, rows come in groups of r
        candidates of one question (``repeat_interleave``): the prompt is then read once per
        group and its decoder cache shared, not read again for every candidate.
        Tokens after the first ``</s>`` are ignored. Relevance: cross-attention
        weights averaged over layers, heads and the candidate's output tokens,
        summed over each passage's L tokens and normalised over passages -> [S, N].
        """
        eos = self.config.eos_token_id
        dec_in, target = sequences[:, :-1], sequences[:, 1:]                       # [S, T-1]
        is_eos = (target == eos).long()
        token_mask = ((is_eos.cumsum(1) - is_eos) == 0).float()                    # up to the first </s>
        if prompt is None:
            out = self._decode(hidden, mask, dec_in, output_attentions=True)
            logits, cross = out.logits, list(out.cross_attentions)               # [S, T-1, V]; [S, H, T-1, N*L]
        else:
            logits, cross = self._score_prompted(hidden, mask, sequences, prompt, repeats)
        logp = logits.float().log_softmax(-1).gather(-1, target[:, :, None]).squeeze(-1)  # [S, T-1]
        logprobs = (logp * token_mask).sum(1)
        if copy_mask is not None and self.copy_head is not None:
            layer, head = self.copy_head
            mass = (cross[layer][:, head].float() * copy_mask.to(hidden.device)).sum(-1)  # [S, T-1]
            answer_tokens = token_mask * (target != eos).float() * (target != self.config.pad_token_id).float()
            if self.generator_share is None:
                logprobs = logprobs + self.copy_weight * ((mass + POINTER_FLOOR).log() * answer_tokens).sum(1)
            else:
                lam = self.generator_share
                p = lam * logp.exp() + (1.0 - lam) * mass * answer_tokens
                logprobs = (p.clamp(min=1e-30).log() * token_mask).sum(1)
        attn = torch.stack(cross).float().mean(dim=(0, 2))         # [layers,S,H,T-1,N*L] -> [S,T-1,N*L]
        attn = (attn * token_mask[:, :, None]).sum(1) / token_mask.sum(1, keepdim=True).clamp(min=1)  # [S, N*L]
        S = attn.shape[0]
        per_passage = attn.view(S, n_passages, -1).sum(-1)                         # [S, N*L] -> [S, N, L] -> [S, N]
        per_passage = per_passage * (mask.view(S, n_passages, -1).sum(-1) > 0)     # padding passages get 0
        relevance = per_passage / per_passage.sum(1, keepdim=True).clamp(min=1e-12)
        return logprobs, relevance

    def _score_prompted(self, hidden: torch.Tensor, mask: torch.Tensor, sequences: torch.Tensor,
                        prompt: DecoderPrompt, repeats: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Teacher-forced logits [S, T-1, V] and cross-attentions (per layer [S, H, T-1, N*L]) of
        ``sequences`` read after the prompt, which is read once per group of ``repeats`` rows.

        The prompt's last position predicts the first answer token (it plays the start token's
        part); the answer tokens but the last then continue from the prompt's shared cache."""
        r = repeats
        with _cache_argument():
            first = prompt.every(r)
            pre = self._decode(hidden[::r], mask[::r], first.ids, first.mask, past_key_values=_decoder_cache(),
                               output_attentions=True, use_cache=True)
            logits = [pre.logits[:, -1:].repeat_interleave(r, dim=0)]                 # [S, 1, V]
            cross = [[a[:, :, -1:].repeat_interleave(r, dim=0)] for a in pre.cross_attentions]
            rest = sequences[:, 1:-1]                                                  # [S, T-2]
            if rest.shape[1]:
                cache = pre.past_key_values
                if r > 1:
                    cache.batch_repeat_interleave(r)
                dec_mask = torch.cat([prompt.mask, prompt.mask.new_ones(rest.shape)], dim=1)
                out = self._decode(hidden, mask, rest, dec_mask, past_key_values=cache, output_attentions=True,
                                   use_cache=True)
                logits.append(out.logits)
                for c, a in zip(cross, out.cross_attentions):
                    c.append(a)
        return torch.cat(logits, dim=1), [torch.cat(c, dim=2) for c in cross]


@contextmanager
def _cache_argument():
    """Silence transformers' notice that ``past_key_values`` is now called ``cache``: the old
    name works in every version xqa supports, the new one only in the newest."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*past_key_values.* is deprecated", category=FutureWarning)
        yield


def _decoder_cache():
    """An empty self- and cross-attention cache whose layers are made as the decoder fills them."""
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    return EncoderDecoderCache(DynamicCache(), DynamicCache())


def _drop_repeats(seqs: torch.Tensor, logprobs: torch.Tensor, pad: int, eos: int) -> torch.Tensor:
    """``logprobs`` [B, k] with -inf for every candidate that repeats an earlier one of its
    row in ``seqs`` [B, k, T]: the same tokens up to the first ``eos`` (``pad``, also T5's
    decoder start, ignored). What follows ``</s>`` differs between the searches (the free one
    pads, the constrained one repeats ``</s>``) and is not part of the candidate."""
    out = logprobs.clone()
    for b in range(seqs.shape[0]):
        seen: set[tuple[int, ...]] = set()
        for j in range(seqs.shape[1]):
            row = seqs[b, j].tolist()
            row = row[: row.index(eos, 1) + 1] if eos in row[1:] else row
            key = tuple(t for t in row if t != pad)
            if key in seen:
                out[b, j] = float("-inf")
            seen.add(key)
    return out
