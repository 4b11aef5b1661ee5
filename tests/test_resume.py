"""Interrupted jobs lose nothing: SIGKILL at a random point, the same command again, the same artifacts.

Each test runs an ``xqa`` command as a user would (a subprocess in its own
process group), kills the whole group with SIGKILL at a random point of its
progress, runs the same command again, and compares what it left with an
uninterrupted run: bit-identical files where the job is deterministic, no
record duplicated or lost. The random point's seed is in every failure message
(rerun one with ``XQA_KILL_SEED``). All of it runs on the small build
(``tiny_pipeline``), about two minutes on an idle 2-core machine; each command is
bounded by 20 minutes, for machines shared with other work.
"""
from __future__ import annotations

import filecmp
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = int(os.environ.get("XQA_KILL_SEED", random.SystemRandom().randrange(1 << 30)))
pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


def _xqa(argv: list, log: Path, timeout: float = 1200) -> None:
    """Run ``xqa argv`` to the end; fail with its log when it fails."""
    with open(log, "ab") as f:
        code = subprocess.run([sys.executable, "-m", "xqa.cli", *map(str, argv)], stdout=f, stderr=f,
                              env=_env(), timeout=timeout, cwd=log.parent).returncode
    assert code == 0, f"xqa {' '.join(map(str, argv))} exited {code}:\n{log.read_text(errors='replace')[-3000:]}"


def _xqa_killed(argv: list, log: Path, ready: Callable[[], bool], timeout: float = 1200) -> None:
    """Start ``xqa argv``, wait until ``ready()`` (its progress reached the chosen point), then SIGKILL
    its whole process group. Asserts the job was killed while running, not after it finished."""
    with open(log, "ab") as f:
        proc = subprocess.Popen([sys.executable, "-m", "xqa.cli", *map(str, argv)], stdout=f, stderr=f,
                                env=_env(), cwd=log.parent, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            assert proc.poll() is None, (f"seed {SEED}: xqa {argv[:2]} ended (exit {proc.returncode}) before "
                                         f"the kill point:\n{log.read_text(errors='replace')[-3000:]}")
            assert time.monotonic() < deadline, f"seed {SEED}: kill point not reached in {timeout} s"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"seed {SEED}: exit {proc.returncode}, not killed"


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _same_files(a: Path, b: Path, ignore: tuple[str, ...] = ()) -> list[str]:
    """Relative paths of files that differ (or exist on one side only) between two folders."""
    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                and not any(part in ignore for part in p.relative_to(root).parts)}

    fa, fb = files(a), files(b)
    diff = sorted(fa ^ fb)
    diff += [f for f in sorted(fa & fb) if not filecmp.cmp(a / f, b / f, shallow=False)]
    return diff


