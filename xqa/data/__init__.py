"""Real public QA sets (the ``../shared/data`` folder) and what xqa makes of them.

- ``xqa.data.sets``: which set is which (language, split, license, train or evaluation
  only), and SQuAD-layout reading with answer offsets;
- ``xqa.data.corpus``: the shipped multilingual Wikipedia sample (``xqa/corpus``) and its
  evaluation questions (``xqa data corpus``);
- ``xqa.data.training``: reader and retriever training examples from the train splits
  only, with the shipped sample's paragraphs held out (``xqa data train``);
- ``xqa.data.own``: a user's own QA sets (SQuAD JSON, JSONL, CSV or TSV), checked, as the same training
  files (``xqa data own``).
"""
