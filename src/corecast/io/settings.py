"""Names of the ``CORECAST_*`` environment variables the Python side reads or sets (the C
side reads the same names in native/config.c).  Only the names: each reader checks its own
value, so a bad one is reported where its meaning is known.  The autoload sitecustomize
spells ``CORECAST_OPENCL`` itself: it runs before corecast is importable."""

OUTPUT = "CORECAST_OUTPUT"                  # JSON Lines path; {rank} and {pid} filled in
TARGET = "CORECAST_TARGET"                  # predict up to this many threads / compute units
TARGET_MACHINE = "CORECAST_TARGET_MACHINE"  # machine description (corecast run --target-machine)
MACHINE_FILE = "CORECAST_MACHINE_FILE"      # this machine's calibration (corecast calibrate); "": none
WINDOW_MS = "CORECAST_WINDOW_MS"            # sample window
QUIET = "CORECAST_QUIET"                    # "1": no exit report on stderr
STEER = "CORECAST_STEER"                    # "1": steer team sizes
PROBE = "CORECAST_PROBE"                    # "1": run some calls at smaller teams
NUMA_EVENTS = "CORECAST_NUMA_EVENTS"        # memory-traffic events to count (numa_events.plan)
LAUNCH_PID = "CORECAST_LAUNCH_PID"          # the pid `corecast run` execs: only it is "the program"
STDERR = "CORECAST_STDERR"                  # "DEV:INO" of the stderr `corecast run` had ("closed": none)
OPENCL = "CORECAST_OPENCL"                  # "1" / "0": instrument pyopencl or not
DISABLE = "CORECAST_DISABLE"                # "1": corecast stays out (library and OpenCL hook)
MAX_INPUT_MB = "CORECAST_MAX_INPUT_MB"      # largest input file read, MiB
DEBUG = "CORECAST_DEBUG"                    # set: tracebacks of internal errors
TEST_FAULT = "CORECAST_TEST_FAULT"          # tests only: segv|abort|hang at the exit prediction, slow_rewrite (settle.c)
