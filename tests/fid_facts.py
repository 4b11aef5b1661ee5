"""Six capital-city facts and a micro FiD for the reader tests (``test_fid_*.py``).

``record(i)`` is a retrieval result holding fact ``i`` in one of its two passages. The
session fixtures ``tokenizer`` (a SentencePiece tokenizer trained on the facts) and
``trained`` (a micro FiD that has memorised them) are registered in ``conftest.py`` so that
every test file shares one of each.
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MICRO = {"d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4,
         "dropout_rate": 0.0, "feed_forward_proj": "gated-gelu"}

FACTS = [("Norland", "Velora", "en"), ("Sudmark", "Kastell", "en"), ("Ostria", "Lumbra", "de"),
         ("Westfal", "Dornik", "de"), ("Karesh", "Mirabad", "en"), ("Tovia", "Selune", "de")]
QUESTION = {"en": "What is the capital of {}?", "de": "Was ist die Hauptstadt von {}?"}
PASSAGE = {"en": "The capital of {} is {}.", "de": "Die Hauptstadt von {} ist {}."}


def record(i: int, n_ctx: int = 2) -> dict:
    country, city, lang = FACTS[i]
    gold = {"id": f"p{i}", "title": country, "text": PASSAGE[lang].format(country, city), "lang": lang,
            "score": 5.0, "source": "dense"}
    other_c, other_city, other_lang = FACTS[(i + 1) % len(FACTS)]
    other = {"id": f"p{(i + 1) % len(FACTS)}", "title": other_c, "lang": other_lang, "score": 7.0,
             "text": PASSAGE[other_lang].format(other_c, other_city), "source": "sparse"}
    ctxs = [other, gold][:n_ctx] if i % 2 else [gold, other][:n_ctx]
    return {"id": f"q{i}", "question": QUESTION[lang].format(country), "answers": [city], "lang": lang,
            "ctxs": ctxs}


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    from xqa.tokenizer import train_tokenizer

    texts = []
    for country, city, lang in FACTS:
        texts += [QUESTION[lang].format(country), PASSAGE[lang].format(country, city), city, country]
    texts += ["question: lang: en de title: context:"] * 5
    folder = train_tokenizer(texts * 20, tmp_path_factory.mktemp("tok") / "tok", vocab_size=400)
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="session")
def trained(tokenizer, tmp_path_factory):
    """A micro FiD trained by the shared loop until it has memorised the six facts."""
    import torch

    from reader.fid.data import FiDCollator, example_from_record
    from reader.fid.inference import FiDReader
    from reader.fid.task import FiDTask
    from xqa.training import TrainConfig, train

    torch.set_num_threads(1)
    reader = FiDReader.from_config(MICRO, tokenizer, seed=0, max_length=40, max_answer_len=8, n_context=2)
    examples = [example_from_record(record(i)) for i in range(len(FACTS))]
    task = FiDTask(reader, FiDCollator(tokenizer, n_context=2, max_length=40, max_answer_len=8),
                   dev_examples=examples)
    out = tmp_path_factory.mktemp("run") / "run"
    with torch.no_grad():
        first = float(task.loss(reader.model, task.collate(examples)))
    result = train(task, examples, TrainConfig(out_dir=str(out), batch_size=6, max_steps=150, lr=3e-3,
                                               weight_decay=0.0, eval_every=50, log_every=10,
                                               save_every=1000), progress=False)
    return {"reader": reader, "examples": examples, "out": out, "first_loss": first, "result": result}
