"""Where the tables live: a local folder or an object store, told apart in one place."""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.core.storage.location import local_folder, object_store, warehouse_location


def test_locations_are_told_apart():
    assert warehouse_location(Path("/data")) == "/data/warehouse"
    assert warehouse_location(Path("/data"), "s3://bucket/rag") == "s3://bucket/rag"
    assert [object_store(x) for x in ("s3://bucket/rag", "gs://b/p", "file:///srv/w", "/srv/w", "w")] == [
        True, True, False, False, False]
    assert local_folder("file:///srv/w") == Path("/srv/w") == local_folder("/srv/w")
