"""Torch's thread count is kept without importing torch and taken by the first model to load."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag_pipeline.core.embedding.torch_threads import set_torch_threads

KEPT_THEN_APPLIED = """
import sys
from rag_pipeline.core.embedding import torch_threads
print(torch_threads.set_torch_threads(1), "torch" in sys.modules, torch_threads.pending_torch_threads())
import torch
torch_threads.apply_torch_threads()
print(torch.get_num_threads(), torch_threads.pending_torch_threads())
torch_threads.apply_torch_threads()  # nothing kept any more: leaves torch's count alone
torch.set_num_threads(2)
torch_threads.apply_torch_threads()
print(torch.get_num_threads(), torch_threads.set_torch_threads(3), torch.get_num_threads())
"""


def test_a_count_below_one_is_refused():
    with pytest.raises(ValueError, match="^torch threads must be at least 1, not 0$"):
        set_torch_threads(0)


@pytest.mark.slow  # imports torch (in a child process)
def test_the_count_is_kept_until_torch_loads_then_applied_once():
    result = subprocess.run([sys.executable, "-c", KEPT_THEN_APPLIED], capture_output=True,
                            text=True, timeout=300, check=True)
    assert result.stdout.splitlines() == [
        "False False 1",  # kept: torch not imported by setting the count
        "1 None",  # the first model's import takes it
        "2 True 3",  # later counts apply at once, torch being loaded
    ]
