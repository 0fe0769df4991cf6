"""The ingest stage (interface stub until the ingest branch lands)."""
