"""The registry of retrieval methods and the index kinds they search: the one place that lists them.

Every part of xqa that offers, checks, loads, builds or tunes a method reads it from here: the
config (:func:`xqa.config.method_for`, validation), :class:`xqa.pipeline.Pipeline` (``methods``,
``component``, ``retriever``, the fallback), the command-line options (``--method`` choices, the
index flags, the weight flags), ``xqa build`` (its index stages), tuning
(:func:`xqa.evaluation.tuning.tune_setting`), the demo's method list and labels, and the reports
and benchmarks. The built-in declarations are :mod:`xqa.methods.builtin`; a new method is one
:func:`register_method` (and a new index kind one :func:`register_index`)::

    from xqa.methods import Method, register_method

    register_method(Method("bm25-twice", needs=("sparse",), make=lambda parts, fusion: parts["sparse"],
                           label="BM25 again", help="BM25 in the question's language"))

Declaration order is the order everything lists them in (``--method`` choices, the demo, and
:func:`xqa.config.method_for`'s preference among equals).
"""
from __future__ import annotations

from typing import Any

from xqa.errors import XqaError
from xqa.methods.builtin import INDEX_KINDS as _BUILTIN_INDEXES
from xqa.methods.builtin import METHODS as _BUILTIN_METHODS
from xqa.methods.spec import BuildStep, IndexKind, Method, Tunable

_indexes: dict[str, IndexKind] = {}
_methods: dict[str, Method] = {}


# ---------------------------------------------------------------------- registration

def register_index(kind: IndexKind) -> IndexKind:
    """Add an index kind (after those declared before it); its name must be new."""
    if kind.name in _indexes:
        raise XqaError(f"index kind {kind.name!r} is already registered")
    clash = [k.name for k in _indexes.values() if kind.flag in (k.flag, k.alias) or
             (kind.alias and kind.alias in (k.flag, k.alias)) or kind.dest == k.dest]
    if clash:
        raise XqaError(f"index kind {kind.name!r}: its flag or field is {clash[0]!r}'s")
    _indexes[kind.name] = kind
    return kind


def register_method(method: Method) -> Method:
    """Add a retrieval method (after those declared before it); its name and aliases must be new,
    the index kinds it needs registered, and a setting two methods tune the same one."""
    for field_name in ("needs", "aliases"):
        if isinstance(getattr(method, field_name), str):   # ("sparse") is the string "sparse"
            raise XqaError(f"method {method.name!r}: {field_name} is a tuple of names, not the string "
                           f"{getattr(method, field_name)!r} (write ({getattr(method, field_name)!r},))")
    taken = {n for m in _methods.values() for n in (m.name, *m.aliases)}
    for name in (method.name, *method.aliases):
        if name in taken:
            raise XqaError(f"retrieval method name {name!r} is already registered")
    unknown = [n for n in method.needs if n not in _indexes]
    if unknown:
        raise XqaError(f"method {method.name!r} needs unregistered index kinds {unknown}")
    for t in method.tunables:
        other = tunable_setting(t.field)
        if other is not None and other is not t:
            raise XqaError(f"method {method.name!r}: setting {t.field!r} is declared by another method "
                           f"as another tunable (declare it once and share it)")
    _methods[method.name] = method
    return method


def unregister_method(name: str) -> None:
    _methods.pop(name, None)


def unregister_index(name: str) -> None:
    users = [m.name for m in _methods.values() if name in m.needs]
    if users:
        raise XqaError(f"index kind {name!r} is needed by {users}: unregister them first")
    _indexes.pop(name, None)


# ---------------------------------------------------------------------- lookups

def index_kinds() -> list[IndexKind]:
    """Every registered index kind, in declaration order."""
    return list(_indexes.values())


def index_kind(name: str) -> IndexKind:
    try:
        return _indexes[name]
    except KeyError:
        raise XqaError(f"unknown index kind {name!r}; choose from {', '.join(_indexes)}") from None


def methods(every: bool = False) -> list[Method]:
    """The pipeline's retrieval methods in declaration order (``every``: with the unlisted views)."""
    return [m for m in _methods.values() if every or m.listed]


def method_names() -> tuple[str, ...]:
    """The names of the listed methods, in order: ``--method``'s choices."""
    return tuple(m.name for m in methods())


