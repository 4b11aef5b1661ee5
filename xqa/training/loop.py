"""One training loop for every xqa model (dense retriever, Λ, FiD reader).

A model package supplies a *task* (what a batch is, what the loss is, how to
validate and save); this module does the rest: AdamW with decoupled weight
decay, a linear schedule with warm-up, gradient accumulation and clipping,
bf16 autocast and gradient checkpointing on CUDA, torch distributed under
``torchrun`` (gloo on CPU, nccl on GPU), resumable checkpoints in safetensors
+ JSON, periodic validation that keeps the best artifact, a progress bar, and
metrics as JSONL.

Output folder ``OUT``::

    OUT/best/          the artifact to use (best validation; last if no validation)
    OUT/checkpoint/    resume state: model, optimizer, scheduler, step, data position, RNG
    OUT/metrics.jsonl  one JSON object per log / validation event
    OUT/config.json    the TrainConfig of the run and its command's settings

Running again with the same ``OUT`` and settings resumes where the last checkpoint left off
(other settings are refused: :func:`settings_changed`).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch

from xqa.distributed import DistInfo, _barrier, _mean_across, _reached, init_distributed, main_process, map_sharded  # noqa: F401
from xqa.artifacts import (artifact_kind, atomic_dir, exclusive, is_complete, save_config, write_json_atomic,
                           write_text_atomic)
from xqa.errors import XqaError


@dataclass
class TrainConfig:
    out_dir: str
    batch_size: int = 16
    epochs: float = 1.0
    max_steps: int = 0
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_steps: int = 0
    grad_accum: int = 1
    max_grad_norm: float = 1.0
    eval_every: int = 0
    save_every: int = 500
    seed: int = 0
    bf16: bool = True
    gradient_checkpointing: bool = False
    log_every: int = 10
    group_by_length: int = 0  # >0: batches of similar length within windows of this many batches
    max_minutes: float = 0.0  # >0: stop (checkpoint saved, resumable) after this many minutes of training

    def __post_init__(self) -> None:
        least = {"batch_size": 1, "grad_accum": 1, "log_every": 1, "save_every": 1, "max_steps": 0,
                 "warmup_steps": 0, "eval_every": 0, "group_by_length": 0}
        for name, low in least.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise XqaError(f"TrainConfig.{name}: a whole number of at least {low}, not {value!r}")
        for name in ("epochs", "lr", "weight_decay", "max_grad_norm", "max_minutes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise XqaError(f"TrainConfig.{name}: a number of at least 0, not {value!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        """A config from its fields by name; a name that is none of them is an error (a misspelt
        ``learning_rate`` would leave ``lr`` at its default without a word)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise XqaError(f"TrainConfig has no field {', '.join(map(repr, unknown))}; its fields: "
                           f"{', '.join(f.name for f in fields(cls))}")
        return cls(**d)


class TrainTask(Protocol):
    """What a model package supplies to :func:`train`.

    Optional hook: a task with ``backward_step(model, batch, *, scale, autocast)``
    runs its own forward and backward passes — it must add ``scale ×`` the
    gradient of the batch loss to the parameters' ``.grad``, run its forward
    computations inside ``autocast()`` contexts, and return the detached loss.
    The loop then calls it, with ``scale = 1 / grad_accum``, instead of
    ``task.loss`` and ``backward`` (the dense retriever's gradient cache needs
    several passes per batch);
    accumulation, clipping and the optimizer step stay the loop's.
    """

    model: torch.nn.Module
    metric: str

    def collate(self, examples: list[dict]) -> dict[str, Any]: ...

    def loss(self, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor: ...

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]: ...

    def save(self, model: torch.nn.Module, folder: Path) -> None: ...

    def enable_gradient_checkpointing(self) -> None: ...


# ----------------------------------------------------------------------------- data order


def epoch_order(n: int, epoch: int, seed: int, rank: int, processes: int) -> list[int]:
    """This rank's example indices for one epoch: a seeded permutation, strided by rank.

    Padded (wrapping around) so every rank sees the same number of examples, as
    ``DistributedSampler`` does; deterministic, so a resumed run skips exactly the
    batches it already trained on.
    """
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    perm = torch.randperm(n, generator=g).tolist()
    per_rank = math.ceil(n / processes)
    perm += perm[: per_rank * processes - n]
    return perm[rank::processes]


