"""The embedding stage: what a model is, and the vectors it gives.

- :mod:`.models`: a model as a declaration (``ModelSpec``, its key ``name@fingerprint``, the
  manifest of every file that shapes its vectors, the errors). Light: no torch.
- :mod:`.embedder`: the loaded model (``load_embedder``, ``Embedder.embed``); heavy, imported
  only where vectors are really computed.
- :mod:`.export`: the OpenVINO / ONNX conversions and the int8 calibration.
- :mod:`.question`: the checked question path (``fast_queries``, ``QueryPath``).
- :mod:`.vector_cache`, :mod:`.drift`, :mod:`.wordpieces`: vectors already computed, a drift
  guard, word-piece counts.
- :mod:`.adaptation`: a model fine-tuned on the corpus (pairs, key, training).
- :mod:`.torch_threads`, :mod:`.openvino_runtime`: the runtimes' process settings.
"""
