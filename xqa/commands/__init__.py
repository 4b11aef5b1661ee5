"""The user's ``xqa`` commands, one module each: ``add_arguments(parser)`` and ``run(args) -> int``.

Heavy libraries are imported inside ``run`` so that parsing stays instant. The
tooling that measures xqa (bench, diagnose, report) is in ``xqa.tools``.
"""
