"""pyproject.toml declares what the code imports, and its extras do not fight each other."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("xqa", "retriever", "reader", "apps")


def _name(requirement: str) -> str:
    """``"faiss-cpu>=1.8"`` -> ``"faiss-cpu"``, normalised as PyPI compares names."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
    return re.sub(r"[-_.]+", "-", name).lower()


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _imported_modules() -> dict[str, str]:
    """Top-level third-party modules imported anywhere in the packages -> one file importing it."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES and top != "__future__":
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_distribution_is_declared():
    project = _project()
    declared = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        declared |= {_name(r) for r in extra if not r.startswith("xqa[")}
    providers = importlib.metadata.packages_distributions()
    undeclared = []
    for module, where in sorted(_imported_modules().items()):
        dists = {_name(d) for d in providers.get(module, [])}
        if not dists:
            pytest.fail(f"{where} imports {module!r}, which no installed distribution provides")
        if not dists & declared:
            undeclared.append(f"{module} ({', '.join(sorted(dists))}; imported by {where})")
    assert not undeclared, "imported but not declared in pyproject.toml: " + "; ".join(undeclared)


def test_faiss_comes_from_exactly_one_extra():
    """faiss-cpu and faiss-gpu both install the module ``faiss``: the base requirements hold
    neither, and the gpu extra does not bring the cpu one."""
    project = _project()
    extras = project["optional-dependencies"]
    assert not [r for r in project["dependencies"] if _name(r).startswith("faiss")]
    assert [_name(r) for r in extras["cpu"] if _name(r).startswith("faiss")] == ["faiss-cpu"]
    assert [_name(r) for r in extras["gpu"] if _name(r).startswith("faiss")] == ["faiss-gpu"]


def test_pins_that_the_code_relies_on():
    deps = {_name(r): r for r in _project()["dependencies"]}
    # retriever/sparse drives Anserini 1.x's Java classes (Pyserini 1.x ships that jar)
    assert re.search(r"<\s*2\b", deps["pyserini"]), deps["pyserini"]
    # apps/demo.py uses gradio 6 APIs (api_visibility, footer_links, css_template)
    assert re.search(r">=\s*6\b", deps["gradio"]), deps["gradio"]
