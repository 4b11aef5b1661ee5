"""FiD reader speed on this machine: latency per question vs passages, training throughput.

Models are built from configs with random weights (``reader.fid.model.SIZES``):
``tiny`` (the embedded default's shape, vocabulary 8,000) and ``small``
(mt5-small's shape, vocabulary 250,112). Inputs are random token ids of a
fixed passage length, so the figures measure the model (encoder over N*L
tokens, decoder steps over the concatenation, the re-scoring pass that
yields cross-attention relevance), not tokenization. Latency is per question
at batch size 1, the median of ``reps`` runs after one warm-up; decoding runs
for exactly ``answer_len`` tokens (EOS is suppressed), so the decoder cost does
not depend on what random weights happen to generate. With ``prompt_tokens`` the
decoder first reads a prompt of that many tokens, as a reader trained with
``--decoder-prompt`` reads its question.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

VOCAB = {"tiny": 8000, "small": 250_112}


@dataclass
class LatencyRow:
    size: str
    params_m: float
    passages: int
    greedy_ms: float
    beam_ms: float


@dataclass
class TrainRow:
    size: str
    passages: int
    length: int
    batch: int
    step_s: float
    tokens_per_s: float
    questions_per_s: float


def _model(size: str, seed: int = 0):
    from reader.fid.model import FiD, build_t5

    model = FiD(build_t5(size, VOCAB[size], seed=seed))
    model.t5.generation_config.suppress_tokens = [model.config.eos_token_id]  # fixed-length decoding
    return model


def _inputs(n_questions: int, passages: int, length: int, vocab: int, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (n_questions, passages, length), generator=g)
    ids[:, :, -1] = 1  # </s> ends every passage, as the tokenizer does
    return ids, torch.ones_like(ids), torch.ones(n_questions, passages, dtype=torch.long)


def _median_time(fn, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def latency(sizes: Sequence[str], passages: Sequence[int], length: int, answer_len: int, beams: int,
            reps: int, budget_s: float, progress=print, prompt_tokens: int = 0) -> list[LatencyRow]:
    """Per-question latency (ms) of greedy and beam reading for each size and passage count.

    A measurement whose warm-up already exceeds ``budget_s`` is done once only.
    """
    import torch

    from reader.fid.model import DecoderPrompt, Search

    rows = []
    for size in sizes:
        model = _model(size).eval()
        n_params = sum(p.numel() for p in model.parameters()) / 1e6
        for n in passages:
            ids, mask, pmask = _inputs(1, n, length, VOCAB[size])
            prompt = None
            if prompt_tokens:   # the start token, then random ids
                start = _inputs(1, 1, prompt_tokens, VOCAB[size], seed=2)[0][:, 0]
                start[:, 0] = model.config.decoder_start_token_id
                prompt = DecoderPrompt(start, torch.ones_like(start))
            timings = []
            for b in (1, beams):
                def call(b=b, model=model, ids=ids, mask=mask, pmask=pmask):
                    with torch.no_grad():
                        model.generate(ids, mask, pmask, Search(beams=b, n_best=b, max_new_tokens=answer_len),
                                       prompt=prompt)
                t0 = time.perf_counter()
                call()
                first = time.perf_counter() - t0
                timings.append(first if first > budget_s else _median_time(call, reps))
            rows.append(LatencyRow(size, n_params, n, 1000 * timings[0], 1000 * timings[1]))
            progress(f"  {size:5s} {n:3d} passages: greedy {rows[-1].greedy_ms:9.1f} ms, "
                     f"beam{beams} {rows[-1].beam_ms:9.1f} ms")
    return rows


def training(sizes: Sequence[str], passages: int, length: int, batch: int, answer_len: int,
             steps: int, progress=print) -> list[TrainRow]:
    """Training throughput: forward + backward + AdamW step, encoder tokens/s and questions/s."""
    import torch

    rows = []
    for size in sizes:
        model = _model(size).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids, mask, pmask = _inputs(batch, passages, length, VOCAB[size], seed=1)
        labels = torch.randint(3, VOCAB[size], (batch, answer_len))

        def step(model=model, opt=opt, ids=ids, mask=mask, pmask=pmask, labels=labels):
            loss = model(ids, mask, pmask, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        t = _median_time(step, steps)
        tokens = batch * passages * length
        rows.append(TrainRow(size, passages, length, batch, t, tokens / t, batch / t))
        progress(f"  {size:5s} train step {t:.3f} s: {tokens / t:,.0f} encoder tokens/s")
    return rows


def format_tables(lat: Sequence[LatencyRow], train: Sequence[TrainRow], threads: int, length: int,
                  answer_len: int, beams: int, prompt_tokens: int = 0) -> str:
    prompt = f", after a decoder prompt of {prompt_tokens} tokens" if prompt_tokens else ""
    lines = [(f"FiD reader on CPU ({threads} torch threads), passages of {length} tokens, "
              f"{answer_len} decoded tokens{prompt}, batch 1"), "",
             f"| config | params (M) | passages | greedy ms/question | beam-{beams} ms/question |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.size} | {r.params_m:.1f} | {r.passages} | {r.greedy_ms:.1f} | {r.beam_ms:.1f} |" for r in lat]
    lines += ["", "| config | passages x tokens | batch | s/step | encoder tokens/s | questions/s |",
              "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.size} | {r.passages} x {r.length} | {r.batch} | {r.step_s:.3f} | {r.tokens_per_s:,.0f} | "
              f"{r.questions_per_s:.2f} |" for r in train]
    return "\n".join(lines)
