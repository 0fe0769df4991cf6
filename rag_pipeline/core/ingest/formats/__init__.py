"""Document formats (interface stub until the ingest branch lands)."""