def _no_temporaries(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp")]


# ----------------------------------------------------------------------------- xqa answer


def test_answer_killed_at_a_random_batch_resumes_to_the_same_records(tiny_pipeline, tmp_path):
    rng = random.Random(SEED)
    world = Path(tiny_pipeline).parent / "world"
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(world.joinpath("test.jsonl").read_text(encoding="utf-8").splitlines(True)[:12]),
                         encoding="utf-8")
    args = ["answer", "--config", tiny_pipeline, "--questions", questions, "--batch-size", 2]
    ref, out = tmp_path / "ref", tmp_path / "out"
    _xqa([*args, "--out", ref], tmp_path / "ref.log")
    # records on disk when the kill comes; batches of 2 write them in pairs, so at most 9 leaves
    # a batch of the 12 questions still to answer
    kill_after = rng.randrange(1, 10)
    _xqa_killed([*args, "--out", out], tmp_path / "out.log", lambda: _lines(out / "records.jsonl") >= kill_after)
    assert not (out / "predictions.json").exists()
    _xqa([*args, "--out", out], tmp_path / "out.log")
    assert "resuming:" in (tmp_path / "out.log").read_text()
    got = [json.loads(x) for x in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    want = [json.loads(x) for x in (ref / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in got] == [r["id"] for r in want], f"seed {SEED}: records duplicated or lost"
    assert got == want, f"seed {SEED}"
    assert _same_files(ref, out) == [], f"seed {SEED}"


# ----------------------------------------------------------------------------- xqa index dense


def test_index_dense_shard_killed_at_a_random_chunk_resumes_bit_identical(tiny_pipeline, tmp_path):
    rng = random.Random(SEED + 1)
    build = Path(tiny_pipeline).parent
    args = ["index", "dense", "--model", build / "retriever" / "best", "--passages", build / "world" / "passages.jsonl",
            "--num-shards", 2, "--chunk-size", 24, "--batch-size", 8, "--quiet"]
    ref, out = tmp_path / "ref", tmp_path / "out"
    _xqa([*args, "--out", ref], tmp_path / "ref.log")
    # killed after a random number of the 20 chunks of its two shards (10 each), then run again
    kill_after = rng.randrange(1, 19)
    _xqa_killed([*args, "--out", out], tmp_path / "out.log",
                lambda: len(list((out / "shards").glob("*/chunk-*.npy"))) >= kill_after)
    assert not (out / "config.json").exists()
    _xqa([*args, "--out", out], tmp_path / "out.log")
    assert (out / "config.json").is_file()
    assert "already done" in (tmp_path / "out.log").read_text()
    assert _same_files(ref, out, ignore=("config.json", "encoding.json")) == [], f"seed {SEED}"
    a, b = (json.loads((d / "config.json").read_text()) for d in (ref, out))
    assert {k: v for k, v in a.items() if k != "model"} == {k: v for k, v in b.items() if k != "model"}
    assert _no_temporaries(out) == []


# ----------------------------------------------------------------------------- xqa train reader


def _checkpoint_step(run: Path) -> int:
    try:
        return json.loads((run / "checkpoint" / "trainer_state.json").read_text())["step"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


def test_train_reader_killed_after_a_random_checkpoint_resumes_bit_identical(tiny_pipeline, tmp_path):
    rng = random.Random(SEED + 2)
    build = Path(tiny_pipeline).parent
    args = ["train", "reader", "--train", build / "retrieved" / "train.jsonl", "--config", "tiny",
            "--tokenizer", build / "tokenizer", "--n-context", 2, "--max-steps", 12, "--save-every", 3,
            "--batch-size", 4, "--lr", 1e-3, "--seed", 3, "--threads", 2]
    ref, out = tmp_path / "ref", tmp_path / "out"
    _xqa([*args, "--out", ref], tmp_path / "ref.log")
    kill_at = rng.choice([3, 6, 9])  # the kill comes once this checkpoint is on disk, mid-way to the next
    _xqa_killed([*args, "--out", out], tmp_path / "out.log", lambda: _checkpoint_step(out) >= kill_at)
    assert not (out / "best").exists()
    _xqa([*args, "--out", out], tmp_path / "out.log")
    assert "resuming from" in (tmp_path / "out.log").read_text()
    assert _same_files(ref / "best", out / "best", ignore=("config.json",)) == [], f"seed {SEED}"
    assert _same_files(ref / "checkpoint", out / "checkpoint", ignore=("config.json",)) == [], f"seed {SEED}"
    steps = [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    want = [json.loads(x) for x in (ref / "metrics.jsonl").read_text().splitlines()]
    assert steps == [m["step"] for m in want], f"seed {SEED}: metrics duplicated or lost"
    got = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["loss"] for m in got] == [m["loss"] for m in want], f"seed {SEED}"
    assert _no_temporaries(out) == []


# ----------------------------------------------------------------------------- the build


_BUILD_STAGES = ["world", "tokenizer", "BM25 indexes", "cross-script BM25 index", "dense retriever", "dense index"]


def test_build_killed_in_a_random_stage_resumes_to_the_same_artifacts(tiny_pipeline, tmp_path):
    """The build through its CLI, killed inside a random one of its first stages (up to the dense
    index), then run again until that stage is done: its artifacts equal the uninterrupted build's."""
    rng = random.Random(SEED + 3)
    ref = Path(tiny_pipeline).parent
    out = tmp_path / "build"
    log = tmp_path / "build.log"
    args = ["embedded", "build", "--profile", "small", "--out", out]
    stage = rng.randrange(len(_BUILD_STAGES))  # killed while this stage runs, after a random delay in it
    delay = rng.uniform(0, 1.5)
    started: list[float] = []

    def in_stage() -> bool:
        text = log.read_text(errors="replace") if log.exists() else ""
        if f"{_BUILD_STAGES[stage]} ..." not in text:
            return False
        started.append(time.monotonic())
        return started[-1] - started[0] >= delay or f"{_BUILD_STAGES[stage]}: done" in text

    _xqa_killed(args, log, in_stage)
    assert not (out / "pipeline.json").exists()
    # the same command again, stopped when the last compared stage is done (the rest is tested elsewhere)
    done = f"[{len(_BUILD_STAGES)}/14] {_BUILD_STAGES[-1]}: done"
    _xqa_killed(args, log, lambda: done in log.read_text(errors="replace"))
    assert _same_files(ref / "world", out / "world", ignore=("config.json",)) == [], f"seed {SEED}"
    # the raw SentencePiece model of an older build records its trainer's temporary folder: compare pieces
    assert _same_files(ref / "tokenizer", out / "tokenizer", ignore=("config.json", "spiece.model")) == []
    assert _pieces(ref / "tokenizer") == _pieces(out / "tokenizer"), f"seed {SEED}"
    assert _same_files(ref / "retriever" / "best", out / "retriever" / "best", ignore=("config.json",)) == []
    assert _same_files(ref / "dense", out / "dense", ignore=("config.json", "encoding.json")) == []
    for index in ("bm25", "roman"):
        a, b = (json.loads((d / index / "config.json").read_text()) for d in (ref, out))
        def shape(cfg: dict) -> dict:  # Lucene's segment files differ run to run: compare what they hold
            return {lang: (v["analyzer"], v["num_passages"], v.get("stop_tokens")) for lang, v in cfg["languages"].items()}

        assert a["num_passages"] == b["num_passages"] and shape(a) == shape(b), index
    assert _same_bm25_hits(ref / "bm25", out / "bm25", ref / "world" / "dev.jsonl")
    assert _no_temporaries(out) == []


def _pieces(tokenizer: Path) -> list[tuple[str, float]]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(tokenizer / "spiece.model"))
    return [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]


def _same_bm25_hits(a: Path, b: Path, questions: Path) -> bool:
    from retriever.sparse import SparseRetriever
    from xqa.io import read_questions

    qs = read_questions(questions)[:40]
    ha, hb = (SparseRetriever.load(x).search(qs, 10) for x in (a, b))
    return ha == hb
