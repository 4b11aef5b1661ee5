"""The span reader: an extractive reader on a pretrained multilingual encoder.

- ``reader.span.model``: ``SpanModel`` (encoder + start/end head + relevance head);
- ``reader.span.data``: (question, passage) windows with character offsets;
- ``reader.span.inference``: ``SpanReader`` (load/save/read) and ``SpanOutput``;
- ``reader.span.task``: the training task for ``xqa.training.train``;
- ``reader.span.delta``: a trained reader shipped as the int8 difference to its base encoder.

Evidence fusion over spans is :func:`reader.evidence.fuse_spans`, shared with FiD's.
"""
