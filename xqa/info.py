"""What a pipeline holds and how it runs on this machine (``xqa info``).

:func:`describe` reads a ``pipeline.json`` and the ``config.json`` (and ``runtime.json``,
``xqa_encoder.json``) of every folder it names, and loads nothing: the passages per language, each
index (its kind, size on disk, passages), the dense encoder (where it comes from, the precision it
runs in here and the check that chose it), each reader (family, layers, what it reads, evidence
fusion and its calibration, its precision here), the disk its folder takes (and how much of it
is shared with other builds through xqa's cache), this CPU, and the library versions the folders
were built with against those installed. :func:`render` makes the lines ``xqa info`` prints.
"""
from __future__ import annotations

import functools
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xqa.artifacts import library_versions
from xqa.config import HUB_NAME, PipelineConfig


@dataclass
class InfoConfig:
    # the options of ``xqa info`` (:mod:`xqa.cli_config`); the pipeline config is its --config
    json: str | None = field(default=None, metadata={
        "help": "also write the description as JSON to this file ('-': to standard output, instead of the text)"})



# the keys under which an index's config.json records how many passages it holds
_COUNTS = ("passages", "num_passages")


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _size(path: Path) -> int:
    """Bytes of the files under ``path`` (or of the file), links not followed."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def _disk(folder: Path) -> dict[str, Any]:
    """Bytes of the files under the pipeline's folder, and of those with other hard links (shared
    with other builds through xqa's cache, :mod:`xqa.runtime_cache`): ``du`` counts a build's
    shared files as its own."""
    total = shared = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            st = os.lstat(Path(root) / name)
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
                shared += st.st_size if st.st_nlink > 1 else 0
    return {"folder": str(folder), "bytes": total, "shared_bytes": shared}


def _ref(folder: Path, ref: Any) -> Path | None:
    """The folder an artifact's config.json names (``{"path", "abs_path"}``, ``path`` relative to
    ``folder``), or None when neither exists."""
    if not isinstance(ref, dict):
        return None
    rel, absolute = ref.get("path"), ref.get("abs_path")
    for candidate in ([folder / str(rel)] if rel else []) + ([Path(str(absolute))] if absolute else []):
        if candidate.exists():
            return candidate.resolve()
    return None


def _runtime(folder: Path, setting: str, record: dict[str, Any] | None, encoder: bool = False) -> dict[str, Any]:
    """The precision a converted encoder or a reader runs in on this CPU, and the check behind
    it; an ``encoder``'s for questions too, where that differs from its passages'."""
    from xqa.encoders.info import EncoderInfo
    from xqa.encoders.runtime import resolve_precision

    info = EncoderInfo(runtime=record or {})
    out: dict[str, Any] = {}
    try:
        here = resolve_precision(folder, setting, info)
        questions = resolve_precision(folder, setting, info, questions=True) if encoder else here
        if questions != here:
            out["here_questions"] = questions
    except ValueError as e:
        here = f"unavailable ({e})"
    measured = (record or {}).get("measured", {})
    return {"setting": setting, "here": here, **out, "measured": measured,
            "measured_on_this_cpu": bool(record) and record.get("cpu") == _cpu()}


@functools.lru_cache(maxsize=1)
def _cpu() -> dict[str, bool]:
    """This CPU's features (read once: they do not change while the process runs)."""
    from xqa.encoders.runtime import cpu_features

    return cpu_features()


def _encoder(folder: Path) -> dict[str, Any]:
    from xqa.encoders.info import read_info

    out: dict[str, Any] = {"folder": str(folder), "size": _size(folder)}
    hf = _json(folder / "config.json") or {}
    if hf.get("kind") == "bi_encoder":   # xqa train retriever's: the question tower's shape
        hf = _json(folder / "query_encoder" / "config.json") or {}
    out["layers"] = hf.get("num_hidden_layers")
    out["hidden"] = hf.get("hidden_size")
    info = read_info(folder)
    if info is not None:
        out["source"] = info.source
        out["runtime"] = _runtime(folder, info.precision, info.runtime, encoder=True)
    return out


