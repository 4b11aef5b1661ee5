"""One module per ``xqa`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``.

Heavy libraries are imported inside ``run`` so that parsing stays instant.
"""
