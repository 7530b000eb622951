"""What every test shares: no test sees the calibration a developer's own `corecast
calibrate` left in ~/.cache (the runtime reads it by default)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _own_cache_home(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache-home")))
    yield
    patch.undo()
