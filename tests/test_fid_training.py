"""The FiD reader learning and as an artifact: the shared training loop, the read API, save/load,
two-process training and tuning, `xqa train reader`, and the diagnose/bench tools."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from fid_facts import FACTS, ROOT, record

from reader.base import ReaderOutput
from reader.fid.data import example_from_record
from reader.fid.inference import FiDReader
from xqa.records import Context, Question


def test_tiny_fid_memorises_facts_through_the_shared_loop(trained):
    lines = (trained["out"] / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    metrics = [json.loads(line) for line in lines]
    losses = [m["loss"] for m in metrics if "loss" in m]
    assert losses[-1] < 0.1 * trained["first_loss"], (trained["first_loss"], losses)
    reader = FiDReader.load(trained["out"])  # the run folder resolves to run/best
    outs = reader.read_examples(trained["examples"], beams=1)
    assert [o.text for o in outs] == [FACTS[i][1] for i in range(len(FACTS))]
    assert trained["result"]["best"] == 1.0


def test_reader_read_api_greedy_beam_and_relevance(trained):
    reader = FiDReader.load(trained["out"])
    questions, contexts = [], []
    for i in range(3):
        rec = record(i)
        questions.append(Question(rec["id"], rec["question"], rec["lang"], tuple(rec["answers"])))
        contexts.append([Context(c["id"], c["title"], c["text"], c["lang"], c["score"], c["source"])
                         for c in rec["ctxs"]])
    beam = reader.read(questions, contexts, n_context=2, beams=4, n_best=3, max_answer_len=8)
    greedy = reader.read(questions, contexts, beams=1)
    for q, b, g in zip(questions, beam, greedy):
        assert len(b.candidates) == 3 and len(g.candidates) == 1
        assert b.text == g.text == q.answers[0]
        assert [s for _, s in b.candidates] == sorted((s for _, s in b.candidates), reverse=True)
        assert b.relevance.shape == (2,) and math.isclose(float(b.relevance.sum()), 1.0, rel_tol=1e-5)
        assert b.candidate_relevance.shape == (3, 2)
    rt = ReaderOutput.from_dict(json.loads(json.dumps(beam[0].to_dict())))
    assert rt.candidates == [(t, pytest.approx(s)) for t, s in beam[0].candidates]


def test_an_empty_candidate_gives_way_to_any_written_one(trained):
    reader = trained["reader"]
    tok = reader.tokenizer
    word = tok("Velora", add_special_tokens=False)["input_ids"]
    T = len(word) + 2
    empty = [0, 1] + [0] * (T - 2)                      # </s> first: decodes to ""
    written = [0, *word, 1]
    ex = [example_from_record(record(0))]
    gen = {"sequences": torch.tensor([[empty, written]]), "logprobs": torch.tensor([[-0.1, -2.0]]),
           "relevance": torch.tensor([[[0.9, 0.1], [0.2, 0.8]]])}
    [out] = reader._outputs(ex, gen, 2)
    assert out.candidates == [("Velora", -2.0)] and out.candidate_relevance.shape == (1, 2)
    np.testing.assert_allclose(out.relevance, [0.2, 0.8], atol=1e-6)   # pooled over what is kept
    only_empty = {**gen, "sequences": torch.tensor([[empty, empty]]),
                  "logprobs": torch.tensor([[-0.1, float("-inf")]])}
    [out] = reader._outputs(ex, only_empty, 2)
    assert out.candidates == [("", pytest.approx(-0.1))]    # nothing else: the empty answer stays


def test_save_load_identical_generations(trained, tmp_path):
    reader = trained["reader"]
    reader.save(tmp_path / "copy")
    loaded = FiDReader.load(tmp_path / "copy")
    assert (loaded.max_length, loaded.max_answer_len, loaded.n_context) == (40, 8, 2)
    examples = trained["examples"][:4]
    a = reader.read_examples(examples, beams=3, n_best=3)
    b = loaded.read_examples(examples, beams=3, n_best=3)
    for x, y in zip(a, b):
        assert [t for t, _ in x.candidates] == [t for t, _ in y.candidates]
        np.testing.assert_allclose([s for _, s in x.candidates], [s for _, s in y.candidates], atol=1e-5)
        np.testing.assert_allclose(x.relevance, y.relevance, atol=1e-5)
    assert not list((tmp_path / "copy").rglob("*.bin")) and list((tmp_path / "copy").rglob("*.safetensors"))


@pytest.mark.slow
def test_two_process_gloo_training_via_torchrun(tokenizer, tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(record(i)) + "\n" for i in range(len(FACTS))), encoding="utf-8")
    tokenizer.save_pretrained(str(tmp_path / "tok"))
    torchrun = Path(sys.executable).with_name("torchrun")
    cmd = [str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "xqa.cli", "train", "reader",
           "--train", str(data), "--out", str(tmp_path / "run"), "--config", "tiny", "--tokenizer",
           str(tmp_path / "tok"), "--n-context", "2", "--max-length", "32", "--batch-size", "2",
           "--max-steps", "2", "--log-every", "1", "--threads", "1", "--copy-attention", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert run_cfg["processes"] == 2
    state = json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())
    assert state["step"] == 2 and state["done"]
    assert FiDReader.load(tmp_path / "run").read_examples([example_from_record(record(0))], beams=1)


def test_a_command_that_succeeds_leaves_its_process_group_and_one_that_fails_stays(tmp_path, monkeypatch):
    """A torchrun process that finished its command destroys its gloo process group before the
    interpreter exits (left to the teardown, gloo's threads can abort the process after its work
    is done); one whose command failed leaves it, since the others may wait for it in a collective."""
    import torch.distributed as dist

    from xqa.cli import main

    monkeypatch.setenv("XQA_CACHE", str(tmp_path / "cache"))
    for command, code in ((["cache"], 0), (["info", "--config", str(tmp_path / "none.json")], 1)):
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / command[0]}", rank=0, world_size=1)
        try:
            assert main(command) == code
            assert dist.is_initialized() is (code != 0), command
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()


def test_train_reader_set_changes_the_random_architecture(tokenizer, tmp_path):
    from xqa.cli import main

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(record(i)) + "\n" for i in range(4)), encoding="utf-8")
    tokenizer.save_pretrained(str(tmp_path / "tok"))
    base = ["train", "reader", "--train", str(data), "--config", "tiny", "--tokenizer", str(tmp_path / "tok"),
            "--n-context", "2", "--max-length", "32", "--batch-size", "2", "--max-steps", "1", "--threads", "1"]
    assert main([*base, "--out", str(tmp_path / "run"), "--set", "num_decoder_layers=3", "--set", "d_ff=200"]) == 0
    model = FiDReader.load(tmp_path / "run").model.t5
    assert (model.config.num_decoder_layers, model.config.d_ff, model.config.num_layers) == (3, 200, 2)
    assert len(model.decoder.block) == 3
    assert main([*base, "--out", str(tmp_path / "bad"), "--set", "num_decoder_layer=3"]) == 1
    assert main([*base, "--out", str(tmp_path / "bad2"), "--set", "3"]) == 1
    # --decoder-prompt is saved with the reader; a reader trained without one (or a hub mT5) can learn it
    assert main([*base, "--out", str(tmp_path / "prompted"), "--decoder-prompt", "--copy-attention", "2"]) == 0
    prompted = FiDReader.load(tmp_path / "prompted")
    assert prompted.decoder_prompt and prompted.model.copy_weight == 2.0   # scored as it was trained
    init = ["train", "reader", "--train", str(data), "--n-context", "2", "--max-length", "32", "--batch-size", "2",
            "--max-steps", "1", "--threads", "1", "--decoder-prompt"]
    assert main([*init, "--init", str(tmp_path / "run"), "--out", str(tmp_path / "tuned")]) == 0
    assert FiDReader.load(tmp_path / "tuned").decoder_prompt
    # --max-minutes stops the training (checkpointed, resumable) as it stops a span reader's
    timed = [*base[:-4], "--max-steps", "100000", "--save-every", "100000", "--threads", "1", "--max-minutes", "0.01",
             "--out", str(tmp_path / "timed")]
    assert main(timed) == 0
    state = json.loads((tmp_path / "timed" / "checkpoint" / "trainer_state.json").read_text())
    assert 0 < state["step"] < 100000 and not state.get("done")


@pytest.mark.slow
def test_tune_fusion_in_two_processes_reads_and_tunes_as_one(trained, tmp_path):
    """Under torchrun the processes share the reading (strided shards) and rank 0 tunes: the
    reader outputs, gathered back in question order, and the tuned weights are those of one process."""
    trained["reader"].save(tmp_path / "model")
    dev = tmp_path / "dev.jsonl"
    dev.write_text("".join(json.dumps(record(i)) + "\n" for i in range(len(FACTS))), encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}

    def tune(name: str, launcher: list[str]) -> dict:
        cmd = [*launcher, "-m", "xqa.cli", "tune", "fusion", "--model", str(tmp_path / "model"), "--dev", str(dev),
               "--n-context", "2", "--beams", "3", "--n-best", "3", "--batch-size", "2", "--threads", "1",
               "--passes", "1", "--cache", str(tmp_path / name), "--out", str(tmp_path / f"{name}.json")]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        head, *rows = [json.loads(line) for line in (tmp_path / name / "dev.beam3.jsonl").read_text().splitlines()]
        assert set(head["reading"]) == {"model", "read"}   # what was read, by which model: the cache's key
        return {"rows": rows, "head": head, "best": json.loads((tmp_path / f"{name}.json").read_text())}

    one = tune("one", [sys.executable])
    two = tune("two", [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc-per-node", "2"])
    assert [r["id"] for r in two["rows"]] == [f"q{i}" for i in range(len(FACTS))] and two["head"] == one["head"]
    for a, b in zip(one["rows"], two["rows"]):
        assert [c[0] for c in a["candidates"]] == [c[0] for c in b["candidates"]]
        np.testing.assert_allclose([c[1] for c in a["candidates"]], [c[1] for c in b["candidates"]], atol=1e-4)
    assert two["best"]["dev_f1"] == pytest.approx(one["best"]["dev_f1"])


def test_diagnose_reading_reads_the_evidence_passage_alone(trained, tmp_path, capsys):
    from xqa.cli import main

    rows = []
    for i in range(len(FACTS)):
        rec = record(i)
        rec["relation"] = "capital"
        rows.append(rec)
    # listed evidence wins over a passage that merely contains the answer string (about something else)
    decoy = {"id": "d", "title": "Dornik", "text": "Velora is far from Dornik.", "lang": "en", "score": 9.0}
    rows[0]["positive_ids"] = ["p0"]
    rows[0]["ctxs"] = [decoy] + rows[0]["ctxs"]
    rows.append({"id": "qx", "question": "What is the capital of Nowhere?", "answers": ["Atlantis"],
                 "lang": "en", "ctxs": rows[1]["ctxs"]})                       # no passage holds it: skipped
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from xqa.tools.diagnose_reading import evidence_passage
    from xqa.io import read_results

    assert evidence_passage(read_results(path)[0]).id == "p0"
    out = tmp_path / "reading.json"
    assert main(["diagnose", "reading", "--model", str(trained["out"]), "--results", str(path),
                 "--out", str(out), "--threads", "1"]) == 0
    assert "6 questions read with their evidence passage (1 skipped" in capsys.readouterr().out
    groups = json.loads(out.read_text())["groups"]
    assert groups["all"]["n"] == 6 and groups["relation capital"]["n"] == 6
    assert groups["all"]["em"] == 1.0 and groups["all"]["copied"] == 1.0   # the micro reader memorised them
    assert groups["lang en"]["n"] + groups["lang de"]["n"] == 6
    assert 0 <= groups["all"]["ce_first"] < 1.0


def test_diagnose_copy_probe_batches_and_cli(tmp_path):
    import random

    from xqa.cli import main
    from xqa.tools.diagnose_copy import MARKER, make_batch

    x, y = make_batch(random.Random(0), 16, 12, 3, 30)
    assert x.shape == (16, 13) and y.shape == (16, 4)
    for row, target in zip(x.tolist(), y.tolist()):
        assert row.count(MARKER) == 1 and row[-1] == 1 and target[-1] == 1
        at = row.index(MARKER)
        assert row[at + 1: at + 4] == target[:3]
    out = tmp_path / "copy.json"
    assert main(["diagnose", "copy", "--steps", "2", "--every", "1", "--length", "10", "--vocab", "30",
                 "--eval-size", "4", "--threads", "1", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(0.0 <= r["plain_acc"] <= 1.0 and 0.0 <= r["locality_acc"] <= 1.0 for r in rows)
    assert rows[0]["plain_loss"] != rows[0]["locality_loss"]  # the prior changes the model
    assert main(["diagnose", "copy", "--length", "3"]) == 1   # no room for marker + answer: a clear error


def test_bench_reader_times_reading_after_a_decoder_prompt(tmp_path, capsys):
    from xqa.cli import main

    args = ["bench", "reader", "--sizes", "tiny", "--passages", "1,3", "--length", "12", "--answer-len", "2",
            "--reps", "1", "--train-passages", "1", "--train-batch", "2", "--train-steps", "1", "--threads", "1"]
    assert main([*args, "--prompt-tokens", "6", "--json", str(tmp_path / "b.json")]) == 0
    figures = json.loads((tmp_path / "b.json").read_text())
    assert figures["prompt_tokens"] == 6 and [r["passages"] for r in figures["latency"]] == [1, 3]
    assert all(r["greedy_ms"] > 0 and r["beam_ms"] > 0 for r in figures["latency"])
    assert "after a decoder prompt of 6 tokens" in capsys.readouterr().out
    assert main([*args, "--prompt-tokens", "1"]) == 1
