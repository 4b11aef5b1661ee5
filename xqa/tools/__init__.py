"""Tooling for developing xqa: the ``xqa bench``, ``xqa diagnose``, ``xqa report`` and ``xqa repro`` commands.

Two kinds of module, by folder:

* ``xqa/tools/<verb>_<area>.py``: one command wrapper per subcommand
  (``add_arguments(parser)``, ``run(args) -> int``), registered in
  :data:`xqa.cli.TOOLS`; ``cli_reference`` (writes docs/cli.md) and
  ``pack_prebuilt`` are scripts run with ``python -m``.
* ``xqa/tools/lib/``: the code the wrappers call (benchmarks, the MLQA
  retrieval tasks, the language identification measurement); it never imports
  a wrapper.

The user's commands (``xqa.commands``) never import this package.
"""
