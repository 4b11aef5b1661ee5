"""The stage runner of every build recipe.

A build is a list of stages, each ``(name, done, run[, skipped])``: ``done()`` says whether the stage's
artifact is complete, ``run()`` makes it. :meth:`Build.run` runs the stages in order, skips
each one that is done, and checks after running a stage that its artifact is complete. The
long stages resume from their own checkpoints, so a killed build continues where it stopped
and a second build costs seconds.

Stages call library functions, in this process or, where one-thread processes side by side
are faster, in separate processes (:func:`call_in_processes`: ``python -m xqa.recipes.runner``
calls one function with its typed config), or as one torch-distributed job of several
processes (:func:`call_distributed`).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from xqa.artifacts import quiet_model_bars
from xqa.errors import XqaError, warnings_as_lines


class Stage(NamedTuple):
    name: str
    done: Callable[[], bool]
    run: Callable[[], None]
    skipped: str = "built"   # what is said of a stage that is done before it runs


def run_stages(stages: list[Stage]) -> dict[str, float]:
    """Run each stage that is not done, in order; the seconds each one that ran took. Each stage
    is announced with its number, and transformers' per-model loading and saving bars are left
    out of it (:func:`~xqa.artifacts.quiet_model_bars`)."""
    times = {}
    for i, (name, done, run, skipped) in enumerate(stages, 1):
        if done():
            print(f"[{i}/{len(stages)}] {name}: {skipped}", flush=True)
            continue
        print(f"[{i}/{len(stages)}] {name} ...", flush=True)
        t0 = time.perf_counter()
        with quiet_model_bars():
            run()
        if not done():
            raise XqaError(f"stage {name!r} ran but its artifact is not complete")
        times[name] = round(time.perf_counter() - t0, 1)
        print(f"[{i}/{len(stages)}] {name}: done in {times[name]:.0f} s", flush=True)
    return times


class Build:
    """A pipeline built stage by stage into ``out``; a recipe says its stages."""

    out: Path

    @property
    def passages(self) -> Path:
        raise NotImplementedError

    @property
    def config_path(self) -> Path:
        return self.out / "pipeline.json"

    def stages(self) -> list[Stage]:
        raise NotImplementedError

    def check_out(self) -> None:
        """Refuse an ``out`` that holds another recipe's build."""

    def finish(self, times: dict[str, float], seconds: float) -> None:
        """Said (and recorded) when every stage is done."""
        print(f"pipeline ready in {self.out} ({seconds:.0f} s); pipeline config: {self.config_path}", flush=True)

    def run(self) -> Path:
        from xqa.artifacts import exclusive

        self.check_out()
        made = not self.out.exists()
        self.out.mkdir(parents=True, exist_ok=True)
        try:
            with exclusive(self.out, f"{self.out} is being built by another process"):
                t0 = time.perf_counter()
                times = run_stages(self.stages())
                self.finish(times, time.perf_counter() - t0)
        except BaseException:
            if made and not any(self.out.iterdir()):   # failed before its first stage wrote anything
                self.out.rmdir()
            raise
        return self.config_path


def finished(run_dir: Path) -> bool:
    """A training run (``xqa.training``) that reached its last step."""
    state = run_dir / "checkpoint" / "trainer_state.json"
    return state.is_file() and json.loads(state.read_text(encoding="utf-8")).get("done", False)


def retrieve(config: str | Path, questions: str | Path, k: int, out: str | Path) -> None:
    """The top ``k`` passages of each question of the file ``questions``, searched by the pipeline
    of ``config``, written to ``out`` (:func:`xqa.runs.search_questions`)."""
    from xqa.config import PipelineConfig
    from xqa.io import read_questions
    from xqa.pipeline import Pipeline
    from xqa.runs import search_questions

    cfg = PipelineConfig.load(config)
    cfg.retrieval.k = k
    qs = read_questions(questions)
    results = search_questions(Pipeline(cfg), qs, out)
    print(f"{len(results)} questions → {out}", flush=True)


def call_in_processes(calls: list[tuple[Callable[..., Any], dict[str, Any]]]) -> None:
    """``function(**arguments)`` for each call, as separate one-thread processes side by side.

    The arguments travel as JSON: strings, numbers, paths, lists, dicts, and dataclasses of
    those (a typed config is rebuilt as its own class in the process)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    procs = [subprocess.Popen([sys.executable, "-m", "xqa.recipes.runner",
                               json.dumps({"call": _name(fn), "arguments": _encode(arguments)})], env=env)
             for fn, arguments in calls]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise XqaError(f"stage failed: {_name(calls[0][0])} in {len(calls)} processes (exit codes {codes})")


def call_distributed(procs: int, function: Callable[..., Any], arguments: dict[str, Any]) -> None:
    """``function(**arguments)`` as ``procs`` processes of one torch-distributed job (gloo on CPU).

    The processes meet at a free port of 127.0.0.1; the function shares its work between them
    (training: each takes its share of every batch). With ``procs`` 1 it runs in this process.
    The arguments travel as in :func:`call_in_processes`; each process has one OpenMP thread.
    """
    if procs <= 1:
        function(**arguments)
        return
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a free port for the rendezvous, on the loopback interface only
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", str(procs),
           "--master-addr", "127.0.0.1", "--master-port", str(port), "-m", "xqa.recipes.runner",
           json.dumps({"call": _name(function), "arguments": _encode(arguments)})]
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    code = subprocess.run(cmd, env=env).returncode
    if code:
        raise XqaError(f"stage failed: {procs} processes of {_name(function)} (exit {code})")


def _name(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _find(name: str) -> Any:
    from xqa.lazy import resolve

    return resolve(name)


def _encode(value: Any) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__config__": _name(type(value)),
                "fields": {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "__config__" in value:
            return _find(value["__config__"])(**_decode(value["fields"]))
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _main(payload: str) -> int:
    """One call of :func:`call_in_processes` or :func:`call_distributed`, in its own process."""
    import sys

    task = json.loads(payload)
    try:
        with quiet_model_bars(), warnings_as_lines(task["call"]):  # part of a stage, said as the stage says it
            _find(task["call"])(**_decode(task["arguments"]))
    except (XqaError, FileNotFoundError, FileExistsError) as e:
        print(f"{task['call']}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:   # Ctrl+C reaches every process of the group: the command says "interrupted"
        return 130
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(_main(sys.argv[1]))
