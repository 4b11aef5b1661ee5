"""User-facing applications built on xqa: the Gradio demo (``apps.demo``).

Imports point one way, ``apps -> xqa``: nothing here is imported by ``xqa``,
``retriever`` or ``reader``, except that the ``xqa demo`` command serves it.
"""
