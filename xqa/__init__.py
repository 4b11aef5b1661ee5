"""xqa: multilingual open-domain question answering.

Kept free of imports on purpose: ``import xqa`` must stay cheap so that
``xqa --help`` answers at once and ``retriever``/``reader`` can use the leaf
modules ``xqa.records`` and ``xqa.artifacts`` without pulling in the rest.
"""

__version__ = "0.3.0"
