"""The shared training loop: learning happens, validation keeps the best, resume is exact."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from xqa.artifacts import is_complete, save_config
from xqa.training import TrainConfig, epoch_order, train


class RegressionTask:
    """y = 3x - 1 with a one-unit linear model; metric = -MSE on fixed points."""

    metric = "neg_mse"

    def __init__(self, evaluate: bool = True):
        torch.manual_seed(0)
        self.model = torch.nn.Linear(1, 1)
        self._evaluate = evaluate
        self.evaluations = 0

    def collate(self, examples):
        x = torch.tensor([[e["x"]] for e in examples])
        return {"x": x, "y": 3 * x - 1}

    def loss(self, model, batch):
        return torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])

    def evaluate(self, model):
        self.evaluations += 1
        if not self._evaluate:
            return {}
        x = torch.linspace(-1, 1, 9)[:, None]
        return {"neg_mse": -float(torch.nn.functional.mse_loss(model(x), 3 * x - 1))}

    def save(self, model, folder: Path):
        save_file(model.state_dict(), str(folder / "model.safetensors"))
        save_config(folder, "toy", {})

    def enable_gradient_checkpointing(self):
        pass


DATA = [{"x": (i % 17) / 8.0 - 1.0} for i in range(64)]


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_a_config_or_task_that_cannot_train_is_said_before_or_at_its_first_use(tmp_path):
    from xqa.errors import XqaError

    with pytest.raises(XqaError, match=r"TrainConfig has no field 'learning_rate'; its fields: out_dir, batch_size"):
        TrainConfig.from_dict({"out_dir": str(tmp_path), "learning_rate": 1e-3})   # lr would stay 5e-5
    assert TrainConfig.from_dict({"out_dir": str(tmp_path), "lr": 1e-3}).lr == 1e-3
    with pytest.raises(XqaError, match=r"TrainConfig.batch_size: a whole number of at least 1, not 0"):
        TrainConfig(out_dir=str(tmp_path), batch_size=0)
    with pytest.raises(XqaError, match=r"TrainConfig.lr: a number of at least 0, not nan"):
        TrainConfig(out_dir=str(tmp_path), lr=float("nan"))
    with pytest.raises(XqaError, match="the training set is empty"):
        train(RegressionTask(), [], TrainConfig(out_dir=str(tmp_path / "empty")), progress=False)
    task = RegressionTask()
    task.metric = "f1"   # none of the keys its evaluate() returns
    with pytest.raises(XqaError, match=r"the task's metric 'f1' is none of what its evaluate\(\) returned: 'neg_mse'"):
        train(task, DATA, TrainConfig(out_dir=str(tmp_path / "metric"), batch_size=8, max_steps=2, eval_every=1),
              progress=False)


def test_loss_falls_and_best_is_kept(tmp_path):
    task = RegressionTask()
    result = train(task, DATA, TrainConfig(out_dir=str(tmp_path), batch_size=8, epochs=6, lr=0.3,
                                           eval_every=4, log_every=2), progress=False)
    assert is_complete(tmp_path / "best")
    assert result["best"] > -0.05, result
    losses = [r["loss"] for r in map(json.loads, open(tmp_path / "metrics.jsonl")) if "loss" in r]
    assert losses[-1] < losses[0] / 10
    evals = [r["eval"]["neg_mse"] for r in map(json.loads, open(tmp_path / "metrics.jsonl")) if "eval" in r]
    assert result["best"] == max(evals)


class Killed(Exception):
    pass


class DyingTask(RegressionTask):
    """Dies (as a killed job would, or with ``error``: Ctrl+C) on its ``die_at``-th batch."""

    def __init__(self, die_at: int, error: type[BaseException] = Killed):
        super().__init__(evaluate=False)
        self.calls, self.die_at, self.error = 0, die_at, error

    def loss(self, model, batch):
        self.calls += 1
        if self.calls == self.die_at:
            raise self.error
        return super().loss(model, batch)


def test_resume_is_exact(tmp_path):
    cfg = dict(batch_size=8, epochs=3, lr=0.05, save_every=5, log_every=1)
    train(RegressionTask(evaluate=False), DATA, TrainConfig(out_dir=str(tmp_path / "a"), **cfg), progress=False)

    b = tmp_path / "b"
    try:  # killed during step 8: the last checkpoint is at step 5, in the first epoch of 8 batches
        train(DyingTask(die_at=8), DATA, TrainConfig(out_dir=str(b), **cfg), progress=False)
    except Killed:
        pass
    assert json.load(open(b / "checkpoint" / "trainer_state.json"))["step"] == 5
    assert not is_complete(b / "best")
    train(RegressionTask(evaluate=False), DATA, TrainConfig(out_dir=str(b), **cfg), progress=False)

    wa, wb = _weights(tmp_path / "a" / "best"), _weights(b / "best")
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=0)


def test_ctrl_c_says_from_which_checkpoint_a_rerun_resumes(tmp_path, capsys):
    cfg = TrainConfig(out_dir=str(tmp_path), batch_size=8, epochs=3, lr=0.05, save_every=5, log_every=1)
    with pytest.raises(KeyboardInterrupt):
        train(DyingTask(3, KeyboardInterrupt), DATA, cfg, progress=False)
    assert "stopped at step 2/24; no checkpoint yet (one every 5 steps): a rerun starts over" in \
        capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):
        train(DyingTask(12, KeyboardInterrupt), DATA, cfg, progress=False)
    assert "stopped at step 11/24; a rerun resumes from the checkpoint of step 10" in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):   # resumed at 10, stopped before its next checkpoint
        train(DyingTask(2, KeyboardInterrupt), DATA, cfg, progress=False)
    assert "stopped at step 11/24; a rerun resumes from the checkpoint of step 10" in capsys.readouterr().err


def test_the_closing_line_names_the_step_best_holds(tmp_path):
    from xqa.training.loop import run_summary

    result = train(RegressionTask(), DATA, TrainConfig(out_dir=str(tmp_path), batch_size=8, max_steps=6, lr=0.3,
                                                       eval_every=3, log_every=1), progress=False)
    state = json.load(open(tmp_path / "checkpoint" / "trainer_state.json"))
    assert run_summary(result) == f"step 6; kept: step {state['best_step']}, mrr {result['best']:.4g}"
    assert run_summary({"step": 3, "best": None}) == "step 3"
    from xqa.training.loop import dev_said   # the opening line: the dev questions validated on

    assert dev_said(816, 8) == "8 of 816 dev questions validated on"
    assert dev_said(5, 500) == dev_said(5, 0) == "5 dev questions"


def test_finished_run_is_not_repeated(tmp_path):
    cfg = TrainConfig(out_dir=str(tmp_path), batch_size=8, max_steps=3, log_every=1)
    train(RegressionTask(), DATA, cfg, progress=False)
    task = RegressionTask()
    result = train(task, DATA, cfg, progress=False)
    assert task.evaluations == 0 and result["step"] == 3
    from xqa.training.loop import written   # the command says its model is there, not written now

    assert result["finished_before"] and written(result) == "already in"


def test_a_checkpoint_is_resumed_only_with_the_settings_that_made_it(tmp_path, monkeypatch):
    """Another learning rate, batch size or command setting (a reader's --n-context) would go on
    from a checkpoint made with the first ones as if it were theirs: refused, naming what differs;
    how long this run trains, how often it reports and on how many threads may change."""
    from dataclasses import replace

    from xqa.errors import XqaError

    b = tmp_path / "run"
    cfg = TrainConfig(out_dir=str(b), batch_size=8, epochs=3, lr=0.05, save_every=5, log_every=1)
    data_file = tmp_path / "train.jsonl"
    data_file.write_text("{}\n")
    settings = {"train": str(data_file), "n_context": 4, "threads": 2, "lang": "en"}
    try:
        train(DyingTask(die_at=8), DATA, cfg, progress=False, settings=settings)
    except Killed:
        pass
    for changed, named in ((replace(cfg, lr=0.1), "lr 0.05 → 0.1"),
                           (replace(cfg, batch_size=4), "batch_size 8 → 4")):
        with pytest.raises(XqaError, match=rf"holds a checkpoint of a training run with other settings \({named}\)"):
            train(RegressionTask(evaluate=False), DATA, changed, progress=False, settings=settings)
    with pytest.raises(XqaError, match=r"other settings \(n_context 4 → 8\): run it with the same settings to "
                                       r"resume it, train into another --out, or delete .*checkpoint"):
        train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings={**settings, "n_context": 8})
    assert json.load(open(b / "checkpoint" / "trainer_state.json"))["step"] == 5   # left as it was
    # begun by two processes (torchrun), resumed by one: each one's share of an epoch, the steps and
    # the schedule would change
    recorded = json.load(open(b / "config.json"))
    (b / "config.json").write_text(json.dumps({**recorded, "processes": 2}))
    with pytest.raises(XqaError, match=r"holds a checkpoint of a run of 2 processes, and this one has 1: .* "
                                       r"Resume it torchrun --nproc-per-node 2, train into another --out"):
        train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings=settings)
    (b / "config.json").write_text(json.dumps(recorded))
    # the same file named from elsewhere, more threads, another time limit and log interval: resumed
    # ("en" is a word, not the folder of that name at hand)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "en").mkdir()
    result = train(RegressionTask(evaluate=False), DATA, replace(cfg, log_every=3, max_minutes=60.0),
                   progress=False, settings={**settings, "train": "train.jsonl", "threads": 1})
    assert result["step"] == 24 and is_complete(b / "best")
    with pytest.raises(XqaError, match=r"other settings \(lr 0.05 → 0.1\): .* to start over here \(to train its "
                                       r"model further, start from it: --init .*run/best and another --out\)"):
        train(RegressionTask(evaluate=False), DATA, replace(cfg, lr=0.1), progress=False, settings=settings,
              init_from_best=True)


def test_a_checkpoint_of_another_kind_of_training_is_named_as_such(tmp_path):
    """A retriever trained into a reader's run folder: the run is named for what it trained,
    not listed as two dozen other settings."""
    from xqa.errors import XqaError

    b = tmp_path / "run"
    cfg = TrainConfig(out_dir=str(b), batch_size=8, epochs=3, lr=0.05, save_every=5, log_every=1)
    settings = {"n_context": 4, "family": "span"}
    with pytest.raises(Killed):
        train(DyingTask(die_at=8), DATA, cfg, progress=False, settings=settings, trains="a span reader")
    assert json.load(open(b / "config.json"))["trains"] == "a span reader"
    with pytest.raises(XqaError, match=r"holds a checkpoint of a training run of a span reader, not of a dense "
                                       r"retriever: train into another --out, or delete"):
        train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings={"hard_negatives": 1},
              trains="a dense retriever")
    recorded = json.load(open(b / "config.json"))
    del recorded["trains"]   # a run recorded without what it trains: its settings are compared
    (b / "config.json").write_text(json.dumps(recorded))
    with pytest.raises(XqaError, match=r"holds a checkpoint of a training run with other settings"):
        train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings={"hard_negatives": 1},
              trains="a dense retriever")
    assert json.load(open(b / "checkpoint" / "trainer_state.json"))["step"] == 5   # left as it was
    # the same kind, same settings: resumed
    result = train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings=settings,
                   trains="a span reader")
    assert result["step"] == 24


def test_a_checkpoint_is_not_resumed_over_a_training_file_written_again(tmp_path):
    """The checkpoint's data position points into the data it was trained on: the same path with
    other contents (lines removed; a file of a kit folder written again) is refused, naming it; the
    same contents resume, touched or copied elsewhere (cp without -p, another machine)."""
    import shutil

    from xqa.errors import XqaError

    b = tmp_path / "run"
    cfg = TrainConfig(out_dir=str(b), batch_size=8, epochs=3, lr=0.05, save_every=5, log_every=1)
    data_file, kit = tmp_path / "train.jsonl", tmp_path / "kit"
    data_file.write_text("{}\n{}\n")
    kit.mkdir()
    (kit / "arrays.npy").write_bytes(b"12")
    settings = {"train": str(data_file), "kit": str(kit), "lang": "en"}
    try:
        train(DyingTask(die_at=8), DATA, cfg, progress=False, settings=settings)
    except Killed:
        pass
    kept = tmp_path / "kept.jsonl"
    shutil.copy2(data_file, kept)
    data_file.write_text("{}\n")
    with pytest.raises(XqaError, match=rf"other settings \(train's {data_file} was changed since\)"):
        train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings=settings)
    shutil.copy2(kept, data_file)
    (kit / "arrays.npy").write_bytes(b"13")
    with pytest.raises(XqaError, match=rf"other settings \(kit's {kit} was changed since\)"):
        train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings=settings)
    assert json.load(open(b / "checkpoint" / "trainer_state.json"))["step"] == 5   # left as it was
    (kit / "arrays.npy").write_bytes(b"12")   # the same contents, written now
    moved = tmp_path / "copies"
    moved.mkdir()
    shutil.copy(data_file, moved / "train.jsonl")
    shutil.copytree(kit, moved / "kit")
    settings = {**settings, "train": str(moved / "train.jsonl"), "kit": str(moved / "kit")}
    result = train(RegressionTask(evaluate=False), DATA, cfg, progress=False, settings=settings)
    assert result["step"] == 24 and is_complete(b / "best")


def test_two_runs_into_one_folder_at_once_are_refused_and_a_dead_runs_lock_is_free(tmp_path):
    """A second run into OUT while another process trains there would interleave two runs'
    checkpoints: refused at once; the lock dies with its process."""
    import subprocess
    import sys

    from xqa.artifacts import lock_file
    from xqa.errors import XqaError

    cfg = TrainConfig(out_dir=str(tmp_path / "run"), batch_size=8, max_steps=3, log_every=1)
    holder = subprocess.Popen(   # another process trains into run/
        [sys.executable, "-c", "import sys, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
         "print('locked', flush=True); sys.stdin.read()", str(lock_file(tmp_path / "run"))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(XqaError, match=r"run is being written by another training run; wait for it to finish, "
                                           r"or write into another folder \(the lock it holds: "
                                           r".*/xqa-locks-\d+/run-\w+\.lock\)"):
            train(RegressionTask(), DATA, cfg, progress=False)
        assert not (tmp_path / "run" / "config.json").exists()
    finally:
        holder.kill()   # dies without releasing: the OS frees the lock
        holder.wait()
    assert train(RegressionTask(), DATA, cfg, progress=False)["step"] == 3


def test_a_finished_run_keeps_its_state_not_a_second_copy_of_its_weights(tmp_path):
    """best/ is the model; the last checkpoint of a finished run holds its state only (the weights
    and optimizer moments would be two more copies of the model on disk)."""
    from xqa.errors import XqaError

    cfg = TrainConfig(out_dir=str(tmp_path), batch_size=8, max_steps=6, save_every=2, log_every=1)
    train(RegressionTask(), DATA, cfg, progress=False)
    ckpt = tmp_path / "checkpoint"
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "trainer_state.json"]
    state = json.loads((ckpt / "trainer_state.json").read_text())
    assert state["done"] and state["step"] == 6 and is_complete(tmp_path / "best")
    assert train(RegressionTask(), DATA, cfg, progress=False)["step"] == 6      # a rerun: nothing to do
    shutil.rmtree(tmp_path / "best")
    with pytest.raises(XqaError, match=r"its training finished \(step 6\), but .*best is gone"):
        train(RegressionTask(), DATA, cfg, progress=False)


def test_epoch_order_covers_data_across_ranks():
    n, processes = 10, 3
    parts = [epoch_order(n, 2, 7, r, processes) for r in range(processes)]
    assert len({len(p) for p in parts}) == 1
    assert set(sum(parts, [])) == set(range(n))
    assert epoch_order(n, 2, 7, 0, processes) == parts[0]
    assert epoch_order(n, 3, 7, 0, processes) != parts[0]


def test_length_grouped_batches_cover_the_epoch_with_less_spread():
    from xqa.training import length_grouped_batches

    lengths = [(i * 37) % 101 for i in range(200)]
    order = epoch_order(200, 0, seed=1, rank=0, processes=1)
    batches = length_grouped_batches(order, lengths, batch_size=8, window=5, seed=1, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(200))    # every example once
    assert all(len(b) == 8 for b in batches)
    spread = lambda bs: sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in bs) / len(bs)
    plain = [order[i:i + 8] for i in range(0, 200, 8)]
    assert spread(batches) < 0.5 * spread(plain)                          # padding per batch shrinks
    assert batches == length_grouped_batches(order, lengths, 8, 5, seed=1, epoch=0)   # deterministic
    assert batches != length_grouped_batches(order, lengths, 8, 5, seed=1, epoch=1)   # reshuffled per epoch


class LengthTask(RegressionTask):
    def length(self, example):
        return int(example["x"] * 8)


def test_resume_is_exact_with_length_grouped_batches(tmp_path):
    cfg = dict(batch_size=8, epochs=3, lr=0.05, save_every=5, log_every=1, group_by_length=2)
    train(LengthTask(evaluate=False), DATA, TrainConfig(out_dir=str(tmp_path / "a"), **cfg), progress=False)

    class DyingLengthTask(DyingTask, LengthTask):
        pass

    b = tmp_path / "b"
    try:
        train(DyingLengthTask(die_at=8), DATA, TrainConfig(out_dir=str(b), **cfg), progress=False)
    except Killed:
        pass
    train(LengthTask(evaluate=False), DATA, TrainConfig(out_dir=str(b), **cfg), progress=False)
    wa, wb = _weights(tmp_path / "a" / "best"), _weights(b / "best")
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=0)
    # and a task without length() is refused, not silently batched at random
    try:
        train(RegressionTask(evaluate=False), DATA, TrainConfig(out_dir=str(tmp_path / "c"), **cfg), progress=False)
    except ValueError as e:
        assert "length(example)" in str(e)
    else:
        raise AssertionError("group_by_length without task.length() must fail")


# ------------------------------------------------------------------ the commands' configs

def _config_cases():
    from xqa.evaluation import tuning
    from xqa.runs import AnswerConfig
    from xqa.training import bm25_aug, dense, fid, lexical, span, tokenizer

    given = ["--out", "o"]
    return [
        (("train", "tokenizer"), ["--passages", "p", *given], tokenizer.TokenizerTrainConfig),
        (("train", "retriever"), ["--train", "t", "--passages", "p", *given], dense.DenseTrainConfig),
        (("train", "lexical"), ["--passages", "p", "--bm25", "b", *given], lexical.LexicalTrainConfig),
        (("train", "bm25-aug"), ["--train", "t", "--passages", "p", "--init", "i", *given],
         bm25_aug.Bm25AugTrainConfig),
        (("train", "reader"), given, fid.FidTrainConfig),
        (("train", "reader"), ["--arch", "span", *given], span.SpanTrainConfig),
        (("tune", "alpha"), ["--dev", "d"], tuning.AlphaTuneConfig),
        (("tune", "mu"), ["--dev", "d"], tuning.MuTuneConfig),
        (("tune", "lambda"), ["--dev", "d"], tuning.LambdaTuneConfig),
        (("tune", "fusion"), ["--model", "m", "--dev", "d", *given], tuning.FusionTuneConfig),
        (("tune", "answerability"), ["--records", "r", *given], tuning.AnswerabilityTuneConfig),
        (("answer",), ["--questions", "q", *given], AnswerConfig),
    ]


@pytest.mark.parametrize("case", range(12))
def test_a_flag_has_its_config_fields_default(case):
    """Each setting has one default: a command's flag defaults to its config field's."""
    import dataclasses

    from xqa.cli import build_parser

    words, argv, cls = _config_cases()[case]
    args = build_parser(words).parse_args(argv)
    named = {a.lstrip("-").replace("-", "_") for a in argv if a.startswith("--")}
    checked = 0
    for f in dataclasses.fields(cls):
        if f.name in named or f.name == "write_config" or not hasattr(args, f.name):
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        assert getattr(args, f.name) == default, (words, f.name)
        checked += 1
    assert checked >= 2, words


def test_a_training_given_a_folder_that_is_no_encoder_stops_before_writing(tiny_pipeline, tmp_path, capsys):
    """``--init`` a world (no model) is said before anything is written into --out: train lexical
    wrote its BM25 teacher's data first, and train bm25-aug ended in a transformers traceback."""
    from xqa.cli import main

    build = Path(tiny_pipeline).parent
    world = build / "world"
    for argv in (["train", "lexical", "--passages", str(world / "passages.jsonl"), "--bm25", str(build / "bm25")],
                 ["train", "bm25-aug", "--train", str(world / "train.jsonl"), "--passages",
                  str(world / "passages.jsonl")]):
        out = tmp_path / argv[1]
        assert main([*argv, "--init", str(world), "--out", str(out)]) == 1
        assert f"{world}: an xqa 'world' artifact, not the encoder" in capsys.readouterr().err
        assert not out.exists()
