"""``corecast sweep``: run a program at several thread counts, measure, extrapolate.

Each run goes through the preload library (``CORECAST_OUTPUT`` to a temporary file,
``CORECAST_QUIET=1``, ``CORECAST_TARGET`` = the prediction horizon) and is confined to
``n`` of the CPUs this process may use, chosen by ``--placement`` (``corecast.model.tuning.placement``;
``os.sched_setaffinity`` in the child, and ``OMP_PLACES``/``OMP_PROC_BIND`` for OpenMP),
so a pthreads program cannot spread over more cores than the count says.  The count reaches
the program through ``OMP_NUM_THREADS`` (openmp), ``POCL_CPU_MAX_CU_COUNT`` and the legacy
``POCL_MAX_PTHREAD_COUNT`` (opencl) and a
``{threads}`` placeholder anywhere in the command (every runtime).

Per count: the median wall time of the repetitions (``time.perf_counter`` around the
run), the spread (half the range) and, per stall category, the median over repetitions
of the ``stalls_s`` of the run's process lines summed over its processes.  Categories
that are zero at every count are left out.  Stall plugins (``--stall-plugin``) add
categories read from the program's stdout, stderr or a file.

Extrapolation: the time with ``corecast.predict(method="auto", stalls=...)``; every stall
category with ESTIMA's per-category extrapolation (method ``estima``, which needs
``estima.MIN_POINTS`` counts), or with fewer counts with ``auto`` on the category as a
curve; the future bottleneck is the category with the largest predicted stall at the
horizon; the preferred count is the time prediction's.

``run_sweep(...)`` returns the JSON object ``--json-out`` writes (the contract
``corecast.views.sweepviz`` consumes, read back as the checked ``corecast.io.sweepresult.SweepResult``)::

    {"measured": [{"threads": n, "time_s": t, "spread_s": d, "stalls_s": {category: s}}],
     "predictions": [{"threads": n, "value": v, "low": l, "high": h, "speedup": s}],
     "stall_predictions": {category: [{"threads": n, "value": v}]},
     "preferred_count": k, "fastest_count": f, "fastest_measured": false, "bottleneck": category,
     "command": [...], "runtime": "openmp" | "pthreads" | "opencl" | "mpi" (a launcher's rank sweep),
     "warnings": [...], "failed": [{"threads": n, "reason": "..."}],
     "placement": {"policy": "compact", "omp_places": true, "cpus": {"n": [cpu, ...]}},  # "launcher": {}
     "regions": [{"name": "main._omp_fn.0", "share": s, "measured": [...], "predictions": [...],
                  "stall_predictions": {...}, "preferred_count": k, "fastest_count": f, "fastest_measured": false,
                  "bottleneck": category, "warnings": [...]}]}

Each ``measured`` entry also lists its ``cpus`` (not in a launcher's sweep, whose
``placement`` policy is ``"launcher"`` with no ``cpus``: the launcher placed the ranks); ``cpus_allowed`` (not in a launcher's
sweep, nor in results written before it was added) is how many CPUs the sweep's process
could use, which every count's threads shared: ``corecast predict`` of the file predicts
for a machine of that many hardware threads unless told another.  ``regions`` holds every OpenMP region
taking at least ``MIN_REGION_SHARE`` of the run at some count, its own time (from the
runs' JSON Lines, read with ``tools.samples``) extrapolated like the whole program's.

``preferred_count`` and ``fastest_count`` are ``predict``'s preferred and fastest
counts, in the sweep's unit (threads, or ranks); ``preferred_threads`` and
``fastest_threads`` repeat them under their first names (``fastest_threads``: null in
results written before it was added; the reader takes either), and
``fastest_measured`` says that the fastest count is the best measured one, named because
the model's own optimum was measured slower (absent in results written before it was added).
the preferred and fastest counts and ``bottleneck`` are null, ``predictions`` and
``stall_predictions`` empty, when nothing could be predicted.

MPI rank sweeps (``launcher``, e.g. ``"mpirun -np {ranks}"``): the count is the number of
ranks, ``{ranks}`` in the launcher (and in the command) says where it goes, and each rank
runs under ``corecast run`` with its own JSON Lines.  No CPU confinement (the launcher
places the ranks); ``threads`` (one count) sets ``OMP_NUM_THREADS`` and ``{threads}`` for
hybrid programs.  The time per run is the longest MPI phase of its ranks (a rank's wall time less
``MPI_Init`` and ``MPI_Finalize``, as ``corecast merge`` computes it; the launcher's own
start-up is left out), the stall columns are the MPI waits summed over ranks, and the time
is extrapolated with the regression method (compute/wait split; ``auto`` below 3 counts).
The result has the same keys (the count under ``"threads"``) plus ``"count": "ranks"``,
``"launcher"`` and ``"threads_per_rank"``.  An OpenCL sweep (``runtime="opencl"``) has
``"count": "compute units"``: its count is pocl's compute units.

The package: ``inputs`` (counts, the command and launcher), ``runs`` (one run and what it
recorded), ``runner`` (the sweep); the result object, its reader and writer, and the stall
plugins are I/O (``corecast.io.sweepresult``, ``corecast.io.stallplugin``).  Extrapolation
is model code (``corecast.model.curve.extrapolation``); the terminal report is a view
(``corecast.views.sweeptable``).
"""
from __future__ import annotations

from ..errors import InputError
from .inputs import DEFAULT_REPEAT, DEFAULT_TIMEOUT_S, PLACEHOLDER, RUNTIMES, Launch, default_upto, parse_threads
from ..io.stallplugin import StallPlugin, load_plugins, parse_plugins
from ..io.sweepresult import MIN_REGION_SHARE, SweepError, SweepResult, write_json
from .runner import MIN_COUNTS, run_sweep
from .runs import RunOutput, RunResult, read_output, run_once

__all__ = ["DEFAULT_REPEAT", "DEFAULT_TIMEOUT_S", "PLACEHOLDER", "RUNTIMES", "InputError", "Launch",
           "StallPlugin", "default_upto", "load_plugins", "parse_plugins", "parse_threads",
           "MIN_REGION_SHARE", "SweepError", "SweepResult", "write_json", "MIN_COUNTS", "run_sweep",
           "RunOutput", "RunResult", "read_output", "run_once"]
