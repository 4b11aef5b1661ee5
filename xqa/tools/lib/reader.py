"""FiD reader speed on this machine: latency per question vs passages, training throughput.

Models are built from configs with random weights (``reader.fid.model.SIZES``):
``tiny`` (the generated world's shape, vocabulary 8,000), ``small`` (mt5-small's shape) and
``base`` (mt5-base's shape, ``google/mt5-base`` at full scale), both with mT5's vocabulary of
250,112. Inputs are random token ids of a
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

VOCAB = {"tiny": 8000, "small": 250_112, "base": 250_112}


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
    device: str = "cpu"
    peak_gib: float | None = None    # CUDA: the most memory torch held during the timed steps
    bf16: bool = False
    checkpointing: bool = False


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
             steps: int, progress=print, device: str = "cpu", bf16: bool = False,
             checkpointing: bool = False) -> list[TrainRow]:
    """Training throughput: forward + backward + AdamW step, encoder tokens/s and questions/s; on
    CUDA also the peak memory torch held (``bf16``: autocast; ``checkpointing``: gradient
    checkpointing of both stacks)."""
    import contextlib

    import torch

    rows = []
    cuda = device.startswith("cuda")
    for size in sizes:
        model = _model(size).to(device).train()
        if checkpointing:
            model.t5.gradient_checkpointing_enable()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids, mask, pmask = (t.to(device) for t in _inputs(batch, passages, length, VOCAB[size], seed=1))
        labels = torch.randint(3, VOCAB[size], (batch, answer_len)).to(device)
        cast = (torch.autocast(device.split(":")[0], dtype=torch.bfloat16) if bf16 else contextlib.nullcontext())

        def step(model=model, opt=opt, ids=ids, mask=mask, pmask=pmask, labels=labels, cast=cast):
            with cast:
                loss = model(ids, mask, pmask, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if cuda:
                torch.cuda.synchronize()

        if cuda:
            step()                                   # the optimizer's state exists from here on
            torch.cuda.reset_peak_memory_stats()
        t = _median_time(step, steps)
        peak = torch.cuda.max_memory_allocated() / 2 ** 30 if cuda else None
        tokens = batch * passages * length
        rows.append(TrainRow(size, passages, length, batch, t, tokens / t, batch / t, device, peak, bf16,
                             checkpointing))
        progress(f"  {size:5s} train step {t:.3f} s: {tokens / t:,.0f} encoder tokens/s"
                 + (f", peak {peak:.1f} GiB" if peak is not None else ""))
        del model, opt
        if cuda:
            torch.cuda.empty_cache()
    return rows


def format_tables(lat: Sequence[LatencyRow], train: Sequence[TrainRow], threads: int, length: int,
                  answer_len: int, beams: int, prompt_tokens: int = 0) -> str:
    prompt = f", after a decoder prompt of {prompt_tokens} tokens" if prompt_tokens else ""
    lines = [(f"FiD reader on CPU ({threads} torch threads), passages of {length} tokens, "
              f"{answer_len} decoded tokens{prompt}, batch 1"), "",
             f"| config | params (M) | passages | greedy ms/question | beam-{beams} ms/question |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.size} | {r.params_m:.1f} | {r.passages} | {r.greedy_ms:.1f} | {r.beam_ms:.1f} |" for r in lat]
    return "\n".join(lines + ["", train_table(train)])


def train_table(train: Sequence[TrainRow]) -> str:
    """The training rows as a Markdown table (device, precision, checkpointing, peak memory)."""
    lines = ["| config | device | passages x tokens | batch | s/step | steps/s | encoder tokens/s | questions/s "
             "| peak GiB |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in train:
        how = r.device + (", bf16" if r.bf16 else "") + (", checkpointing" if r.checkpointing else "")
        peak = f"{r.peak_gib:.1f}" if r.peak_gib is not None else "-"
        lines.append(f"| {r.size} | {how} | {r.passages} x {r.length} | {r.batch} | {r.step_s:.3f} | "
                     f"{1 / r.step_s:.2f} | {r.tokens_per_s:,.0f} | {r.questions_per_s:.2f} | {peak} |")
    return "\n".join(lines)
