"""XML parsed safely: what the formats that read XML themselves (EPUB, OpenDocument) share."""

from __future__ import annotations

from rag_pipeline.core.ingest.extracted import ExtractionError

__all__ = ["safe_xml"]


def safe_xml(data: bytes) -> object:
    """XML parsed without resolving entities or touching the network (no XXE, no billion laughs).

    Raises:
        ExtractionError: Not well-formed XML.
    """
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise ExtractionError(f"not well-formed XML: {exc}") from exc
