"""The command-line options ``xqa passages`` and ``xqa build --documents`` share."""
from __future__ import annotations

import argparse


def add_document_arguments(p: argparse.ArgumentParser) -> None:
    """The splitting options ``xqa passages`` and ``xqa build --documents`` share."""
    from xqa.documents.split import PACKED_OVERLAP, PACKED_TOKENS, SPLITS

    p.add_argument("--split", choices=SPLITS, default="packed",
                   help="packed: whole paragraphs packed up to --max-tokens e5 tokens (long ones cut in windows "
                        "sharing --overlap tokens); mia: the MIA 2022 / DPR rule, 100 words (language-specific "
                        "word segmentation), remainders over 20 kept")
    p.add_argument("--max-tokens", type=int, default=PACKED_TOKENS, help="packed: e5 tokens per passage at most")
    p.add_argument("--overlap", type=int, default=PACKED_OVERLAP,
                   help="packed: tokens two windows of a long paragraph share")
    p.add_argument("--strict", action="store_true",
                   help="stop at the first file, page or line that gives no text (default: skip it and report it)")