def _index(name: str, folder: Path, encoders: dict[Path, dict[str, Any]],
           encoder: Path | None = None) -> dict[str, Any]:
    """One index; ``encoders``: the encoders described so far, by folder (one an index shares
    with another is read once); ``encoder``: the one the config names for it (``dense_model``),
    else the one the index records."""
    out: dict[str, Any] = {"name": name, "folder": str(folder), "exists": folder.exists()}
    if not folder.exists():
        return out
    out["size"] = _size(folder)
    cfg = _json(folder / "config.json") or {}
    out["kind"] = cfg.get("kind")
    count = next((cfg[k] for k in _COUNTS if isinstance(cfg.get(k), int)), None)
    if count is not None:
        out["passages"] = count
    langs = cfg.get("languages")
    if cfg.get("cross_script"):
        out["cross_script"] = True   # one index of every language, romanized
    elif isinstance(langs, (dict, list)):
        out["languages"] = len(langs)
        if isinstance(langs, dict) and langs and all(isinstance(v, int) for v in langs.values()):
            out["per_language"] = langs
    if isinstance(cfg.get("dim"), int):
        out["dim"] = cfg["dim"]
    if isinstance(cfg.get("index"), dict) and cfg["index"].get("kind"):
        out["search"] = cfg["index"]["kind"]
    model = encoder or _ref(folder, cfg.get("model")) or _ref(folder, cfg.get("dense_model"))
    if encoder is not None and not (encoder / "config.json").is_file():
        out["encoder"] = {"folder": str(encoder), "missing": True}
    elif model is not None and (model / "config.json").is_file():
        if model not in encoders:
            encoders[model] = _encoder(model)
        out["encoder"] = encoders[model]
    out["versions"] = cfg.get("versions") if isinstance(cfg.get("versions"), dict) else {}
    return out


def _reader(name: str, rc: Any, folder: Path, default: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name, "default": default, "folder": str(folder), "exists": folder.exists(),
        "n_passages": rc.n_passages, "evidence_fusion": rc.evidence_fusion,
        "beta": rc.beta, "gamma": rc.gamma, "calibrated": rc.answerability is not None,
        "answerability_threshold": rc.answerability_threshold if rc.answerability is not None else None,
        "not_found_threshold": rc.not_found_threshold}
    if not folder.exists():
        if HUB_NAME.fullmatch(rc.model or ""):
            out["hub"] = rc.model   # a model hub name: loaded from the hub or its local cache
        return out
    out["size"] = _size(folder)
    cfg = _json(folder / "config.json") or {}
    try:
        from reader.registry import family_of

        out["family"] = family_of(folder).name
    except Exception:  # noqa: BLE001 - a folder no family claims is still described
        out["family"] = None
    out["kind"] = cfg.get("kind")
    for key in ("layers", "parameters", "base"):
        if key in cfg:
            out[key] = cfg[key]
    settings = cfg.get("settings") if isinstance(cfg.get("settings"), dict) else {}
    if "max_length" in settings:
        out["window"] = {"max_length": settings["max_length"], "stride": settings.get("stride")}
    from xqa.encoders.runtime import READER_RECORD

    record = _json(folder / READER_RECORD)
    if record is not None:
        out["runtime"] = _runtime(folder, str(settings.get("precision", "auto")), record)
    out["versions"] = cfg.get("versions") if isinstance(cfg.get("versions"), dict) else {}
    return out


COUNTED_BYTES = 64 << 20   # passage files up to this size are counted by xqa info; larger ones: what was recorded


def _count_passages(path: Path) -> dict[str, int] | None:
    """Passages per language of the passage file ``path``; None where it cannot be read."""
    from collections import Counter

    from xqa.errors import XqaError
    from xqa.io import read_passages

    try:
        return dict(Counter(p.lang for p in read_passages(path)))
    except (XqaError, OSError, ValueError):
        return None


