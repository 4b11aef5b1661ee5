"""Artifact folders: ``config.json`` (with library versions) + safetensors / npy.

A leaf module (imports nothing of the project), shared by ``retriever`` and
``reader``. Every artifact is written into a temporary sibling folder and
renamed into place only when complete, so a killed job never leaves a
half-written artifact that looks finished.
"""
from __future__ import annotations

import contextlib
import glob
import importlib.metadata
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

CONFIG_NAME = "config.json"

_VERSIONED = ("xqa", "torch", "transformers", "faiss-cpu", "faiss-gpu", "pyserini",
              "sentencepiece", "numpy", "datasets")


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries an artifact may depend on."""
    out = {}
    for name in _VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temp_prefix(target: Path) -> str:
    """The name prefix of ``target``'s temporaries: they carry the writing process's id, so a
    later writer can tell the leftovers of a killed job (:func:`_remove_orphans`) from live ones."""
    return f".{target.name}.{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _remove_orphans(target: Path) -> None:
    """Remove temporaries of ``target`` left by processes that no longer run (a job killed while
    writing it). Those of running processes are left alone."""
    with contextlib.suppress(FileNotFoundError):
        for p in target.parent.glob(f".{glob.escape(target.name)}.*-*.tmp"):
            pid = p.name[len(target.name) + 2:].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        p.unlink()


def write_json_atomic(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    """Write JSON to ``path`` through a temporary file and a rename. A float that is not a
    number (NaN: the mean of an empty bin) or infinite is written as ``null``: Python's ``NaN``
    is no JSON, and other readers (a browser's, jq) refuse the file."""
    try:
        text = json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), ensure_ascii=False, indent=indent, allow_nan=False)
    write_text_atomic(path, text + "\n")


