"""BM25 over multilingual-e5's SentencePiece pieces, and its learned query augmentation.

- :mod:`.pieces`: one Lucene index of every passage's e5 pieces (all languages
  together), the plain BM25 retriever over it (``"pieces"``), weighted queries,
  and the collection statistics (idf, BM25 term weights) with Lucene's formula.
- :mod:`.model`: the query-augmentation model of Chen & Wiseman 2023, "BM25
  Query Augmentation Learned End-to-End", and its retriever (``"bm25-aug"``).
- :mod:`.task`: its training task for xqa's shared training loop.
"""
