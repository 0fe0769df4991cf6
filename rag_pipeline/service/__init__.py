"""The query service: ``rag-pipeline serve`` loads the model and a partition once and answers
over HTTP (see :mod:`rag_pipeline.service.app`)."""