def describe(config_path: str | Path) -> dict[str, Any]:
    """Everything :mod:`xqa.info` says of the pipeline in ``config_path`` (see the module doc)."""
    from xqa import methods

    path = Path(config_path)
    cfg = PipelineConfig.load(path)
    out: dict[str, Any] = {"pipeline": str(path)}
    passages = Path(cfg.path(cfg.passages)) if cfg.passages else None
    about = cfg.about if isinstance(cfg.about, dict) else {}
    source = _json(path.parent / "source.json") or {}
    if passages is None or passages.resolve().parent != path.parent.resolve():
        source = {}   # the build's record of its own passages, not of a file the config was edited to name
    languages = about.get("languages") or source.get("languages")
    out["passages"] = {
        "file": str(passages) if passages else None,
        "exists": bool(passages and passages.exists()),
        "count": about.get("passages", source.get("passages")),
        "languages": dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0])))
        if isinstance(languages, dict) else None,
        "source": source.get("path"), "sha256": source.get("sha256"), "documents": bool(source.get("documents"))}
    r = cfg.retrieval
    encoders: dict[Path, dict[str, Any]] = {}
    out["retrieval"] = {
        "method": r.method, "k": r.k, "fallback": r.fallback,
        "indexes": [_index(kind.name, Path(cfg.path(methods.index_value(r, kind))), encoders,
                           Path(cfg.path(r.dense_model)) if kind.name == "dense" and r.dense_model else None)
                    for kind in methods.index_kinds() if methods.index_value(r, kind)]}
    if passages is not None and passages.is_file() and passages.stat().st_size <= COUNTED_BYTES:
        counted_file = _count_passages(passages)   # the file itself, where it is small: what was recorded may be stale
        if counted_file is not None:
            out["passages"].update(count=sum(counted_file.values()), languages=dict(
                sorted(counted_file.items(), key=lambda kv: (-kv[1], kv[0]))))
    if out["passages"]["count"] is None:   # not recorded with the passages: as an index counted them
        counted = next((ix for ix in out["retrieval"]["indexes"] if "per_language" in ix), None)
        if counted is not None:
            langs = counted["per_language"]
            out["passages"].update(count=counted.get("passages", sum(langs.values())), counted_by=counted["name"],
                                   languages=dict(sorted(langs.items(), key=lambda kv: (-kv[1], kv[0]))))
    out["readers"] = [_reader(name, cfg.reader_config(name), Path(cfg.path(cfg.reader_config(name).model)),
                              i == 0)
                      for i, name in enumerate(cfg.reader_names()) if cfg.reader_config(name).model]
    placed = (_json(path.parent / "build.json") or {}).get("placed")   # xqa build: what each reader came from
    if isinstance(placed, dict):   # (and the dense model, --dense-model)
        def placed_from(folder: str) -> str | None:
            where = Path(folder).resolve()
            return next(((src.get("path") if isinstance(src, dict) else src)
                         for rel, src in placed.items() if (path.parent / rel).resolve() == where), None)

        for rd in out["readers"]:
            rd["placed_from"] = placed_from(rd["folder"])
        for enc in encoders.values():   # one record per folder, shared by the indexes it encoded
            enc["placed_from"] = placed_from(enc["folder"])
    out["disk"] = _disk(path.parent)
    out["machine"] = {"cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
                      "cpu": _cpu()}
    installed = library_versions()
    built: dict[str, set[str]] = {}
    for part in out["retrieval"]["indexes"] + out["readers"]:
        for lib, version in (part.get("versions") or {}).items():
            built.setdefault(lib, set()).add(str(version))
    out["versions"] = {"installed": installed,
                       "differ": {lib: sorted(v - {installed[lib]}) for lib, v in sorted(built.items())
                                  if installed.get(lib) is not None and v - {installed[lib]}}}
    return out


# ------------------------------------------------------------------------------------ the text

def _bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return ""


