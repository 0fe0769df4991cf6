"""Document ids as every source names them."""

from rag_pipeline.core.ingest.sources.base import enclosing_ids, hidden_top


def test_an_id_runs_on_past_each_folder_and_container_outermost_first() -> None:
    assert enclosing_ids("mail/board.eml/minutes.zip/q1.md") == [
        "mail", "mail/board.eml", "mail/board.eml/minutes.zip"]
    assert enclosing_ids("readme.md") == []


def test_a_hidden_name_is_reported_up_to_its_first_hidden_segment() -> None:
    assert hidden_top("docs/.cache/x/y.md") == "docs/.cache"
    assert hidden_top("docs/x.md") is None
