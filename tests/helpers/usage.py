"""A usage error as the tests expect every one: exit code 2 and a fix."""

from __future__ import annotations

import pytest

from embedprobe.core.errors import UsageError


def usage_error(func, *args) -> UsageError:
    """The UsageError `func(*args)` raises, checked to carry exit code 2 and a `fix:`."""
    with pytest.raises(UsageError) as caught:
        func(*args)
    assert caught.value.exit_code == 2 and caught.value.fix
    return caught.value
