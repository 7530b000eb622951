"""``python -m corecast``: the command line."""
from .cli import main

raise SystemExit(main())
