"""Names that import their code when first used, so that importing a package or registering a
reader family loads neither torch nor transformers.

- :func:`exports`: a package's module-level ``__getattr__`` that takes each exported name from
  the module that defines it, on first use;
- :func:`function`: a stand-in for ``"module:qualname"`` that imports it when called.

A leaf module (imports nothing of the project), shared by ``xqa``, ``reader`` and ``retriever``.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``name`` is the attribute of that name of the module
    ``names[name]`` (a leading ``.`` is relative to ``package``), imported on first use and then
    kept in the package, so the next lookup is an ordinary one."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def resolve(target: str) -> Any:
    """The object ``"module:qualname"`` names (``qualname`` may be dotted: ``Class.method``)."""
    module, sep, qualname = target.partition(":")
    if not sep or not module or not qualname:
        raise ValueError(f"not a 'module:qualname' target: {target!r}")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def function(target: str) -> Callable[..., Any]:
    """A function that calls ``target`` (``"module:qualname"``), importing it at the first call.

    It bears the target's ``__module__`` and ``__qualname__``: whatever finds a function by
    those names (the stage runner sending a call to another process) finds the target itself."""
    module, _, qualname = target.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return resolve(target)(*args, **kwargs)

    call.__module__, call.__qualname__, call.__name__ = module, qualname, qualname.rsplit(".", 1)[-1]
    call.__doc__ = f"{target}, imported when first called."
    return call


__all__ = ["exports", "function", "resolve"]
