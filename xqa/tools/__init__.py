"""Tooling for developing xqa: the ``xqa bench``, ``xqa diagnose`` and ``xqa report`` commands.

One module per subcommand (``add_arguments(parser)``, ``run(args) -> int``), the
benchmark code in ``xqa.tools.bench``, and ``cli_reference``, which writes
docs/cli.md. The user's commands (``xqa.commands``) never import this package.
"""