def _finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float made None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 through a temporary file and a rename; gzip'd where the name ends
    in ``.gz``, as the readers (:func:`xqa.io.open_bytes`) take it (no time stamp in the gzip
    header: the same text, the same bytes)."""
    data = text.encode("utf-8")
    if str(path).endswith(".gz"):
        import gzip

        data = gzip.compress(data, compresslevel=6, mtime=0)
    write_file_atomic(path, lambda f: f.write(data))


def write_file_atomic(path: str | Path, write: Callable[[BinaryIO], Any]) -> None:
    """Call ``write`` on a temporary binary file beside ``path``, then rename it to ``path``: a
    killed writer leaves ``path`` as it was (and its temporary is removed by the next writer)."""
    path = Path(path)
    if path.is_dir():   # os.replace would fail naming the temporary file
        from xqa.errors import XqaError

        raise XqaError(f"{path} is a folder; name a file to write there (e.g. {path / 'out.json'})")
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file ordinary permissions
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None:  # a failed write names no file: name it
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def save_shards(tensors: dict[str, Any], folder: str | Path, stem: str, max_bytes: int) -> list[str]:
    """``tensors`` (name -> torch tensor) in safetensors files ``{stem}-00001.safetensors``, ...
    of at most ``max_bytes`` each (a larger tensor alone in its file), names in sorted order;
    the file names."""
    from safetensors.torch import save_file

    shards: list[dict[str, Any]] = [{}]
    size = 0
    for name in sorted(tensors):
        n = tensors[name].numel() * tensors[name].element_size()
        if shards[-1] and size + n > max_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensors[name]
        size += n
    files = []
    for k, shard in enumerate(shards, 1):
        files.append(f"{stem}-{k:05d}.safetensors")
        save_file(shard, str(Path(folder) / files[-1]))
    return files


def save_config(folder: str | Path, kind: str, config: dict[str, Any]) -> Path:
    """Write ``folder/config.json`` with ``kind`` and library versions added."""
    folder = Path(folder)
    data = {"kind": kind, **config, "versions": library_versions()}
    write_json_atomic(folder / CONFIG_NAME, data)
    return folder / CONFIG_NAME


def save_tokenizer(tokenizer: Any, folder: str | Path) -> None:
    """``tokenizer.save_pretrained(folder)``, then :func:`record_added_tokens` on the folder."""
    tokenizer.save_pretrained(str(folder))
    record_added_tokens(folder)


def record_added_tokens(folder: str | Path) -> bool:
    """Copy ``tokenizer.json``'s added (special) tokens into ``tokenizer_config.json`` as
    ``added_tokens_decoder``, the entry transformers 4 wrote there; True if it was written.

    Without it, transformers' loader reads them by parsing the whole ``tokenizer.json`` in Python
    on every load, besides the parse in Rust: 0.6 s for XLM-R's 250k pieces. The entries are the
    file's own, so the tokenizer loads the same. A folder with no ``tokenizer.json``, or whose
    config already holds the entry, is left as it is."""
    folder = Path(folder)
    fast, config_file = folder / "tokenizer.json", folder / "tokenizer_config.json"
    if not fast.is_file() or not config_file.is_file():
        return False
    config = json.loads(config_file.read_text(encoding="utf-8"))
    if "added_tokens_decoder" in config:
        return False
    with open(fast, encoding="utf-8") as fh:
        added = json.load(fh).get("added_tokens") or []
    config["added_tokens_decoder"] = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in added}
    write_json_atomic(config_file, config)
    return True


def load_config(folder: str | Path, kind: str | None = None) -> dict[str, Any]:
    """Read ``folder/config.json``; check its ``kind`` when one is given."""
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        if not Path(folder).exists():
            raise FileNotFoundError(f"{folder}: no such folder")
        raise FileNotFoundError(f"{folder}: not an xqa artifact folder (no {CONFIG_NAME})")
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    if kind is not None and data.get("kind") != kind:
        raise ValueError(f"{path}: expected an artifact of kind {kind!r}, found {data.get('kind')!r}")
    return data


def check_replaceable(out: str | Path, what: str, ours: bool, hint: str) -> None:
    """Refuse to write the folder ``what`` at ``out`` where that would replace what is not xqa's
    to replace: a file, or a folder with files in it unless ``ours`` (it holds an artifact the
    command may write again, or the user said --overwrite); ``hint`` says what to do instead."""
    from xqa.errors import XqaError

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise XqaError(f"{out} is a file; {what} is a folder written there: choose another folder")
    if out.is_dir() and not ours:
        names = sorted(p.name for p in out.iterdir())
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise XqaError(f"{out} holds other files ({shown}) that writing {what} there would replace; {hint}")


def check_model_source(name: str | Path, what: str) -> None:
    """Refuse ``name`` as a Hugging Face model (``what``: "the encoder to start from") where it
    cannot be one: a path that does not exist (a hub name is left to the hub), a file, a folder
    without a config.json or with an xqa artifact's (its ``kind``) or one without ``model_type``."""
    from xqa.errors import XqaError

    path = Path(name)
    text = str(name)
    if not path.exists():
        if path.is_absolute() or text.startswith((".", "~")) or text.count("/") > 1 or "\\" in text:
            raise XqaError(f"{name}: no such folder ({what})")
        # a model hub name ("org/model"): its config from the hub or the local cache, now, not
        # after the hours of work a training does before it loads the model
        try:
            from transformers import AutoConfig

            AutoConfig.from_pretrained(text)
        except OSError as e:   # not on the hub, or the hub cannot be reached
            raise XqaError(f"{name}: no such folder, and no model of that name on the hub or in its local "
                           f"cache ({' '.join(str(e).split())}) ({what})") from None
        return
    if not path.is_dir():
        raise XqaError(f"{name} is a file; {what} is a model folder")
    cfg = path / CONFIG_NAME
    if not cfg.is_file():
        raise XqaError(f"{name}: no {CONFIG_NAME}: not a model folder ({what})")
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise XqaError(f"{cfg}: not readable JSON ({e})") from None
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "training_run":   # one the caller does not continue from: another kind of run
        trains = data.get("trains")
        if not trains:   # recorded by an xqa that did not say what a run trains: what it saved says
            best = path / "best" / CONFIG_NAME
            try:
                saved = json.loads(best.read_text(encoding="utf-8")).get("kind")
            except (OSError, ValueError, AttributeError):
                saved = None
            trains = f"whose best/ is an xqa {saved!r} artifact" if isinstance(saved, str) else ""
        else:
            trains = f"of {trains}"
        raise XqaError(f"{name}: a training run{' ' + trains if trains else ''}, not {what}")
    if isinstance(kind, str):   # an xqa artifact (a FiD reader's config.json has a model_type too)
        raise XqaError(f"{name}: an xqa {kind!r} artifact, not {what}")
    if isinstance(data, dict) and "model_type" not in data:
        raise XqaError(f"{name}: its {CONFIG_NAME} has no model_type: not a Hugging Face model ({what})")


