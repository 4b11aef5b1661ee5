"""Evaluation: official MIA 2022 EM/F1, retrieval accuracy/recall/MRR, significance, reports.

* :mod:`.mia` — end-to-end EM / F1 exactly as the MIA 2022 scripts;
* :mod:`.tokenize` — MeCab (unidic-lite), jieba.posseg, pythainlp, khmer-nltk segmentation;
* :mod:`.retrieval` — DPR ``has_answer``, top-k accuracy, recall@k, MRR@k;
* :mod:`.significance` — paired t-test on per-question scores;
* :mod:`.report` — Markdown report with PNG plots;
* :mod:`.inputs` — reading gold, prediction and retrieval-result files;
* :mod:`.coverage` — a submission check: one prediction per gold question;
* :mod:`.selective` — calibrated confidence: AUROC, AURC, ECE, and the answerability fit;
* :mod:`.judge` — judging ranked lists for a grid search (answer or gold-id relevance, cached);
* :mod:`.reading` — answer scorers, gold passages, reader examples and outputs;
* :mod:`.tuning` — the weights tuned on dev (α, μ, λ, β/γ, answerability) and writing them
  into pipeline.json.

Segmenters, scipy and matplotlib load on first use, not on import.
"""
from xqa.evaluation.inputs import load_gold, load_predictions, load_retrieval_results
from xqa.evaluation.languages import KNOWN_LANGUAGES, check_language, tokenizer_for
from xqa.evaluation.mia import (
    EndToEndScores,
    evaluate,
    exact_match,
    mia_score,
    normalize_answer,
    score_answer,
    split_mia,
    token_f1,
)
from xqa.evaluation.retrieval import (
    has_answer,
    mrr_at_k,
    recall_at_k,
    score_retrieval,
    topk_accuracy,
)
from xqa.evaluation.significance import compare_systems, paired_t_test
from xqa.evaluation.tokenize import segment_answer

__all__ = [
    "KNOWN_LANGUAGES", "EndToEndScores", "check_language", "compare_systems", "evaluate",
    "exact_match", "has_answer", "load_gold", "load_predictions", "load_retrieval_results",
    "mia_score", "mrr_at_k", "normalize_answer", "paired_t_test", "recall_at_k", "score_answer",
    "score_retrieval", "segment_answer", "split_mia", "token_f1", "tokenizer_for", "topk_accuracy",
]
