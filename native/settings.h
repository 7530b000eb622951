/* Generated from src/corecast/io/settings.py (python -m corecast.io.settings): do not
 * edit; tests/test_settings.py fails when it and the table differ. */
#ifndef CORECAST_SETTINGS_H
#define CORECAST_SETTINGS_H

#define CC_DEFAULT_CORES (-1) /* a default of this machine's online CPUs */

#define CC_ENV_DISABLE "CORECAST_DISABLE"
#define CC_ENV_TARGET "CORECAST_TARGET"
#define CC_ENV_WINDOW_MS "CORECAST_WINDOW_MS"
#define CC_ENV_OUTPUT "CORECAST_OUTPUT"
#define CC_ENV_QUIET "CORECAST_QUIET"
#define CC_ENV_STEER "CORECAST_STEER"
#define CC_ENV_PROBE "CORECAST_PROBE"
#define CC_ENV_EXIT_TIMEOUT_MS "CORECAST_EXIT_TIMEOUT_MS"
#define CC_ENV_KEEP_COUNTING "CORECAST_KEEP_COUNTING"
#define CC_ENV_DISPLAY_ENV "CORECAST_DISPLAY_ENV"
#define CC_ENV_TARGET_MACHINE "CORECAST_TARGET_MACHINE"
#define CC_ENV_MACHINE_FILE "CORECAST_MACHINE_FILE"
#define CC_ENV_OPENCL "CORECAST_OPENCL"
#define CC_ENV_MAX_INPUT_MB "CORECAST_MAX_INPUT_MB"
#define CC_ENV_DEBUG "CORECAST_DEBUG"
#define CC_ENV_NUMA_EVENTS "CORECAST_NUMA_EVENTS"
#define CC_ENV_LAUNCH_PID "CORECAST_LAUNCH_PID"
#define CC_ENV_STDERR "CORECAST_STDERR"
#define CC_ENV_WARNED_PID "CORECAST_WARNED_PID"
#define CC_ENV_IGNORED_SIGNALS "CORECAST_IGNORED_SIGNALS"
#define CC_ENV_CALLER_LC_CTYPE "CORECAST_CALLER_LC_CTYPE"
#define CC_ENV_TEST_FAULT "CORECAST_TEST_FAULT"

/* X(name, lo, hi, default, cc_cfg field): the whole numbers the library parses. */
#define CC_SETTINGS_INT(X) \
    X("CORECAST_DISABLE", 0, 1, 0, disabled) \
    X("CORECAST_TARGET", 1, 1024, CC_DEFAULT_CORES, target) \
    X("CORECAST_WINDOW_MS", 10, 60000, 200, window_ms) \
    X("CORECAST_QUIET", 0, 1, 0, quiet) \
    X("CORECAST_STEER", 0, 1, 0, steer) \
    X("CORECAST_PROBE", 0, 1, 0, probe) \
    X("CORECAST_EXIT_TIMEOUT_MS", 0, 600000, 10000, exit_timeout_ms) \
    X("CORECAST_KEEP_COUNTING", 0, 1, 0, keep_counting) \
    X("CORECAST_DISPLAY_ENV", 0, 1, 0, display_env) \
    X("CORECAST_LAUNCH_PID", 0, INT_MAX, 0, launch_pid) \

/* Every setting CORECAST_DISPLAY_ENV shows, in the table's order. */
#define CC_SETTINGS_SHOWN \
    "CORECAST_DISABLE", \
    "CORECAST_TARGET", \
    "CORECAST_WINDOW_MS", \
    "CORECAST_OUTPUT", \
    "CORECAST_QUIET", \
    "CORECAST_STEER", \
    "CORECAST_PROBE", \
    "CORECAST_EXIT_TIMEOUT_MS", \
    "CORECAST_KEEP_COUNTING", \
    "CORECAST_DISPLAY_ENV", \
    "CORECAST_TARGET_MACHINE", \
    "CORECAST_MACHINE_FILE", \
    "CORECAST_OPENCL", \
    "CORECAST_MAX_INPUT_MB", \
    "CORECAST_DEBUG", \
    "CORECAST_NUMA_EVENTS", \
    "CORECAST_LAUNCH_PID", \
    "CORECAST_STDERR", \
    "CORECAST_TEST_FAULT", \

/* Every name of the table: a CORECAST_* variable not here is no setting (a typo). */
#define CC_SETTINGS_ALL CC_SETTINGS_SHOWN \
    "CORECAST_WARNED_PID", \
    "CORECAST_IGNORED_SIGNALS", \
    "CORECAST_CALLER_LC_CTYPE", \

#define CC_NAME_MAX 64 /* longer names get no suggestion */
#define CC_NAME_NEAR 2 /* edits at most, for a suggestion (settings.closest) */

/* The MPI launchers' rank and world-size variables, tried in this order. */
#define CC_RANK_VARS "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"
#define CC_SIZE_VARS "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"

#endif
