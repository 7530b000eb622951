"""Where the built native libraries live (made by `pip install .`, see setup.py).

Plain path strings: `corecast run` imports this before it starts the program, and pathlib
(with urllib.parse and ipaddress) cost that launch 4 ms."""
from __future__ import annotations

import os

# The libraries' file names: runtime/build writes them, the paths below find them.
PRELOAD_NAME = "libcorecast_preload.so"
MODEL_NAME = "libcorecast_model.so"
CALIBRATE_NAME = "libcorecast_calibrate.so"

HERE = os.path.dirname(os.path.realpath(__file__))
PRELOAD = os.path.join(HERE, PRELOAD_NAME)
MODEL = os.path.join(HERE, MODEL_NAME)
CALIBRATE = os.path.join(HERE, CALIBRATE_NAME)