def method(name: str) -> Method:
    """The method called ``name`` or one of its aliases (listed or not)."""
    m = _methods.get(name)
    if m is None:
        m = next((x for x in _methods.values() if name in x.aliases), None)
    if m is None:
        raise XqaError(f"unknown retrieval method {name!r}; choose from {', '.join(method_names())}")
    return m


def is_method(name: str) -> bool:
    """A listed method's name (what ``retrieval.method`` and ``--method`` accept)."""
    return name in _methods and _methods[name].listed


def needs(name: str) -> tuple[str, ...]:
    """The index kinds the method ``name`` searches."""
    return method(name).needs


def tunables() -> list[tuple[Method, Tunable]]:
    """Each tunable setting once, with the first method that declares it, in declaration order."""
    seen, out = set(), []
    for m in methods(every=True):
        for t in m.tunables:
            if t.field not in seen:
                seen.add(t.field)
                out.append((m, t))
    return out


def hybrid_pair(name: str) -> tuple[Method, Tunable]:
    """The method ``name`` (or an alias) whose weight mixes two parts' scores (a tunable with
    ``sides``: ``xqa tune alpha --pair``), with that tunable."""
    m = method(name)
    t = next((t for t in m.tunables if len(t.sides) == 2), None)
    if t is None:
        pairs = [x.name for x in methods(every=True) if any(len(t.sides) == 2 for t in x.tunables)]
        raise XqaError(f"{name!r} is not a score hybrid of two parts; choose from {', '.join(pairs)}")
    return m, t


def tunable_setting(field: str) -> Tunable | None:
    """The tunable declared for the setting ``field``, if any."""
    return next((t for _, t in tunables() if t.field == field), None)


# ---------------------------------------------------------------------- a config's indexes

def index_value(retrieval: Any, kind: IndexKind | str) -> str | None:
    """The folder ``retrieval`` (a :class:`~xqa.config.RetrievalConfig`) names for ``kind``."""
    kind = index_kind(kind) if isinstance(kind, str) else kind
    if kind.field is not None:
        return getattr(retrieval, kind.field)
    return retrieval.indexes.get(kind.name)


def set_index(retrieval: Any, kind: IndexKind | str, value: str | None) -> None:
    """Name ``value`` as the folder of ``kind`` in ``retrieval``."""
    kind = index_kind(kind) if isinstance(kind, str) else kind
    if kind.field is not None:
        setattr(retrieval, kind.field, value)
    elif value is None:
        retrieval.indexes.pop(kind.name, None)
    else:
        retrieval.indexes[kind.name] = value


def named_indexes(retrieval: Any) -> set[str]:
    """The index kinds ``retrieval`` names a folder for."""
    return {k.name for k in index_kinds() if index_value(retrieval, k)}


def usable(retrieval: Any, every: bool = False) -> list[str]:
    """The methods (in order) whose every index ``retrieval`` names."""
    have = named_indexes(retrieval)
    return [m.name for m in methods(every) if all(n in have for n in m.needs)]


def index_flags(names: Any) -> str:
    """The flags of the index kinds ``names``, for messages."""
    return " ".join(index_kind(n).flag for n in names)


# ---------------------------------------------------------------------- retrievers

def build_retriever(config: Any, **parts: Any) -> Any:
    """The retriever of ``config`` (a :class:`~retriever.combined.FusionConfig`, or a method name with
    the default settings) from the given parts (``sparse=``, ``dense=``, ... : index kind names)."""
    from retriever.combined import FusionConfig

    c = FusionConfig(method=config) if isinstance(config, str) else config
    m = method(c.method)
    missing = [n for n in m.needs if parts.get(n) is None]
    if missing:
        raise XqaError(f"method {m.name!r} needs a {' and a '.join(missing)} retriever")
    return m.make({n: parts[n] for n in m.needs}, c)


def _register_builtin() -> None:
    for kind in _BUILTIN_INDEXES:
        register_index(kind)
    for m in _BUILTIN_METHODS:
        register_method(m)


_register_builtin()

__all__ = [
    "BuildStep", "IndexKind", "Method", "Tunable",
    "build_retriever", "hybrid_pair", "index_flags", "index_kind", "index_kinds", "index_value", "is_method", "method",
    "method_names", "methods", "named_indexes", "needs", "register_index", "register_method", "set_index",
    "tunable_setting", "tunables", "unregister_index", "unregister_method", "usable",
]
