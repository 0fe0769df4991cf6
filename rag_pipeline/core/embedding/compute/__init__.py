"""Where an embeddings run computes its vectors: in this process (the default), or on a Ray
cluster's workers (``[compute] engine = "ray"``).

- :class:`ComputeSettings`: the configuration's ``[compute]`` table (engine, address, shard size).
- :func:`embedder_for`: the one hook of the build path: the embedder a run embeds with, the
  loaded model itself in-process, a :class:`~.ray_engine.RayEmbedder` on a cluster.
- :mod:`.shards`: texts split into shards by content hash (a re-run shards the same way).
- :mod:`.ray_engine`: the shards as Ray tasks, the model loaded once per worker process.

Ray is an extra (``pip install -e '.[ray]'``), imported only when the engine is ``ray``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from rag_pipeline.core.embedding.models import ModelSpec, TextEmbedder

__all__ = ["ComputeSettings", "ComputeUnreachableError", "Engine", "embedder_for",
           "engine_metadata"]


class Engine(StrEnum):
    IN_PROCESS = "in_process"
    RAY = "ray"


class ComputeUnreachableError(RuntimeError):
    """The Ray cluster cannot be reached (or does not speak Ray at its address), went away
    mid-run, or its workers kept dying on a shard; one line naming the address."""


@dataclass(frozen=True)
class ComputeSettings:
    """The ``[compute]`` table.

    Attributes:
        engine: ``in_process`` (default) or ``ray``.
        address: The Ray cluster: ``HOST:PORT`` of its head's GCS when this machine is a node
            of the cluster, ``ray://HOST:PORT`` (Ray Client, port 10001) when it is not, or
            ``auto`` (the cluster this machine belongs to). Required for ``ray``.
        shard_texts: Texts per shard (one Ray task each); a shard is chosen by content hash.
        connect_seconds: How long to wait for the head to answer before the run fails.
    """

    engine: Engine = Engine.IN_PROCESS
    address: str | None = None
    shard_texts: int = 64
    connect_seconds: float = 10.0


def embedder_for(settings: ComputeSettings, spec: ModelSpec,
                 load: Callable[[ModelSpec], TextEmbedder] | None = None) -> TextEmbedder:
    """The embedder a run embeds ``spec``'s texts with under ``settings``: in-process the
    model loaded by ``load`` (default :func:`~rag_pipeline.core.embedding.embedder.load_embedder`),
    on Ray a :class:`~.ray_engine.RayEmbedder` whose workers load it.

    Raises:
        ComputeUnreachableError: the engine is ``ray`` and its cluster does not answer.
    """
    if settings.engine is Engine.RAY:
        from rag_pipeline.core.embedding.compute.ray_engine import RayEmbedder

        return RayEmbedder(spec, settings)
    if load is None:
        from rag_pipeline.core.embedding.embedder import load_embedder as load
    return load(spec)


def engine_metadata(embedder: TextEmbedder) -> dict[str, str | int]:
    """What a run's metadata says about where it embedded: the engine, and on Ray how many
    nodes and shards took part."""
    nodes = getattr(embedder, "nodes", None)
    if nodes is None:
        return {"engine": Engine.IN_PROCESS.value}
    return {"engine": Engine.RAY.value, "ray_nodes": len(nodes), "ray_shards": sum(nodes.values())}
