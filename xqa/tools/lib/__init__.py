"""The library behind the ``xqa bench``, ``xqa diagnose`` and ``xqa report`` wrappers in :mod:`xqa.tools`.

Benchmarks (``sparse``, ``dense``, ``encoder``, ``dhr``, ``fusion``, ``reader``,
``demo``, ``load``: each measures one area and renders a table), the MLQA
retrieval tasks (``mlqa``, ``mlqa_lexical``), R@k per language pair
(``pairs``), the language identification measurement (``langid``,
``langid_probe``) and the reproduction matrix (``repro``).
"""
