"""The readers' artifacts, one typed config and one function each: the training kit that
travels (:func:`make_kit`), the reader stored as its int8 difference to the base encoder
(:func:`pack_reader`, :func:`unpack_reader`) and its int8 CPU runtime (:func:`build_runtime`).

``xqa reader kit|pack|unpack|runtime`` make their options from these configs
(:mod:`xqa.cli_config`) and call these functions; the work is done by ``reader.span``.
Importing this module loads nothing heavy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

Log = Callable[[str], None]


@dataclass
class KitConfig:
    data: str = field(metadata={
        "metavar": "DIR", "help": "xqa data train's output folder (train.jsonl, dev.jsonl, passages.jsonl)"})
    base: str = field(metadata={"help": "the converted encoder (xqa convert e5 --out DIR)"})
    out: str = field(metadata={"help": "kit folder to write"})
    layers: int = field(default=0, metadata={"help": "keep the encoder's first N layers (0: all)"})
    max_length: int = field(default=192, metadata={"min": 1, "help": "tokens per row (question, title, text window)"})
    stride: int = field(default=64, metadata={
        "min": 0, "help": "tokens shared by two windows of a long paragraph (less than half of --max-length)"})
    max_answer_len: int = field(default=24, metadata={"min": 1, "help": "answer tokens"})
    dev_limit: int = field(default=300, metadata={"help": "dev questions kept for validation (0: all)"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bars"})


def make_kit(cfg: KitConfig) -> dict[str, Any]:
    """The kit of ``xqa data train``'s folder ``cfg.data`` over the encoder ``cfg.base``
    (:func:`reader.span.kit.prepare`); its summary."""
    from reader.fid.data import KIT_MARKERS
    from reader.span.kit import prepare
    from reader.span.task import load_training_questions
    from xqa.artifacts import check_replaceable, holds_kind
    from xqa.errors import XqaError
    from xqa.io import read_passages

    from reader.span.data import check_layout

    check_layout(cfg.max_length, cfg.stride)
    check_replaceable(cfg.out, "the kit", holds_kind(cfg.out, "span_kit"), "choose another --out")
    data = Path(cfg.data)
    for name in ("train.jsonl", "passages.jsonl"):
        if not (data / name).is_file():
            raise XqaError(f"{data / name} is missing: make it with 'xqa data train --out {data}'")
    dev = data / "dev.jsonl"
    passages = {p.id: p for p in read_passages(data / "passages.jsonl")}
    return prepare(load_training_questions(str(data / "train.jsonl"), passages=passages), passages, cfg.base,
                   cfg.out, dev=load_training_questions(str(dev), passages=passages, role="dev") if dev.is_file() else (),
                   layers=cfg.layers,
                   max_length=cfg.max_length, stride=cfg.stride, max_answer_len=cfg.max_answer_len,
                   dev_limit=cfg.dev_limit, progress=cfg.progress, markers=KIT_MARKERS)


def describe_kit(summary: dict[str, Any], out: str | Path) -> str:
    """The kit's summary for people: what it holds, and what was skipped."""
    s = summary
    lines = [f"{s['train']} training questions ({', '.join(f'{k} {v}' for k, v in s['train_per_set'].items())}), "
             f"{s['dev']} dev questions, {s['passages']} paragraphs, {s['tokens']} distinct tokens -> {out} "
             f"({s['bytes'] / 2 ** 20:.1f} MiB)"]
    lines += [f"  skipped {n}: {why}" for why, n in s["skipped"].items()]
    return "\n".join(lines)


@dataclass
class PackConfig:
    reader: str = field(metadata={
        "help": "reader folder (xqa train reader OUT or OUT/best; a --kit run's too): a span reader or a "
                "warm-started FiD"})
    base: str = field(metadata={"help": "the encoder folder it was trained from (xqa convert e5)"})
    out: str = field(metadata={"help": "folder to write (config.json, delta.safetensors)"})


