"""A full disk or a read-only output folder: a clear one-line error, and the previous artifact intact.

Artifacts are written under a temporary name and renamed when complete
(``xqa.artifacts``). The first tests fill a real, tiny tmpfs and then make it
read-only (they need the mount privilege a root CI has, and are skipped
without it); the others inject the operating system's error into the
writers, which runs anywhere.
"""
from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from xqa.artifacts import atomic_dir, write_json_atomic, write_text_atomic


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


@pytest.fixture
def small_disk(tmp_path):
    """A 900 kB tmpfs: room for one small world (~560 kB), not for a second beside it."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=900k", "tmpfs", str(mnt)],
                              capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        pytest.skip("no mount command")
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)


def test_a_full_disk_then_a_read_only_one_leave_the_previous_world_intact(small_disk, capsys):
    from xqa.cli import main

    world = small_disk / "world"
    assert main(["world", "build", "--size", "small", "--out", str(world)]) == 0
    before = _snapshot(world)
    capsys.readouterr()
    # the new world is written beside the old one, which it would replace: the disk fills
    assert main(["world", "build", "--size", "small", "--seed", "1", "--overwrite", "--out", str(world)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert "No space left on device" in err and "the disk is full" in err and "run the same command again" in err
    assert _snapshot(world) == before
    assert _leftovers(small_disk) == []
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True, timeout=30)
    assert main(["world", "build", "--size", "small", "--seed", "1", "--overwrite", "--out", str(world)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Read-only file system" in err and "choose another output folder" in err
    assert _snapshot(world) == before


# ----------------------------------------------------------------------------- injected errors


def _failing_write(monkeypatch, code: int, after: int = 0):
    """Make the ``after``-th and later writes to files opened through os.fdopen fail with ``code``."""
    real_fdopen = os.fdopen
    calls = {"n": 0}

    class Failing:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            calls["n"] += 1
            if calls["n"] > after:
                raise OSError(code, os.strerror(code))
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: Failing(real_fdopen(fd, *a, **k)))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_failed_file_write_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch, code):
    target = tmp_path / "predictions.json"
    write_json_atomic(target, {"q1": "old"})
    _failing_write(monkeypatch, code)
    with pytest.raises(OSError) as e:
        write_text_atomic(target, "new" * 1000)
    assert e.value.errno == code
    assert target.read_text() == '{\n  "q1": "old"\n}\n'
    assert _leftovers(tmp_path) == []


def test_a_file_written_where_a_folder_is_says_so_and_leaves_no_temporary(tmp_path, capsys):
    from xqa.cli import main
    from xqa.errors import XqaError

    folder = tmp_path / "results"
    folder.mkdir()
    with pytest.raises(XqaError, match=r"results is a folder; name a file to write there"):
        write_json_atomic(folder, {"a": 1})
    assert _leftovers(tmp_path) == [] and folder.is_dir() and not any(folder.iterdir())
    # xqa search says it before searching (nothing is loaded: no pipeline here)
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "1", "question": "Who?", "lang": "en"}\n', encoding="utf-8")
    assert main(["search", "--questions", str(questions), "--out", str(folder),
                 "--config", str(tmp_path / "absent.json")]) == 1
    assert "--out " + str(folder) + " is a folder" in capsys.readouterr().err
    # and xqa answer, which writes a folder, is not given a file's name
    assert main(["answer", "--questions", str(questions), "--out", str(questions),
                 "--config", str(tmp_path / "absent.json")]) == 1
    assert f"--out {questions} is a file; xqa answer writes a folder there" in capsys.readouterr().err
    assert questions.read_text(encoding="utf-8").startswith('{"id": "1"')


def test_an_artifact_folders_files_are_readable_as_the_umask_allows(tmp_path):
    """safetensors writes its files 0600: in an artifact they get the ordinary permissions, so
    that another account (a demo's service user) can read the model."""
    import torch
    from safetensors.torch import save_file

    mask = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "model") as tmp:
            save_file({"w": torch.zeros(2)}, str(tmp / "model.safetensors"))
            (tmp / "run.sh").write_text("#!/bin/sh\n")
            os.chmod(tmp / "run.sh", 0o700)   # a mode chosen on purpose is kept
    finally:
        os.umask(mask)
    assert (tmp_path / "model" / "model.safetensors").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "model" / "run.sh").stat().st_mode & 0o777 == 0o700


def test_a_failed_artifact_folder_keeps_the_old_folder(tmp_path):
    target = tmp_path / "index"
    with atomic_dir(target) as tmp:
        (tmp / "config.json").write_text("{}")
        (tmp / "ids.txt").write_text("a\nb\n")
    before = _snapshot(target)
    with pytest.raises(OSError):
        with atomic_dir(target, overwrite=True) as tmp:
            (tmp / "ids.txt").write_text("c\n")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp / "vectors.npy"))
    assert _snapshot(target) == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("code, hint", [(errno.ENOSPC, "the disk is full"),
                                        (errno.EROFS, "read-only file system"),
                                        (errno.EACCES, "no permission to write there")])
def test_the_cli_names_the_failed_path_and_what_to_do(tmp_path, monkeypatch, capsys, code, hint):
    from xqa.cli import main

    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "1", "question": "?", "answers": ["a"], "lang": "en"}\n', encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text('{"1": "a"}', encoding="utf-8")
    out = tmp_path / "scores.json"
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--json", str(out)]) == 0
    before = out.read_bytes()
    real_mkstemp = __import__("tempfile").mkstemp

    def mkstemp(*a, dir=None, **k):
        if Path(dir) == tmp_path:
            raise OSError(code, os.strerror(code), str(dir))
        return real_mkstemp(*a, dir=dir, **k)

    monkeypatch.setattr("tempfile.mkstemp", mkstemp)
    capsys.readouterr()
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--json", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("xqa eval: error: ") and str(tmp_path) in err and hint in err
    assert "earlier artifacts there are left as they were" in err
    assert out.read_bytes() == before


def test_temporaries_of_a_killed_writer_are_removed_by_the_next_and_a_live_ones_kept(tmp_path):
    """A writer killed mid-way leaves its temporary; the next write of the same artifact removes it.
    A temporary of a process that still runs (another writer at work) is left alone."""
    killed = subprocess.Popen(["sleep", "0"])
    killed.wait()  # a process id that no longer runs
    live = subprocess.Popen(["sleep", "60"])
    try:
        target = tmp_path / "index"
        dead_dir = tmp_path / f".index.{killed.pid}-abc.tmp"
        live_dir = tmp_path / f".index.{live.pid}-def.tmp"
        other = tmp_path / f".index2.{killed.pid}-ghi.tmp"  # another artifact's: not this writer's to remove
        for d in (dead_dir, live_dir, other):
            d.mkdir()
            (d / "half.npy").write_bytes(b"x")
        with atomic_dir(target) as tmp:
            (tmp / "done").write_text("1")
        assert not dead_dir.exists() and live_dir.exists() and other.exists()
        assert (target / "done").read_text() == "1"

        dead_file = tmp_path / f".a.json.{killed.pid}-xyz.tmp"
        dead_file.write_text("{")
        write_json_atomic(tmp_path / "a.json", {"k": 1})
        assert not dead_file.exists()
        assert sorted(_leftovers(tmp_path)) == sorted([live_dir.name, other.name])
    finally:
        live.kill()
        live.wait()
