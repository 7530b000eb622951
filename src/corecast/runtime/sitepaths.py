"""The module path of corecast's own interpreter in a program that is not Python.

That interpreter starts without ``site`` (runtime/build.py): ``site.main()`` would execute
the ``import`` lines of every ``.pth`` file, arbitrary code inside the profiled program.
The directories a ``.pth`` file names are another matter: a virtual environment may get
numpy that way (one on the 16-core machine saw its packages through a ``.pth`` file, and
the model had no numpy), so their path lines are read, as ``site.addpackage`` reads them,
and their import lines are not run."""
from __future__ import annotations

import os


def site_paths(site_dirs: list[str]) -> list[str]:
    """``site_dirs`` that exist, each followed by the existing directories its ``.pth``
    files name (in name order, as ``site`` takes them), without duplicates."""
    paths: list[str] = []
    for site_dir in site_dirs:
        if site_dir in paths or not os.path.isdir(site_dir):
            continue
        paths.append(site_dir)
        try:
            names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth") and not n.startswith("."))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(site_dir, name), encoding="utf-8-sig") as f:
                    lines = f.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                if not line.strip() or line.startswith("#") or line.startswith(("import ", "import\t")):
                    continue
                path = os.path.abspath(os.path.join(site_dir, line.rstrip()))
                if path not in paths and os.path.isdir(path):
                    paths.append(path)
    return paths


def model_sys_path(root: str, recorded: list[str]) -> list[str]:
    """The directories the model's own interpreter adds to ``sys.path``, in order: the
    package root (a regular install's site-packages, or an editable install's source
    folder), the site directories the build recorded (an editable install's environment,
    which nothing else names: the library lives in the source tree), then the user's and
    the Python's own site directories as ``site.main()`` orders them; each with what its
    ``.pth`` files name (a regular install's environment may reach numpy only that way)."""
    import site  # the interpreter runs without site: importing it runs nothing

    return site_paths([root, *recorded, site.getusersitepackages(), *site.getsitepackages()])