def pack_reader(cfg: PackConfig) -> Path:
    """The reader ``cfg.reader`` in its family's small shipped form over ``cfg.base`` (the family's
    ``pack``, :mod:`reader.registry`; a kit-trained reader is put back onto its base first); the folder."""
    import tempfile

    from reader.registry import artifact
    from xqa.errors import XqaError

    family, role, folder = artifact(cfg.reader)
    if role == "packed" or family.pack is None:
        raise XqaError(f"{cfg.reader}: {'packed already' if role == 'packed' else f'the {family.name} family does not pack'}")
    from xqa.artifacts import check_replaceable

    check_replaceable(cfg.out, "the packed reader", _holds_reader(Path(cfg.out), "packed"), "choose another --out")
    if role == "kit":
        with tempfile.TemporaryDirectory(prefix="xqa-kit-reader-") as tmp:   # base + what training changed
            return Path(family.pack(family.from_kit(folder, Path(cfg.base), Path(tmp) / "reader"), Path(cfg.base),
                                    Path(cfg.out)))
    return Path(family.pack(folder, Path(cfg.base), Path(cfg.out)))


@dataclass
class UnpackConfig:
    base: str = field(metadata={"help": "the encoder folder (xqa convert e5 --out DIR)"})
    out: str = field(metadata={"help": "reader folder to write"})
    # None: the shipped one (xqa.data.corpus.SHIPPED_READER)
    delta: str | None = field(default=None, metadata={
        "help": "packed reader folder (default: the shipped one, xqa/models/span-reader)"})
    int8: bool = field(default=True, metadata={  # build the int8 runtime and check it
        "help": "skip the int8 runtime (ONNX Runtime) and its check: the reader runs in torch only"})
    threads: int = field(default=0, metadata={"help": "CPU threads the check times with (0: torch's default)"})


def unpack_reader(cfg: UnpackConfig, log: Log = print) -> Path:
    """The packed reader ``cfg.delta`` added onto ``cfg.base`` (its family's unpack, e.g.
    :func:`reader.span.delta.unpack`), then, unless ``cfg.int8`` is off, its int8 runtime built,
    checked and timed; each copied from xqa's cache where it holds it; the folder."""
    from reader.registry import artifact
    from xqa.data.corpus import SHIPPED_READER
    from xqa.errors import XqaError

    family, role, folder = artifact(cfg.delta or SHIPPED_READER)
    if role != "packed":
        raise XqaError(f"{cfg.delta}: not a packed reader (xqa reader pack writes one)")
    out = Path(cfg.out)
    from xqa.artifacts import check_replaceable

    check_replaceable(out, "the reader", _holds_reader(out), "choose another --out")
    unpack_cached(family, Path(folder), Path(cfg.base), out, log=log)
    log(f"wrote {out}")
    if cfg.int8 and family.runtime is not None and family.runtime_wanted(Path(out)):
        _runtime(family, Path(out), cfg.threads, log)
    return Path(out)


def _holds_reader(folder: Path, role: str = "reader") -> bool:
    """Whether ``folder`` itself is a reader (or a packed one, ``role`` "packed"), which writing
    one there again may replace."""
    from reader.registry import artifact
    from xqa.errors import XqaError

    try:
        _, found_role, found = artifact(folder)
    except XqaError:
        return False
    return found_role == role and found == folder


def unpacked_reader(packed: str | Path, base: str | Path, log: Log = print) -> Path:
    """The packed reader ``packed`` unpacked onto the encoder ``base`` (or a kit run's reader made
    over it, its family's ``from_kit``), for a command that reads with it (``xqa ask --reader
    PACKED``): in a folder of the temporary directory named by both and by the packed files'
    sizes and times, made once and reused, an unpacked one's files from xqa's cache where it holds
    them. A reader packed or trained again is made again, and the folder made from its earlier
    files is removed (a 12-layer reader takes half a gigabyte, and the temporary directory may be
    held in memory)."""
    import hashlib
    import os
    import shutil
    import tempfile

    from reader.registry import artifact
    from xqa.artifacts import files_stamp, is_complete

    family, role, folder = artifact(packed)
    folder, base = Path(folder).resolve(), Path(base).resolve()
    source = hashlib.sha256(f"{folder}\0{base}".encode()).hexdigest()[:12]
    stamp = files_stamp(folder)
    label = f"{folder.parent.name}-{folder.name}" if folder.name == "best" else folder.name
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    made = Path(tempfile.gettempdir()) / f"xqa-readers-{uid}"
    out = made / f"{label[:48]}-{source}-{stamp}"
    if not is_complete(out):
        made.mkdir(parents=True, exist_ok=True)
        if role == "kit":
            log(f"{folder}: a kit run's reader, made over {base} into {out}")
            family.from_kit(folder, base, out)
        else:
            unpack_cached(family, folder, base, out, log=log)
        prefix = f"{label[:48]}-{source}-"
        for old in made.iterdir():   # made from this folder's earlier files
            if old.name.startswith(prefix) and len(old.name) == len(out.name) and old != out and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
                log(f"removed {old}: made from {folder} as it was before")
    return out


