"""Where the built native libraries live (made by `pip install .`, see setup.py)."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
PRELOAD = HERE / "libcorecast_preload.so"
MODEL = HERE / "libcorecast_model.so"
CALIBRATE = HERE / "libcorecast_calibrate.so"
