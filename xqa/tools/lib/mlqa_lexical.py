"""The Λ column of ``xqa report mlqa``: SPAR's lexical model trained on MLQA dev contexts.

No labels are used: the queries are sentences of the MLQA dev contexts (all
languages), the BM25 teacher (the report's own BM25 indexes) labels them
(top 10 positives, bottom 5 of the top 50 hard negatives), and a tiny
bi-encoder with its own SentencePiece tokenizer is trained by the shared loop.
Λ then searches each question's language only, like BM25. Besides the
accuracy table, the rank-biased overlap (p = 0.9, depth 100) of Λ's and
BM25's rankings per language is printed and written to ``WORK/lexical_rbo.json``
(SPAR Table 6). Every stage is resumable and reused when complete.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

# A tiny model on a 2-core CPU: 500 steps, 2-8 s each depending on the load.
# Mean pooling: Λ imitates a bag of words, and from scratch it learns faster than [CLS] (docs/fusion.md).
SETTINGS = {"vocab_size": 8000, "sentences_per_passage": 3, "steps": 500, "batch_size": 32, "lr": 1e-3,
            "warmup": 30, "query_max_length": 48, "passage_max_length": 128, "pooling": "mean",
            "rbo_depth": 100}


def lexical_retriever(data: Mapping[str, Any], work: Path, teacher: Any):
    """Train (or reuse) Λ on the MLQA contexts, index them, report RBO with BM25; return Λ's retriever.

    ``teacher``: the BM25 retriever of the same contexts (the report's own), which labels Λ's
    training data and is compared with it; the caller opens and closes it."""
    from retriever.dense.model import BiEncoder
    from retriever.spar.data import TeacherConfig
    from retriever.spar.lexical import lexical_task, summary, teacher_data
    from retriever.spar.lexical_index import LexicalRetriever, build_lexical_index
    from xqa.artifacts import is_complete
    from xqa.tokenizer import train_tokenizer
    from xqa.training import TrainConfig, train

    s = SETTINGS
    work = Path(work)
    passages = [p for d in data.values() for p in d.passages]
    tok = train_tokenizer((t for p in passages for t in (p.title, p.text)), work / "lexical_tokenizer",
                          vocab_size=s["vocab_size"])
    lex_dir, index_dir = work / "lexical", work / "lexical_index"
    cfg = TeacherConfig(sentences_per_passage=s["sentences_per_passage"])
    train_ex, dev_ex, meta = teacher_data(teacher, lambda: passages, lex_dir, cfg, dev_size=500)
    print(f"Λ teacher data: {summary(meta)}")
    model = BiEncoder.from_scratch(tok, "tiny", query_max_length=s["query_max_length"],
                                   passage_max_length=s["passage_max_length"], pooling=s["pooling"],
                                   dropout=0.0, seed=0)
    task = lexical_task(model, passages, train_ex, dev_ex, cfg)
    train(task, train_ex, TrainConfig(out_dir=str(lex_dir), batch_size=s["batch_size"], max_steps=s["steps"],
                                      lr=s["lr"], warmup_steps=s["warmup"], eval_every=200, save_every=200,
                                      max_grad_norm=2.0))
    if not is_complete(index_dir):
        build_lexical_index(lex_dir, passages, index_dir)
    lam = LexicalRetriever.load(index_dir, same_language=True)
    _report_rbo(lam, teacher, data, work / "lexical_rbo.json", s["rbo_depth"])
    return lam


def _report_rbo(lam, bm25, data: Mapping[str, Any], path: Path, depth: int) -> None:
    from retriever.spar.diagnostics import mean_rbo
    from xqa.artifacts import write_json_atomic

    per = {}
    for lang, d in data.items():
        qs = d.questions
        a = [[h.id for h in x] for x in lam.search(qs, depth)]
        b = [[h.id for h in x] for x in bm25.search(qs, depth, missing="empty")]
        per[lang] = mean_rbo(a, b, p=0.9)
    macro = sum(per.values()) / len(per)
    write_json_atomic(path, {"p": 0.9, "depth": depth, "rbo": per, "macro": macro})
    cells = " | ".join(f"{lang} {v:.2f}" for lang, v in per.items())
    print(f"RBO(Λ, BM25), p=0.9, depth {depth}: {cells} | macro {macro:.2f}  ({path})")
