"""Documents in: a folder of files, or a WikiExtractor dump, cut into passages with provenance.

``xqa passages --documents DIR --out FILE`` and ``xqa build --documents DIR`` run
:func:`xqa.documents.collect.write_passages`, which streams every document of ``DIR``
through four steps:

* :mod:`.formats`: reading. ``.txt``, ``.md``, ``.html``/``.htm``, ``.pdf`` (its text layer,
  page by page), ``.docx`` and WikiExtractor ``--json`` output (``wiki_00`` files, ``.json``,
  ``.jsonl``), each also gzip'd (``.gz``; WikiExtractor's also ``.bz2``). The title comes
  from the document (HTML ``<title>``, the first Markdown heading, the Wikipedia title, the
  PDF's or the Word file's metadata), else the file name.
* :mod:`.language`: each document's language by xqa's language identification
  (:func:`xqa.langid.identify`), unless ``--lang`` names it; a document whose parts disagree
  (mixed) has its paragraphs identified one by one, each passage in one language; one not
  identified gets ``und``; both are listed in the report.
* :mod:`.split`: passages by a named rule: ``packed`` (the default: whole paragraphs packed
  up to N multilingual-e5 tokens, a longer paragraph cut into windows that overlap) or
  ``mia`` (the MIA 2022 / DPR 100-token rule of ``../shared/DESIGN.md``).
* :mod:`.collect`: passages written as they are made (a rerun resumes; the file appears
  whole or not at all), progress, and ``passages-report.json``: files read, skipped and why,
  passages per language.

Every passage's ``meta`` holds its provenance (:class:`xqa.records.Passage`):
:func:`xqa.documents.provenance.describe` is how ``xqa ask`` and the demo show it.

The readers of PDF, HTML and Word files need the ``documents`` extra
(``pip install 'xqa[documents]'``: pypdf, lxml, python-docx).
"""
from __future__ import annotations

from xqa.documents.split import SPLITS, SplitRule

__all__ = ["SPLITS", "SplitRule"]
