"""Tests for ``rag_pipeline.core.storage.full_disk``: a full disk names what was written."""

from __future__ import annotations

import errno
import os

import pytest

from rag_pipeline.core.storage.full_disk import naming_a_full_disk


def test_a_full_disk_or_quota_is_named_and_any_other_error_is_as_it_was():
    for code in (errno.ENOSPC, errno.EDQUOT):
        with pytest.raises(OSError) as full, naming_a_full_disk("to write", "/srv/data/x"):
            raise OSError(code, os.strerror(code))
        assert (full.value.errno, full.value.strerror) == (
            code, "no space left to write /srv/data/x: free space or move the data folder")
    with pytest.raises(PermissionError) as denied, naming_a_full_disk("to write", "/srv/data/x"):
        raise PermissionError(errno.EACCES, "Permission denied")
    assert denied.value.strerror == "Permission denied"
