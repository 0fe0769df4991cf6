"""The answer stage: retrieve, gate, cite, and only then (optionally) generate.

:mod:`.ask` (``ask``, ``AskSettings``, ``Answer``) runs the steps; :mod:`.gate` is the only part
that can say no (``apply_gate``, ``gate_cut``: the one place a cut is resolved); the refusal
signals and the honest choice of a cut are :mod:`.refusal`; :mod:`.citations` attaches the
sources, :mod:`.generation` calls an OpenAI-compatible endpoint and checks its text, and
:mod:`.answer_json` is the one JSON form of an answer.
"""
