"""The runtime stage: this machine's processes. Whether a process is alive, a process group's
members, a parent-death signal, a lock file that names its holder, the Dagster daemon
(:mod:`.processes`), and the address a running ``serve`` records for ``ask``
(:mod:`.serve_record`), and the CPU's name and flags (:mod:`.cpu`). Imports no other stage."""
