"""The configuration stage: ``rag_pipeline.toml`` and its lock, read into typed values, and the
checks every input passes before any work.

- :mod:`.schema`: the file's typed values (``ProjectConfig``, ``ModelDeclaration``,
  ``Profile``) and the built-in default declaration.
- :mod:`.parse`: ``load_config`` / ``parse_config`` (one-line errors), the profile ``index``
  builds (``choose_profile``, ``select_profile``).
- :mod:`.lock`: ``rag_pipeline.lock.json`` (``load_lock``, ``effective_lock``, ``lock_json``).
- :mod:`.keys`: a declaration's spec and key (``model_specs``, ``declared_models``,
  ``write_lock``).
- :mod:`.init_file`: the configuration ``rag-pipeline init`` writes.
- :mod:`.validation`: argument checks shared by the CLI and the service.
- :mod:`.gold_file`: the gold-set and out-of-domain files (``load_gold_set``, ``load_ood``),
  here because ``adapt.held_out`` names a gold set; the evaluation stage scores them.
- :mod:`.root`: ``PROJECT_ROOT``, the one definition (``project_paths`` imports it).

Nothing is re-exported here: importing one module of this stage (:mod:`.validation`, say)
must not load the others.
"""
