"""The evaluation stage, the top of the core: how well retrieval and the gate work, measured.

:mod:`.run` evaluates a built index (``run_eval``) with :mod:`.evaluate` (report rows and the
driver) over the runs of :mod:`.catalogue`, and measures the gate in :mod:`.gate_sweep`;
:mod:`.gold` validates the gold sets (read by
:mod:`rag_pipeline.core.config.gold_file`), :mod:`.metrics` holds the formulas and statistics,
:mod:`.tables` and :mod:`.report` show the report; :mod:`.model_comparison` and
:mod:`.adoption` compare two models, :mod:`.beir` runs a public BEIR dataset.
"""
