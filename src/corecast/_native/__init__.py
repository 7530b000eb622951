"""Where the built native libraries live (made by `pip install .`, see setup.py).

Plain path strings: `corecast run` imports this before it starts the program, and pathlib
(with urllib.parse and ipaddress) cost that launch 4 ms."""
from __future__ import annotations

import os

HERE = os.path.dirname(os.path.realpath(__file__))
PRELOAD = os.path.join(HERE, "libcorecast_preload.so")
MODEL = os.path.join(HERE, "libcorecast_model.so")
CALIBRATE = os.path.join(HERE, "libcorecast_calibrate.so")