def length_grouped_batches(order: Sequence[int], lengths: Sequence[int], batch_size: int, window: int,
                           seed: int, epoch: int) -> list[list[int]]:
    """``order`` cut into batches of similar length: each window of ``window`` batches is
    sorted by length and cut, then all batches are shuffled (seeded by ``seed``, ``epoch``).

    Padding to the longest row of a batch is what a random batch wastes; grouping
    keeps the examples of an epoch and its randomness across windows and batches,
    and is deterministic, so a resumed run replays exactly the same batches.
    """
    span = max(1, window) * batch_size
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        chunk = sorted(order[start:start + span], key=lambda i: lengths[i])      # stable: ties keep order
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    g = torch.Generator().manual_seed(seed * 100_003 + epoch + 7)
    return [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]


def _native_cpu_bf16() -> bool:
    from xqa.encoders.info import bf16_supported

    return bf16_supported()


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


# ----------------------------------------------------------------------------- checkpoints


def _optimizer_to_files(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for idx, st in sd["state"].items():
        for name, val in st.items():
            if isinstance(val, torch.Tensor):
                tensors[f"{idx}.{name}"] = val.detach().cpu().contiguous()
            else:
                scalars[f"{idx}.{name}"] = val
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _optimizer_from_files(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    state: dict[int, dict[str, Any]] = {}
    for key, val in list(tensors.items()) + list(meta["scalars"].items()):
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = val
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def _save_model(model: torch.nn.Module, path: Path) -> None:
    """``safetensors.torch.save_model`` with the same bytes for the same weights: a tied tensor (T5's
    embeddings) is stored once, under its first name in sorted order, and no other names are
    listed in the metadata (``save_model`` lists them there, in an order that varies from process to
    process). ``safetensors.torch.load_model`` reads it: it finds the ties in the model."""
    from safetensors.torch import save_file

    kept: set[tuple] = set()
    tensors: dict[str, torch.Tensor] = {}
    for name, t in sorted(model.state_dict().items()):
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if key not in kept:
            kept.add(key)
            tensors[name] = t.detach().contiguous()
    save_file(tensors, str(path), metadata={"format": "pt"})


def _save_checkpoint(folder: Path, model: torch.nn.Module, opt, sched, state: dict) -> None:
    """What a rerun resumes from. A finished run's (``state["done"]``) keeps its state only: a
    rerun has nothing left to train, ``best/`` is the model, and the weights and optimizer moments
    would take twice or three times the model's size on disk for nothing."""
    from safetensors.torch import save_file

    with atomic_dir(folder, overwrite=True) as tmp:
        if state.get("done"):
            write_json_atomic(tmp / "trainer_state.json", state)
            save_config(tmp, "checkpoint", {"step": state["step"], "weights": False})
            return
        _save_model(model, tmp / "model.safetensors")
        tensors, meta = _optimizer_to_files(opt)
        save_file(tensors, str(tmp / "optimizer.safetensors"))
        rng = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state()
        save_file(rng, str(tmp / "rng.safetensors"))
        py_state = random.getstate()
        write_json_atomic(tmp / "trainer_state.json", {
            **state,
            "optimizer": meta,
            "scheduler": sched.state_dict(),
            "python_rng": [py_state[0], list(py_state[1]), py_state[2]],
        })
        save_config(tmp, "checkpoint", {"step": state["step"]})


def _load_checkpoint(folder: Path, model: torch.nn.Module, opt, sched) -> dict:
    from safetensors.torch import load_file, load_model

    with open(folder / "trainer_state.json", encoding="utf-8") as f:
        state = json.load(f)
    if not (folder / "model.safetensors").is_file():   # a finished run's: its state only
        if not state.get("done"):
            raise XqaError(f"{folder}: a checkpoint without its weights; delete it to train from the start")
        return state
    load_model(model, str(folder / "model.safetensors"))
    _optimizer_from_files(opt, load_file(str(folder / "optimizer.safetensors")), state.pop("optimizer"))
    sched.load_state_dict(state.pop("scheduler"))
    rng = load_file(str(folder / "rng.safetensors"))
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state(rng["cuda"])
    v, internal, gauss = state.pop("python_rng")
    random.setstate((v, tuple(internal), gauss))
    return state


# ----------------------------------------------------------------------------- the loop


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 else decay).append(p)  # biases and norms: no decay
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int):
    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _trim_metrics(path: Path, step: int) -> None:
    """Keep the metrics logged up to ``step`` (the checkpoint a run resumes from): the steps after
    it are trained again and logged again, so each step is in the log once."""
    if not path.is_file():
        return
    kept = []
    with open(path, "rb") as f:
        for line in f:
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                break  # a torn last line
            if not line.endswith(b"\n") or record.get("step", 0) > step:
                break
            kept.append(line.decode("utf-8"))
    write_text_atomic(path, "".join(kept))


