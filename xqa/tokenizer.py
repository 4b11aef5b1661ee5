"""Train the embedded default's SentencePiece tokenizer.

The result is a Hugging Face tokenizer folder (``AutoTokenizer.from_pretrained``
loads it) in the T5/mT5 convention — ``<pad>``=0, ``</s>``=1, ``<unk>``=2 — with
two control symbols, ``<cls>`` and ``<sep>``, that encoders which pool the first
token (the dense retriever) put in front of their inputs. ``spiece.model`` is
kept beside it so other tools can read the raw model.
"""
from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Iterable, Iterator

from xqa.artifacts import atomic_dir, check_replaceable, holds_kind, save_config, save_tokenizer
from xqa.errors import XqaError

SPECIAL = ("<cls>", "<sep>")


def train_tokenizer(texts: Iterable[str], out_dir: str | Path, vocab_size: int = 8000,
                    max_sentences: int = 2_000_000, overwrite: bool = False) -> Path:
    """Train a unigram SentencePiece model on ``texts`` and save it as an HF tokenizer folder."""
    import sentencepiece as spm
    from transformers import T5Tokenizer

    out_dir = Path(out_dir)
    ours = holds_kind(out_dir, "tokenizer")
    if ours and not overwrite:
        return out_dir
    check_replaceable(out_dir, "the tokenizer", ours or overwrite, "choose another --out")

    failed: list[BaseException] = []

    def sentences() -> Iterator[str]:
        try:
            for i, t in enumerate(texts):
                if i >= max_sentences:
                    break
                t = t.strip()
                if t:
                    yield t
        except Exception as e:  # SentencePiece would wrap it in a RuntimeError: raise it as it is
            failed.append(e)
            raise

    with atomic_dir(out_dir, overwrite=True) as tmp:
        raw = tmp / "raw"
        raw.mkdir()
        model = io.BytesIO()  # not model_prefix: the model would record its (temporary) path
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=sentences(), model_writer=model,
                vocab_size=vocab_size, hard_vocab_limit=False, model_type="unigram",
                pad_id=0, eos_id=1, unk_id=2, bos_id=-1, character_coverage=0.9999,
                control_symbols=list(SPECIAL), byte_fallback=True,
                # plain NFKC: the default nmt_nfkc also turns the zero-width (non-)joiner into a space,
                # and Telugu/Bengali/Persian names written with it could never be produced exactly
                normalization_rule_name="nfkc",
                input_sentence_size=max_sentences, shuffle_input_sentence=True,
                num_threads=2, minloglevel=2,
            )
        except RuntimeError as e:  # SentencePiece's checks, e.g. fewer pieces than the texts' characters
            if failed:  # reading the texts failed (a bad record): that error, not SentencePiece's
                raise failed[0] from None
            chars = re.search(r"smaller than required_chars\. \d+ vs (\d+)", str(e))
            if chars:
                raise XqaError(f"--vocab-size {vocab_size} is too small: these texts need at least {chars.group(1)} "
                               "pieces (one per character, and the bytes'); raise it") from None
            why = str(e).split("] ", 1)[-1]
            raise XqaError(f"SentencePiece cannot train a tokenizer on these texts: {why}") from None
        (raw / "spiece.model").write_bytes(model.getvalue())
        tok = T5Tokenizer.from_pretrained(str(raw), extra_ids=0)
        save_tokenizer(tok, tmp)
        shutil.move(str(raw / "spiece.model"), str(tmp / "spiece.model"))
        shutil.rmtree(raw)
        save_config(tmp, "tokenizer", {"vocab_size": len(tok), "spm_model": "unigram",
                                       "special": list(SPECIAL)})
    return out_dir