_UNPACKED = re.compile(r".+-[0-9a-f]{12}-[0-9a-f]{12}")


def unpacked_identity(folder: str | Path) -> str | None:
    """For a folder :func:`unpacked_reader` made, what it was made from: its name, which holds the
    packed folder's and the encoder's paths and the packed files' sizes and times, the same when it
    is made again from the same files (the temporary directory emptied between two runs); None for
    any other folder, whose own files are what tell it apart."""
    folder = Path(folder)
    if folder.parent.name.startswith("xqa-readers-") and _UNPACKED.fullmatch(folder.name):
        return f"unpacked:{folder.name}"
    return None


def add_base_argument(p, flag: str = "--model") -> None:
    """``--base ENCODER``: what a packed reader or a kit run given as ``flag`` is put onto
    (:func:`readable_reader`)."""
    p.add_argument("--base", default=None, metavar="ENCODER",
                   help=f"the encoder (xqa convert e5's folder) a packed reader or a kit run given as {flag} is put "
                        f"onto, once, into a folder of the temporary directory that later runs reuse")


def readable_reader(model: str | Path, base: str | Path | None, log: Log = print, flag: str = "--model") -> str:
    """``model`` (a command's ``flag``) as a folder a reader family loads: a packed reader or a kit
    run made over ``base`` (:func:`unpacked_reader`), anything else as given; what is missing or
    does not fit is an error naming the options."""
    from reader.registry import artifact
    from xqa.encoders.info import read_info
    from xqa.errors import XqaError

    try:
        role = artifact(model)[1]
    except XqaError:
        role = "reader"
    if role == "reader":
        if base is not None:
            raise XqaError(f"--base {base}: {flag} {model} is a whole reader; --base is for a packed reader "
                           f"or a kit run")
        return str(model)
    if base is None:
        what = "a packed reader" if role == "packed" else "a run of xqa train reader --kit"
        raise XqaError(f"{flag} {model}: {what}, which holds what training changed; give the encoder it was "
                       f"trained from: --base ENCODER (xqa convert e5's folder)")
    if not Path(base).is_dir() or read_info(base) is None:
        raise XqaError(f"--base {base}: " + ("no such folder" if not Path(base).exists() else
                                             "not a converted encoder (xqa convert e5 --out DIR makes one)"))
    return str(unpacked_reader(model, base, log=log))


def unpack_cached(family, packed: Path, base: Path, out: Path, log: Log = print) -> None:
    """The family's unpack of the packed reader ``packed`` onto the encoder ``base`` into ``out``,
    or xqa's cache's copy of the same (:mod:`xqa.runtime_cache`)."""
    from xqa.runtime_cache import made_cached

    made_cached(family.unpack, (packed, base, out), out,
                {"packed reader": packed, "encoder": base}, f"the {family.name} reader unpacked onto the encoder",
                log=log)


def _runtime(family, folder: Path, threads: int, log: Log) -> None:
    """The family's CPU runtime of the reader in ``folder``, or xqa's cache's copy of it
    (:mod:`xqa.runtime_cache`)."""
    from xqa.runtime_cache import run_cached

    run_cached(family.runtime, {"folder": folder, "threads": threads, "log": log}, folder, threads,
               f"the {family.name} reader's CPU runtime", log=log)


@dataclass
class RuntimeConfig:
    reader: str = field(metadata={"help": "reader folder (or a training run: its best/): a span reader or a "
                                          "warm-started FiD"})
    threads: int = field(default=0, metadata={"help": "CPU threads the check times with (0: torch's default)"})


def build_runtime(cfg: RuntimeConfig, log: Log = print) -> Path:
    """The CPU runtime of the reader folder ``cfg.reader`` (or of its ``best/``), built, checked
    against fp32 and timed by its family (``ReaderFamily.runtime``), or copied from the runtime
    cache where a folder just like it had it built on this machine; the folder."""
    from reader.registry import artifact
    from xqa.errors import XqaError

    family, role, folder = artifact(cfg.reader)
    if role != "reader" or family.runtime is None or not family.runtime_wanted(folder):
        raise XqaError(f"{cfg.reader}: no CPU runtime to build (a span reader or a warm-started FiD has one)")
    _runtime(family, Path(folder), cfg.threads, log)
    return folder
