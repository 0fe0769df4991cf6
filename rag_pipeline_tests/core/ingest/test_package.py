"""The stage's face (``rag_pipeline.core.ingest``) offers its names without loading every format
for a caller that needs one light module."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rag_pipeline.core.ingest as ingest


@pytest.mark.parametrize("name", ingest.__all__)
def test_every_name_the_stage_offers_is_its_modules_own(name: str):
    value = getattr(ingest, name)
    home = sys.modules[f"rag_pipeline.core.ingest.{ingest._MODULE_OF[name]}"]
    assert value is getattr(home, name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'extract_everything'"):
        ingest.extract_everything  # noqa: B018 - the lookup is the test


def test_importing_the_extracted_values_loads_no_format():
    # What chunking imports (Section): before the face was lazy, it loaded every format's
    # module (PDF, HTML, DOCX, ...) and their libraries with it.
    loaded = subprocess.run([sys.executable, "-c", "import sys, rag_pipeline.core.ingest.extracted; "
                             "print(sorted(m for m in sys.modules if m.startswith('rag_pipeline')))"],
                            capture_output=True, text=True, check=True).stdout
    assert "rag_pipeline.core.ingest.formats" not in loaded
    assert "rag_pipeline.core.ingest.extracted" in loaded