def holds_kind(folder: str | Path, kind: str) -> bool:
    """Whether ``folder`` is a finished artifact of ``kind`` (its config.json says so), which the
    command that writes ``kind`` may write again."""
    try:
        return is_complete(folder) and load_config(folder).get("kind") == kind
    except (OSError, ValueError):
        return False


def artifact_kind(folder: str | Path) -> str | None:
    """The ``kind`` ``folder``'s config.json names (``"?"`` for a config.json that names none: not
    an xqa artifact's), or None where there is no config.json: what an output folder holds before
    a command writes its own artifact there."""
    try:
        kind = json.loads((Path(folder) / CONFIG_NAME).read_text(encoding="utf-8")).get("kind")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError):
        return "?"
    return kind if isinstance(kind, str) else "?"


def is_complete(folder: str | Path) -> bool:
    """True when ``folder`` is a finished artifact (it has its config.json)."""
    return (Path(folder) / CONFIG_NAME).is_file()


def file_fingerprint(path: str | Path, edge: int = 1 << 20) -> str:
    """A file's size and a digest of its first and last ``edge`` bytes: the same for a
    copy of it (another machine's, another path, another modification time) and, but for an edit
    of its middle that keeps its size, different for another file. Read in milliseconds."""
    import hashlib

    path = Path(path)
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as f:
        digest.update(f.read(edge))
        if size > edge:
            f.seek(max(edge, size - edge))
            digest.update(f.read(edge))
    return f"{size} bytes, sha256 of its ends {digest.hexdigest()[:16]}"


def content_fingerprint(path: str | Path) -> str:
    """What a file or folder holds, not where it lies or when it was written: a file's
    :func:`file_fingerprint`, a folder's over every file's relative path and fingerprint. A copy
    (``cp`` without ``-p``, another machine's), a checkout or a ``touch`` leaves it as it was."""
    import hashlib

    path = Path(path)
    if not path.is_dir():
        return f"content {file_fingerprint(path)}"
    digest = hashlib.sha256()
    files = sorted(f for f in path.rglob("*") if f.is_file())
    for f in files:
        digest.update(f"{f.relative_to(path).as_posix()}\t{file_fingerprint(f)}\n".encode())
    return f"content {len(files)} files, sha256 {digest.hexdigest()[:16]}"


def files_stamp(folder: str | Path) -> str:
    """A short digest of the names, sizes and modification times of the files under ``folder``:
    what tells a folder written again (a reader trained or packed again) from the one seen
    before, without reading its contents."""
    import hashlib

    folder = Path(folder)
    parts = sorted(f"{f.relative_to(folder).as_posix()}:{st.st_size}:{st.st_mtime_ns}"
                   for f in folder.rglob("*") if f.is_file() for st in (f.stat(),))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def load_finished(folder: str | Path, kind: str, what: str) -> dict[str, Any]:
    """``folder``'s config, checked to be a finished artifact of ``kind``; otherwise an error
    that says so with ``what`` (e.g. "DHR index (run `xqa index dhr`)")."""
    from xqa.errors import XqaError

    if not is_complete(folder):
        raise XqaError(f"{folder}: not a finished {what}")
    try:
        return load_config(folder, kind)
    except ValueError as e:
        raise XqaError(str(e)) from None


def folder_ref(target: str | Path, base: str | Path) -> dict[str, str]:
    """How an artifact in ``base`` records another folder ``target``: relative to ``base`` (the two
    move together) and absolute (``base`` moves alone). :func:`resolve_ref` reads it back."""
    target, base = Path(target).resolve(), Path(base).resolve()
    return {"path": os.path.relpath(target, base), "abs_path": str(target)}


