"""Names imported on first use: package exports and the functions a reader family registers."""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from xqa.lazy import exports, function, resolve

ROOT = Path(__file__).resolve().parents[1]


def test_exports_take_each_name_from_its_module_once_and_refuse_others(monkeypatch):
    package = types.ModuleType("pkg_under_test")
    monkeypatch.setitem(sys.modules, "pkg_under_test", package)
    getattr_ = exports("pkg_under_test", {"dumps": "json", "join": "os.path"})
    package.__getattr__ = getattr_
    import json
    import os.path

    assert getattr_("dumps") is json.dumps and getattr_("join") is os.path.join
    assert vars(package)["dumps"] is json.dumps            # kept: the next lookup is an ordinary one
    with pytest.raises(AttributeError, match="module 'pkg_under_test' has no attribute 'loads'"):
        getattr_("loads")


def test_relative_exports_resolve_inside_their_package_and_import_nothing_heavy():
    code = ("import sys, retriever.dense, retriever.dhr, retriever.spar, reader, reader.span, reader.fid, xqa.training\n"
            "heavy = [m for m in ('torch', 'transformers', 'faiss') if m in sys.modules]\n"
            "from retriever.dhr import gip_reference\n"
            "print(heavy, gip_reference.__module__, retriever.dhr.gip_reference is gip_reference)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["[]", "retriever.dhr.densify", "True"], out.stdout + out.stderr


def test_a_lazy_function_calls_its_target_and_bears_its_names():
    join = function("os.path:join")
    assert join("a", "b") == "a" + __import__("os").sep + "b"
    assert (join.__module__, join.__qualname__, join.__name__) == ("os.path", "join", "join")
    method = function("pathlib:Path.cwd")
    assert method() == Path.cwd() and method.__qualname__ == "Path.cwd"
    with pytest.raises(ValueError, match="not a 'module:qualname' target"):
        resolve("os.path.join")


def test_the_stage_runner_sends_a_family_s_registered_function_as_the_target_itself():
    """A build sends ``family.runtime`` to another process by module and name; the name found
    there is the real function, not the stand-in."""
    from reader.fid import FAMILY as FID
    from reader.span import FAMILY as SPAN
    from xqa.recipes import runner

    import reader.span.runtime as span_runtime

    assert runner._find(runner._name(SPAN.runtime)) is span_runtime.build_and_report
    for family in (SPAN, FID):
        for fn in (family.load, family.pack, family.unpack, family.from_kit, family.runtime):
            assert callable(runner._find(runner._name(fn))), runner._name(fn)
