"""The text stage, the bottom of the core: how text becomes BM25 terms (:mod:`.analyzers`:
``Analyzer``, ``analyze``), Markdown tables for the UI and the CLI (:mod:`.markdown_table`), and
text made safe to print (:mod:`.terminal`), JSON Lines read with one-line errors
(:mod:`.jsonl`), and the one error an unusable user value raises (:mod:`.arguments`:
``InvalidArgumentError``). Imports no other stage."""
