"""The chunking stage: a document's canonical text cut into chunks, six ways, so the strategies
can be compared (:mod:`.strategies`: ``ChunkingStrategy``, ``ChunkingSettings``, ``Chunk``,
``chunk_document``). A chunk keeps its character offsets into the canonical text."""