def _runtime_text(rt: dict[str, Any] | None) -> str:
    if not rt:
        return ""
    from xqa.encoders.runtime import QUESTION_SPEED

    text = f"runs in {rt['here']} here"
    if rt.get("here_questions"):
        text += f" (questions, one at a time: {rt['here_questions']})"
    measured = rt.get("measured") or {}
    rates = []
    for precision, m in measured.items():
        rate = next((f"{v:g} {k.replace('_per_s', '')}/s" for k, v in m.items()
                     if k.endswith("_per_s") and k != QUESTION_SPEED), None)
        if rate and m.get(QUESTION_SPEED):
            rate += f" ({1000.0 / m[QUESTION_SPEED]:.1f} ms a question)"
        if rate:
            rates.append(f"{precision} {rate}" + ("" if m.get("passed", True) else " (failed its check)"))
    if rates:
        where = "on this CPU" if rt.get("measured_on_this_cpu") else "on another CPU"
        text += f" (measured {where}: {', '.join(rates)}"
        if rt.get("measured_on_this_cpu") and len(rates) > 1:   # why not simply the fastest
            from xqa.encoders.runtime import CHOICE_MARGIN

            text += f"; auto takes the closest to fp32 within {CHOICE_MARGIN * 100:.0f} % of the fastest"
        text += ")"
    return text


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def render(d: dict[str, Any]) -> list[str]:
    """The lines ``xqa info`` prints for :func:`describe`'s ``d``."""
    lines = [f"pipeline   {d['pipeline']}"]
    p = d["passages"]
    if p["count"] is not None:
        langs = p["languages"] or {}
        per = ", ".join(f"{lang} {n:,}" for lang, n in langs.items())
        lines.append(f"passages   {p['count']:,}" + (f" in {_n(len(langs), 'language')}: {per}" if langs else "")
                     + (f" (as the {p['counted_by']} index counted them)" if p.get("counted_by") else ""))
    if p["file"] is None:
        lines.append("passages   none named (the config's field 'passages')")
    else:
        lines.append(f"           {p['file']}" + ("" if p["exists"] else "  (missing)"))
    if p.get("source"):
        what = ("every document's path and bytes, and how they were cut" if p.get("documents")
                else "its file name and bytes")
        lines.append(f"           made from {p['source']}" + (f" (digest {p['sha256'][:12]}…, a sha256 of {what})"
                                                             if p.get("sha256") else ""))
    r = d["retrieval"]
    lines.append(f"retrieval  {r['method']}, k {r['k']}, fallback {r['fallback']}")
    encoders: dict[str, str] = {}   # encoder folder -> the index it was described under
    for ix in r["indexes"]:
        if not ix["exists"]:
            lines.append(f"  {ix['name']:<8} {ix['folder']}  (missing)")
            continue
        facts = [ix.get("kind") or "?", _bytes(ix.get("size"))]
        if "passages" in ix:
            facts.append(_n(ix["passages"], "passage"))
        if ix.get("cross_script"):
            facts.append("every language in one, cross-script")
        elif "languages" in ix:
            facts.append(_n(ix["languages"], "language"))
        if "dim" in ix:
            facts.append(f"{ix['dim']} dimensions" + (f", {ix['search']}" if ix.get("search") else ""))
        lines.append(f"  {ix['name']:<8} {ix['folder']}  ({'; '.join(facts)})")
        enc = ix.get("encoder")
        if enc and enc.get("missing"):
            lines.append(f"           encoder {enc['folder']}  (missing; the config's retrieval.dense_model)")
        elif enc and enc["folder"] in encoders:
            lines.append(f"           encoder {enc['folder']}: the {encoders[enc['folder']]} index's")
        elif enc:
            encoders[enc["folder"]] = ix["name"]
            src = enc.get("source") or {}
            origin = (f"{src['model']} from {src.get('package', '?')} {src.get('version') or ''}".rstrip()
                      if src.get("model") else "")
            shape = f"{enc['layers']} layers × {enc['hidden']}" if enc.get("layers") else ""
            text = ", ".join(x for x in (origin, shape, _runtime_text(enc.get("runtime"))) if x)
            lines.append(f"           encoder {enc['folder']}" + (f": {text}" if text else ""))
            if enc.get("placed_from"):
                lines.append(f"           placed from {enc['placed_from']}")
    for rd in d["readers"]:
        label = f"reader     {rd['name']}" + (" (default)" if rd["default"] else "")
        if rd.get("hub"):
            lines.append(f"{label}  {rd['hub']} (a model hub name: loaded from the hub or its local cache)")
            continue
        if not rd["exists"]:
            lines.append(f"{label}  {rd['folder']}  (missing)")
            continue
        facts = [rd.get("family") or rd.get("kind") or "?"]
        if rd.get("layers"):
            facts.append(f"{rd['layers']} layers")
        if rd.get("parameters"):
            facts.append(f"{rd['parameters'] / 1e6:.1f}M parameters")
        facts.append(_bytes(rd.get("size")))
        lines.append(f"{label}  {rd['folder']}  ({'; '.join(facts)})")
        if rd.get("placed_from"):
            lines.append(f"           placed from {rd['placed_from']}")
        reads = f"reads {rd['n_passages']} passages"
        if rd.get("window"):
            reads += f" in windows of {rd['window']['max_length']} tokens (stride {rd['window']['stride']})"
        fusion = (f"evidence fusion β {rd['beta']:.3g}, γ {rd['gamma']:.3g}" if rd["evidence_fusion"]
                  else "no evidence fusion")
        calib = (f"calibrated P(right), confident from {rd['answerability_threshold']:.2f}"
                 if rd["calibrated"] else "no calibrated P(right)")
        lines.append(f"           {reads}; {fusion}; {calib}")
        if rd.get("runtime"):
            lines.append(f"           {_runtime_text(rd['runtime'])}")
    disk = d["disk"]
    shared = (f", {_bytes(disk['shared_bytes'])} of it in hard-linked files (one copy on disk for xqa's cache "
              f"and every build that uses them; `xqa cache`)" if disk["shared_bytes"] else "")
    lines.append(f"disk       {_bytes(disk['bytes'])} under {disk['folder']}{shared}")
    m = d["machine"]
    flags = [k for k, v in m["cpu"].items() if v]
    lines.append(f"machine    {m['cores']} cores; CPU features: {', '.join(flags) or 'none of those checked'}")
    differ = d["versions"]["differ"]
    inst = d["versions"]["installed"]
    if differ:
        lines.append("versions   built with other versions than installed: " + "; ".join(
            f"{lib} {' and '.join(v)} (installed {inst[lib]})" for lib, v in differ.items()))
    else:
        lines.append("versions   built with the installed versions: " + ", ".join(
            f"{lib} {v}" for lib, v in inst.items() if lib in ("xqa", "torch", "transformers", "faiss-cpu",
                                                              "faiss-gpu", "pyserini")))
    return lines
