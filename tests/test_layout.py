"""The repository's shape: imports point one way and the CLI stays light."""
from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEAVES = {"xqa.records", "xqa.artifacts", "xqa.lazy", "xqa.errors", "xqa.io", "xqa.langid.codes", "xqa.langid.rules", "xqa.encoders.info", "xqa.encoders.runtime",
          "xqa.encoders.delta", "xqa.encoders.e5", "xqa.encoders.charsmap"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _project_imports(package: str) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): {n for n in _imports(p) if n.split(".")[0] in {"xqa", "retriever", "reader", "apps"}}
            for p in (ROOT / package).rglob("*.py")}


def test_retriever_and_reader_import_only_leaves():
    for pkg, other in (("retriever", "reader"), ("reader", "retriever")):
        for path, names in _project_imports(pkg).items():
            for n in names:
                assert not n.startswith(other), f"{path} imports {n}: {pkg} must not import {other}"
                assert not n.startswith("apps"), f"{path} imports {n}"
                if n.split(".")[0] == "xqa":
                    assert n in LEAVES, f"{path} imports {n}; only {sorted(LEAVES)} are allowed"


def test_leaf_modules_import_only_other_leaves():
    for leaf in LEAVES:
        path = ROOT / (leaf.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level], \
            f"{leaf}: relative imports (the rule reads absolute ones)"
        names = {n for n in _imports(path) if n.split(".")[0] in {"xqa", "retriever", "reader", "apps"}}
        assert names <= LEAVES, f"{leaf} imports {names - LEAVES}"


def test_xqa_never_imports_apps():
    # the one exception: the ``xqa demo`` command serves the app (and imports nothing else of apps)
    allowed = {"xqa/commands/demo.py": {"apps.demo"}}
    for path, names in _project_imports("xqa").items():
        apps = {n for n in names if n.startswith("apps")}
        assert apps <= allowed.get(path, set()), f"{path} imports {sorted(apps)}"


def _modules() -> dict[str, Path]:
    out = {}
    for package in ("xqa", "retriever", "reader", "apps"):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere (inside functions too). ``from pkg import
    sub`` imports the submodule ``pkg.sub`` when there is one, else ``pkg``."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            deps |= {t for t in targets if t in modules and t != name}
        graph[name] = deps
    return graph


def test_no_import_cycles():
    graph = _import_graph()
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name):] + [name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_the_users_commands_never_import_the_tooling():
    for name, deps in _import_graph().items():
        if not name.startswith("xqa.tools"):
            assert not {d for d in deps if d.startswith("xqa.tools")}, f"{name} imports {sorted(deps)}"


def test_tool_wrappers_and_their_library_are_apart():
    """``xqa/tools/<name>.py``: the commands of ``xqa.cli.TOOLS`` (which loads them by name) and two
    ``python -m`` scripts; no module imports them. ``xqa/tools/lib/``: the code they call."""
    from xqa.cli import TOOLS

    wrappers = {module for module, _ in TOOLS.values()}
    scripts = {"xqa.tools.cli_reference", "xqa.tools.pack_prebuilt"}
    top = {f"xqa.tools.{p.stem}" for p in (ROOT / "xqa" / "tools").glob("*.py") if p.stem != "__init__"}
    assert top == wrappers | scripts, f"not a registered command: {sorted(top - wrappers - scripts)}"
    assert {p.name for p in (ROOT / "xqa" / "tools").iterdir() if p.is_dir() and p.name != "__pycache__"} == {"lib"}
    for name, deps in _import_graph().items():
        assert not deps & top, f"{name} imports {sorted(deps & top)}"


def test_only_the_cli_imports_the_commands():
    """A command module parses flags into a config and calls the library: nothing else builds on
    it. Tests import a command module only to check its argument parsing."""
    parsing_tests = {"tests/test_cli.py", "tests/test_cli_config.py", "tests/test_demo.py"}
    for name, deps in _import_graph().items():
        commands = {d for d in deps if d.startswith("xqa.commands.")}
        if name != "xqa.cli" and not name.startswith("xqa.commands"):
            assert not commands, f"{name} imports {sorted(commands)}"
    for path in (ROOT / "tests").rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        if rel in parsing_tests:
            continue
        commands = {n for n in _imports(path) if n == "xqa.commands" or n.startswith("xqa.commands.")}
        assert not commands, f"{rel} imports {sorted(commands)}"


def test_commands_import_only_shared_options_of_each_other():
    """Command modules do not import one another: what two commands share lives in
    ``xqa.cli_options`` or in the library."""
    for name, deps in _import_graph().items():
        if name.startswith("xqa.commands."):
            others = {d for d in deps if d.startswith("xqa.commands") and d != name}
            assert not others, f"{name} imports {sorted(others)}"


def test_help_is_fast_and_imports_nothing_heavy():
    code = ("import sys, time; t=time.perf_counter(); from xqa.cli import main; "
            "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()): main(['--help'])\n"
            "heavy=[m for m in ('torch','transformers','pyserini','gradio','faiss','datasets') if m in sys.modules]\n"
            "print(time.perf_counter()-t, heavy)")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    elapsed_inside, heavy = out.stdout.split(" ", 1)
    assert heavy.strip() == "[]", heavy
    assert float(elapsed_inside) < 1.0
    assert time.perf_counter() - t0 < 10  # generous: includes interpreter start on a loaded CI machine
