"""The model tests run torch on two threads (the project's 2-core machines), whatever the
process had before; each module puts the count back when it is done."""

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)
