"""The reader families, by name, and the folder → family → reader resolution.

A family is one :class:`~reader.base.ReaderFamily` given to :func:`register`; the built-in
ones (:data:`BUILT_IN`) are their packages' ``FAMILY``, registered on first use. Everything
that needs a family asks here: :func:`load_reader` for a folder's reader, :func:`family_of`
for its family without loading it (the demo's introduction), :func:`families` for the names
``xqa train reader --family`` accepts. Importing this module loads no model code.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

from reader.base import Reader, ReaderFamily
from xqa.errors import XqaError

# The packages whose ``FAMILY`` is registered before the first look-up.
BUILT_IN = ("reader.fid", "reader.span")
# A run folder's ``config.json`` kind (``xqa train reader --out``): its reader is in ``best/``.
TRAINING_RUN = "training_run"

_families: dict[str, ReaderFamily] = {}
_built_in_done = False


def _built_in() -> None:
    global _built_in_done
    if not _built_in_done:
        _built_in_done = True
        for package in BUILT_IN:
            family = importlib.import_module(package).FAMILY
            _families.setdefault(family.name, family)


def register(family: ReaderFamily) -> ReaderFamily:
    """Add ``family``; a name or kind another family has is an error."""
    _built_in()
    if family.name in _families:
        raise ValueError(f"a reader family named {family.name!r} is registered already")
    taken = {k: f.name for f in _families.values() for k in f.kinds}
    clash = [k for k in family.kinds if k in taken]
    if clash:
        raise ValueError(f"kind {clash[0]!r} belongs to the {taken[clash[0]]!r} reader family")
    if family.fallback and any(f.fallback for f in _families.values()):
        raise ValueError("another reader family loads what no family claims already")
    _families[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove the family ``name`` (tests registering their own)."""
    _built_in()
    _families.pop(name, None)


def families() -> list[ReaderFamily]:
    """Every registered family, the built-in ones first."""
    _built_in()
    return list(_families.values())


def get(name: str) -> ReaderFamily:
    """The family registered as ``name``."""
    _built_in()
    if name not in _families:
        raise XqaError(f"unknown reader family {name!r}; choose from {', '.join(_families)}")
    return _families[name]


def _kind(folder: Path) -> str | None:
    try:
        kind = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


def resolve(folder: str | Path) -> tuple[ReaderFamily, Path | str]:
    """The family of the reader in ``folder`` and what to give its ``load``: the folder whose
    ``config.json`` kind a family claims (``folder``, or ``folder/best`` of a training run), else
    the fallback family with ``folder`` as given (a model hub name stays a string)."""
    _built_in()
    by_kind = {k: f for f in _families.values() for k in f.kinds}
    for candidate in (Path(folder), Path(folder) / "best"):
        if not (candidate / "config.json").is_file():
            continue
        kind = _kind(candidate)
        if kind in by_kind:
            return by_kind[kind], candidate
        if kind is not None and kind != TRAINING_RUN:   # another xqa artifact: no family's model folder
            packed = {f.packed_kind: f for f in _families.values() if f.packed_kind}
            if kind in packed:
                raise XqaError(f"{candidate}: a packed {packed[kind].name} reader; unpack it onto its encoder "
                               f"first (xqa reader unpack --delta {candidate} --base ENCODER --out DIR)")
            kits = {f.kit_kind: f for f in _families.values() if f.kit_kind}
            if kind in kits:
                raise XqaError(f"{candidate}: a {kits[kind].name} reader trained from a kit, which holds what "
                               f"training changed; put it onto its encoder first (xqa reader pack --reader "
                               f"{candidate} --base ENCODER --out P, then xqa reader unpack --delta P --base "
                               f"ENCODER --out DIR), or build with it (xqa build --reader {candidate})")
            raise XqaError(f"{candidate}: not a reader: its config.json kind {kind!r} is none that a registered "
                           f"reader family loads ({', '.join(sorted(by_kind))}; a Hugging Face model's has none; "
                           f"a family of your own registers when its module is imported: from the xqa command, "
                           f"name the module in $XQA_PLUGINS)")
        if kind != TRAINING_RUN:
            break
        if not (Path(folder) / "best" / "config.json").is_file():   # a run killed before it saved a model
            raise XqaError(f"{folder}: a training run with no model yet ({Path(folder) / 'best'} is not written: "
                           f"a run writes it when it validates on its dev set, when it stops and when it ends); "
                           f"run the training again to resume it")
    fallback = [f for f in _families.values() if f.fallback]
    if not fallback:
        raise XqaError(f"{folder}: no reader family loads it (config.json kinds: "
                       f"{', '.join(sorted(by_kind))})")
    return fallback[0], folder


def artifact(folder: str | Path) -> tuple[ReaderFamily, str, Path]:
    """``(family, role, folder)`` of a reader artifact in ``folder`` (or its ``best/``): role
    ``reader`` (a kind the family loads), ``packed`` (its ``packed_kind``) or ``kit`` (its
    ``kit_kind``: what a kit run keeps)."""
    _built_in()
    roles = {}
    for f in _families.values():
        roles.update({k: (f, "reader") for k in f.kinds})
        if f.packed_kind:
            roles[f.packed_kind] = (f, "packed")
        if f.kit_kind:
            roles[f.kit_kind] = (f, "kit")
    for candidate in (Path(folder), Path(folder) / "best"):
        kind = _kind(candidate)
        if kind in roles:
            family, role = roles[kind]
            return family, role, candidate
    if not Path(folder).exists():
        raise XqaError(f"{folder}: no such folder")
    raise XqaError(f"{folder}: no reader artifact (config.json kinds: {', '.join(sorted(roles))})")


def family_of(folder: str | Path) -> ReaderFamily:
    """The family of the reader in ``folder``, from its ``config.json`` alone (nothing is loaded)."""
    return resolve(folder)[0]


def load_reader(folder: str | Path) -> Reader:
    """The reader in ``folder`` (an artifact, a training run folder, or what the fallback
    family loads: for FiD a Hugging Face T5/mT5 name or folder), loaded by its family."""
    family, where = resolve(folder)
    return family.load(where)