class _Log:
    def __init__(self, path: Path, enabled: bool):
        self.path, self.enabled = path, enabled

    def write(self, record: dict) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")


# what a resumed run may change: where it writes, how long it trains this time, how often it
# reports and validates, and how it computes (threads, bf16 autocast, gradient checkpointing)
RESUMABLE = frozenset({"out", "out_dir", "max_minutes", "log_every", "save_every", "eval_every", "progress",
                       "threads", "bf16", "gradient_checkpointing", "arrow_cache"})


def _existing_path(value: Any) -> Path | None:
    """The file or folder a setting's value names, where it names one that exists: a string with
    a separator or a dot in it (a word such as a language code, "en", stays a word even where a
    folder of that name is at hand), or such a path with a ``:LANG`` suffix (``mine.json:zh``)."""
    if not isinstance(value, str) or not (os.sep in value or "." in value):
        return None
    for candidate in (value, value.rpartition(":")[0]):
        if candidate and os.path.exists(candidate):
            return Path(candidate)
    return None


def _recorded(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` as config.json keeps them: JSON values, a path that exists made absolute (a
    resumed run given it from another folder names the same file; :func:`_existing_path`)."""
    def one(value: Any) -> Any:
        if isinstance(value, str) and os.path.exists(value) and _existing_path(value) is not None:
            return str(Path(value).resolve())
        return value

    return json.loads(json.dumps({k: one(v) for k, v in settings.items()}, default=str))


INPUTS = "inputs"   # config.json: a stamp of each file or folder the settings name (_input_stamps)


def _input_stamps(settings: dict[str, Any]) -> dict[str, str]:
    """What each file or folder a setting names holds (:func:`xqa.artifacts.content_fingerprint`:
    not its path or time), by the setting's name: what tells a training file edited or written
    again from the one a checkpoint's data position points into, and a copy of it (elsewhere,
    without its times) from another file. The output folder and the other :data:`RESUMABLE`
    settings are left out."""
    from xqa.artifacts import content_fingerprint

    stamps: dict[str, str] = {}
    for name, value in settings.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if name in RESUMABLE or not values or not all(isinstance(v, str) for v in values):
            continue
        said = []
        for v in values:
            path = _existing_path(v)
            if path is None:
                break
            said.append(content_fingerprint(path))
        else:
            stamps[name] = "; ".join(said)
    return stamps


def run_summary(result: dict) -> str:
    """``step 300; kept: step 200, mrr 0.949``: the last step and the one ``best/`` holds (just the
    step where the run validated on nothing)."""
    best = result.get("best")
    if not isinstance(best, (int, float)):
        return f"step {result['step']}"
    kept = f"step {result['best_step']}, " if result.get("best_step") is not None else ""
    return f"step {result['step']}; kept: {kept}mrr {best:.4g}"


def dev_said(n: int, limit: int | None = None) -> str:
    """``"816 dev questions"``, or with a ``limit`` below it (``--dev-limit``, ``--dev-questions``)
    the ones validated on: ``"8 of 816 dev questions validated on"``."""
    return f"{n} dev questions" if not limit or limit >= n else f"{limit} of {n} dev questions validated on"


def written(result: dict) -> str:
    """How a command says where its model is: "written to", or "already in" for a run whose
    training had finished before (:func:`train` trained nothing)."""
    return "already in" if result.get("finished_before") else "written to"


def settings_changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two runs' records (config.json's ``train_config`` and ``settings``)
    outside :data:`RESUMABLE`, each as "name old → new" (:func:`xqa.runs.changed_settings`); a
    file a setting names that was written again since (its :data:`INPUTS` stamp) as "NAME's file
    PATH was changed"."""
    from xqa.runs import changed_settings

    changed: dict[str, str] = {}   # a setting in both parts (lr) is named once
    for part in ("train_config", "settings"):
        a, b = old.get(part), new.get(part)
        if isinstance(a, dict) and isinstance(b, dict):  # a run recorded without them: not compared
            for name, said in changed_settings(a, b, RESUMABLE).items():
                changed.setdefault(name, said)
    a, b = old.get(INPUTS), new.get(INPUTS)
    if isinstance(a, dict) and isinstance(b, dict):   # a run recorded without stamps: not compared
        for name in sorted(set(a) & set(b)):
            if not (a[name].startswith("content ") and b[name].startswith("content ")):
                continue   # stamped by size and time (an older run): not compared
            if a[name] == b[name]:   # the same contents: a copy elsewhere is the same data
                changed.pop(name, None)
            elif name not in changed:   # the same path, other contents
                changed[name] = f"{name}'s {(new.get('settings') or {}).get(name)} was changed since"
    return list(changed.values())


def _check_resume(out: Path, record: dict[str, Any], init_from_best: bool = False, processes: int = 1) -> None:
    """Refuse to go on with a checkpoint in ``out`` that a run with other settings left, a run of
    another number of ``processes``, or a run that trained another kind of model (its ``trains``);
    with ``init_from_best`` (its command's --init takes ``OUT/best``), say how to train a finished
    run's model further."""
    if not is_complete(out / "checkpoint"):
        return
    try:
        old = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no record of the run: resume as before
    from xqa.runs import said_changes

    other = _other_training(old, record)
    if other:
        raise XqaError(f"{out} holds a checkpoint of {other}: train into another --out, or delete {out} "
                       f"to start over there")

    changed = settings_changed(old, record)
    if changed:
        shown = said_changes(changed)
        try:
            done = json.loads((out / "checkpoint" / "trainer_state.json").read_text(encoding="utf-8")).get("done")
        except (OSError, ValueError):
            done = False
        further = (f" (to train its model further, start from it: --init {out / 'best'} and another --out)"
                   if init_from_best and done and is_complete(out / "best") else "")
        raise XqaError(f"{out} holds a checkpoint of a training run with other settings ({shown}): run it with "
                       f"the same settings to resume it, train into another --out, or delete {out / 'checkpoint'} "
                       f"to start over here{further}")
    was = old.get("processes")
    if isinstance(was, int) and not isinstance(was, bool) and was != processes:
        how = "without torchrun (one process)" if was == 1 else f"torchrun --nproc-per-node {was}"
        raise XqaError(f"{out} holds a checkpoint of a run of {was} process{'es' if was != 1 else ''}, and this "
                       f"one has {processes}: each process's share of an epoch, and with it the number of steps "
                       f"and the learning-rate schedule, depend on how many there are. Resume it {how}, train "
                       f"into another --out, or delete {out / 'checkpoint'} to start over here")


def _other_training(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What the run ``old`` (a config.json) trained, where it is another kind of training than
    ``new`` (a record of :func:`train`): ``"a training run of a span reader, not of a dense
    retriever"``; else (or where ``old`` does not say) ``""``. (Settings of other names are no
    sign of another command: a later xqa's command may have an option more.)"""
    a, b = old.get("trains"), new.get("trains")
    if isinstance(a, str) and a and b and a != b:
        return f"a training run of {a}, not of {b}"
    return ""


def train(task: TrainTask, dataset: Sequence[dict], config: TrainConfig, progress: bool = True,
          settings: dict[str, Any] | None = None, init_from_best: bool = False, trains: str = "") -> dict:
    """Train ``task.model`` on ``dataset``; see the module docstring for the outputs.

    ``settings``: the command's own (model, data), recorded with ``config`` in ``OUT/config.json``;
    a checkpoint left by a run with other settings (outside :data:`RESUMABLE`) is not resumed, nor
    is ``OUT`` trained into by two runs at once (an OS lock, :func:`xqa.artifacts.exclusive`).
    ``init_from_best``: the command's --init takes ``OUT/best`` (said when a finished run is
    given other settings). ``trains``: what the run trains ("a span reader"), recorded, so that
    a run of another kind is not resumed as one with other settings."""
    info = init_distributed()
    out = Path(config.out_dir)
    with (exclusive(out, f"{out} is being written by another training run") if info.main
          else contextlib.nullcontext()):   # rank 0 alone writes the folder
        return _train(task, dataset, config, progress, settings, info, out, init_from_best, trains)


def _train(task: TrainTask, dataset: Sequence[dict], config: TrainConfig, progress: bool,
           settings: dict[str, Any] | None, info: DistInfo, out: Path, init_from_best: bool,
           trains: str = "") -> dict:
    from tqdm.auto import tqdm

    held = artifact_kind(out)
    if held not in (None, "training_run"):   # another artifact (an index, a reader): not overwritten
        raise XqaError(f"{out} holds a {held} (its config.json), not a training run: train into another --out")
    record: dict[str, Any] = {"train_config": _recorded(asdict(config))}
    if trains:
        record["trains"] = trains
    if settings is not None:
        record["settings"] = _recorded(settings)
        record[INPUTS] = _input_stamps(record["settings"])
    _check_resume(out, record, init_from_best, info.processes)
    if info.main:
        out.mkdir(parents=True, exist_ok=True)
        save_config(out, "training_run", {**record, "processes": info.processes})
    random.seed(config.seed + info.rank)
    np.random.seed(config.seed + info.rank)
    torch.manual_seed(config.seed + info.rank)

    n = len(dataset)
    if n == 0:
        raise XqaError("the training set is empty")
    if not config.max_steps and config.epochs <= 0:
        raise XqaError(f"--epochs {config.epochs:g} trains no step: give a number of passes above 0, or --max-steps")
    per_rank = math.ceil(n / info.processes)
    batches_per_epoch = math.ceil(per_rank / config.batch_size)
    steps_per_epoch = max(1, batches_per_epoch // config.grad_accum)
    total = config.max_steps or max(1, math.ceil(config.epochs * steps_per_epoch))

    cuda = info.device.type == "cuda"
    if config.gradient_checkpointing and cuda:
        task.enable_gradient_checkpointing()
    model = task.model.to(info.device)
    groups = (task.param_groups(model, config.weight_decay, config.lr) if hasattr(task, "param_groups")
              else _param_groups(model, config.weight_decay))
    opt = torch.optim.AdamW(groups, lr=config.lr)
    sched = linear_schedule(opt, config.warmup_steps, total)

    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "best": None, "best_step": None, "done": False}
    ckpt = out / "checkpoint"
    saved = None   # the step of the checkpoint a rerun resumes from
    if is_complete(ckpt):
        state = _load_checkpoint(ckpt, model, opt, sched)
        saved = state["step"]
        if info.main:
            print(f"resuming from {ckpt} at step {state['step']}/{total}")
            _trim_metrics(out / "metrics.jsonl", state["step"])
    elif info.main:
        _trim_metrics(out / "metrics.jsonl", 0)  # a run killed before its first checkpoint starts over
    if state.get("done") and is_complete(out / "best"):
        if info.main:
            print(f"{out}: training already finished (step {state['step']}); nothing to do")
        return {"step": state["step"], "best": state["best"], "best_step": state.get("best_step"),
                "finished_before": True}
    if state.get("done"):
        raise XqaError(f"{out}: its training finished (step {state['step']}), but {out / 'best'} is gone; "
                       f"train again into another --out, or delete {ckpt} to train here from the start")

    wrapped: torch.nn.Module = model
    if info.processes > 1:
        from torch.nn.parallel import DistributedDataParallel

        wrapped = DistributedDataParallel(model, device_ids=[info.local_rank] if cuda else None)

    log = _Log(out / "metrics.jsonl", info.main)
    bar = tqdm(total=total, initial=state["step"], desc=f"train {out.name}", unit="step",
               disable=not (progress and info.main), dynamic_ncols=True)
    last_eval: dict[str, float] = {}

    def evaluate_and_keep() -> None:
        nonlocal last_eval
        state["evaluated_step"] = state["step"]
        if info.main:
            model.eval()
            with torch.no_grad():
                metrics = task.evaluate(model) or {}
            model.train()
            last_eval = metrics
            if metrics:
                if task.metric not in metrics:
                    raise XqaError(f"the task's metric {task.metric!r} is none of what its evaluate() returned: "
                                   f"{', '.join(map(repr, metrics))}")
                value = float(metrics[task.metric])
                log.write({"step": state["step"], "eval": metrics})
                bar.write(f"step {state['step']}: " + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()))
                if state["best"] is None or value > state["best"]:
                    state["best"], state["best_step"] = value, state["step"]
                    with atomic_dir(out / "best", overwrite=True) as tmp:
                        task.save(model, tmp)
        _barrier(info)

    # bf16 autocast on CUDA; on CPU only for tasks that ask for it (``cpu_bf16``, the pretrained
    # encoders) and only where the CPU has native bf16 (elsewhere it is emulated and slower)
    cpu_bf16 = (not cuda and config.bf16 and getattr(task, "cpu_bf16", False)
                and _native_cpu_bf16())

    def autocast():
        if cpu_bf16:
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda and config.bf16)

    backward_step = getattr(task, "backward_step", None)  # optional hook, see TrainTask
    lengths = None
    if config.group_by_length > 0:
        if not hasattr(task, "length"):
            raise ValueError(f"group_by_length needs a task with length(example); {type(task).__name__} has none")
        lengths = [task.length(ex) for ex in dataset]
    model.train()
    # the loss of the log window in progress is part of the checkpoint, so a resumed run logs what
    # an uninterrupted one does
    window_loss, window_batches = state.pop("window_loss", 0.0), state.pop("window_batches", 0)
    window_examples, t0 = 0, time.perf_counter()
    deadline = time.monotonic() + 60 * config.max_minutes if config.max_minutes > 0 else None
    stopped = False
    accum = 0
    try:
        while state["step"] < total and not stopped:
            order = epoch_order(n, state["epoch"], config.seed, info.rank, info.processes)
            if lengths is None:
                batches = [order[i:i + config.batch_size] for i in range(0, len(order), config.batch_size)]
            else:
                batches = length_grouped_batches(order, lengths, config.batch_size, config.group_by_length,
                                                 config.seed, state["epoch"])
            for b in range(state["batch_in_epoch"], len(batches)):
                batch = _to_device(task.collate([dataset[i] for i in batches[b]]), info.device)
                if backward_step is not None:
                    loss = backward_step(wrapped, batch, scale=1.0 / config.grad_accum, autocast=autocast)
                else:
                    with autocast():
                        loss = task.loss(wrapped, batch)
                    (loss / config.grad_accum).backward()
                window_loss += float(loss.detach())
                window_batches += 1
                window_examples += len(batches[b])
                accum += 1
                state["batch_in_epoch"] = b + 1
                if accum < config.grad_accum:
                    continue
                accum = 0
                if config.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                state["step"] += 1
                bar.update(1)
                if state["step"] % config.log_every == 0 or state["step"] == total:
                    dt = time.perf_counter() - t0
                    mean_loss = _mean_across(window_loss / max(1, window_batches), info)
                    rate = window_examples * info.processes / max(dt, 1e-9)
                    bar.set_postfix(loss=f"{mean_loss:.4f}", ex_s=f"{rate:.1f}")
                    log.write({"step": state["step"], "loss": mean_loss, "lr": sched.get_last_lr()[0],
                               "examples_per_s": rate})
                    window_loss, window_batches, window_examples, t0 = 0.0, 0, 0, time.perf_counter()
                if config.eval_every and state["step"] % config.eval_every == 0:
                    evaluate_and_keep()
                if state["step"] % config.save_every == 0 and state["step"] < total:
                    window = {"window_loss": _mean_across(window_loss, info), "window_batches": window_batches}
                    if info.main:
                        _save_checkpoint(ckpt, model, opt, sched, {**state, **window})
                    _barrier(info)
                    saved = state["step"]
                if state["step"] >= total:
                    break
                if deadline is not None and _reached(deadline, info):
                    stopped = True
                    break
            else:
                state["epoch"] += 1
                state["batch_in_epoch"] = 0
                if not config.eval_every:
                    evaluate_and_keep()
    except KeyboardInterrupt:   # Ctrl+C: say where a rerun goes on from (the command says "interrupted")
        bar.close()
        if info.main:
            print(f"{out}: stopped at step {state['step']}/{total}; " + (
                f"a rerun resumes from the checkpoint of step {saved}" if saved is not None else
                f"no checkpoint yet (one every {config.save_every} steps): a rerun starts over"), file=sys.stderr)
        raise
    bar.close()
    if state.get("evaluated_step") != state["step"]:
        evaluate_and_keep()
    if stopped:   # out of time: keep everything needed to go on
        window = {"window_loss": _mean_across(window_loss, info), "window_batches": window_batches}
        if info.main:
            print(f"stopped after {config.max_minutes:g} minutes at step {state['step']}/{total}; "
                  f"run the command again to go on")
            if state["best"] is None:
                with atomic_dir(out / "best", overwrite=True) as tmp:
                    task.save(model, tmp)
            _save_checkpoint(ckpt, model, opt, sched, {**state, **window})
        _barrier(info)
        return {"step": state["step"], "best": state["best"], "best_step": state["best_step"], "stopped": True,
                **last_eval}
    if state["best"] is None and info.main:
        with atomic_dir(out / "best", overwrite=True) as tmp:  # no validation: keep the last model
            task.save(model, tmp)
    state["done"] = True
    if info.main:
        _save_checkpoint(ckpt, model, opt, sched, state)
    _barrier(info)
    return {"step": state["step"], "best": state["best"], "best_step": state["best_step"], **last_eval}