def resolve_ref(base: str | Path, ref: dict[str, str], what: str, exists=is_complete) -> Path:
    """The folder a :func:`folder_ref` names (relative path first) for which ``exists`` holds (by
    default: a finished artifact); an error naming ``what`` when neither place holds it."""
    from xqa.errors import XqaError

    for cand in ((Path(base) / ref["path"]).resolve(), Path(ref["abs_path"])):
        if exists(cand):
            return cand
    raise XqaError(f"{base}: its {what} {ref['path']} ({ref['abs_path']}) is gone")


def _ordinary_permissions(folder: Path) -> None:
    """Give the files in ``folder`` that their writer made private (0600: safetensors' files,
    ``tempfile``'s) the permissions the umask gives an ordinary file, as every other file of an
    artifact has: a model another account serves (the demo's) must be readable to it."""
    mode = 0o666 & ~_umask()
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600 and mode != 0o600:
            os.chmod(path, mode)


@contextlib.contextmanager
def atomic_dir(target: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside ``target``; rename it to ``target`` on success.

    On an exception the temporary folder is removed and ``target`` is untouched; the temporary
    folders of ``target`` that killed processes left behind are removed first.
    """
    target = Path(target)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; remove it or pass overwrite")
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(target)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=_temp_prefix(target), suffix=".tmp"))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the folder ordinary permissions
    try:
        yield tmp
        _ordinary_permissions(tmp)
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) and e.filename is None:  # a failed write names no file: name the artifact
            raise OSError(e.errno, e.strerror, str(target)) from e
        raise


def lock_file(folder: str | Path, part: str = "") -> Path:
    """The lock file of the job that writes ``folder`` (or its ``part``, e.g. a shard): in this
    user's lock folder under the system's temporary folder, named by the folder's real path, so
    that no folder a job writes, nor the one above it, holds anything but what the job writes."""
    import hashlib
    import tempfile

    key = f"{Path(folder).resolve()}\0{part}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = f"{(Path(folder).name or 'root')[:64]}-{digest}"   # the name to read, the digest to be unique
    return Path(tempfile.gettempdir()) / f"xqa-locks-{os.getuid() if hasattr(os, 'getuid') else 0}" / f"{name}.lock"


@contextlib.contextmanager
def exclusive(folder: str | Path, busy: str, part: str = "") -> Iterator[None]:
    """Hold the OS file lock of ``folder`` (or of its ``part``; :func:`lock_file`) while the block
    runs, or fail at once, saying ``busy`` ("OUT is being written by another xqa answer"), when
    another process holds it.

    The kernel releases the lock when its process dies, so a killed job leaves none behind (the
    empty file stays), and two jobs that start together cannot both take it."""
    from xqa.errors import XqaError

    with exclusive_if_free(folder, part) as mine:
        if not mine:
            raise XqaError(f"{busy}; wait for it to finish, or write into another folder (the lock it holds: "
                           f"{lock_file(folder, part)})")
        yield


@contextlib.contextmanager
def exclusive_if_free(folder: str | Path, part: str = "") -> Iterator[bool]:
    """:func:`exclusive` for a job that another process may do instead: True, the lock held while
    the block runs; False, another process holds it (the block decides what to say)."""
    from filelock import FileLock, Timeout

    lock = lock_file(folder, part)
    lock.parent.mkdir(parents=True, exist_ok=True)
    held = FileLock(str(lock), timeout=0)
    try:
        held.acquire()
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        held.release()


def bars_unless(progress: bool) -> contextlib.AbstractContextManager:
    """A command's ``--quiet`` (``progress`` False): :func:`quiet_model_bars`; else nothing."""
    return contextlib.nullcontext() if progress else quiet_model_bars()


@contextlib.contextmanager
def quiet_model_bars() -> Iterator[None]:
    """transformers' own progress bars ("Loading weights", "Writing model shards") off, then as
    they were: a caller that announces what it loads or writes draws no per-model bar beside
    its line, and a user who turned the bars off keeps them off. xqa's own bars (tqdm) stay."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # nothing of transformers' to quiet
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    if was:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()
