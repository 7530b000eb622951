/* The OMPT ABI subset shims/ompt.c uses (OpenMP 5.1, omp-tools.h), declared here so that
 * corecast builds without the runtime's headers. */
#ifndef CORECAST_OMPT_ABI_H
#define CORECAST_OMPT_ABI_H

#include <stdint.h>

typedef union {
    uint64_t value;
    void *ptr;
} ompt_data_t;
typedef void (*ompt_callback_t)(void);
typedef void (*ompt_interface_fn_t)(void);
typedef ompt_interface_fn_t (*ompt_function_lookup_t)(const char *);
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t callback);
typedef struct {
    int (*initialize)(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data);
    void (*finalize)(ompt_data_t *tool_data);
    ompt_data_t tool_data;
} ompt_start_tool_result_t;

enum { /* callback events */
    ompt_callback_parallel_begin = 3, ompt_callback_parallel_end = 4, ompt_callback_task_create = 5,
    ompt_callback_task_schedule = 6, ompt_callback_implicit_task = 7,
    ompt_callback_sync_region_wait = 16, ompt_callback_mutex_released = 17, ompt_callback_work = 20,
    ompt_callback_mutex_acquire = 26, ompt_callback_mutex_acquired = 27, ompt_callback_nest_lock = 28,
};
enum { ompt_scope_begin = 1, ompt_scope_end = 2 };
enum { ompt_set_never = 1 }; /* results above it: the callback is (at least sometimes) made */
enum { ompt_task_initial = 0x1, ompt_task_explicit = 0x4 };
enum { ompt_task_complete = 1 }; /* ompt_task_status_t: the task ended (its last stretch) */
typedef struct ompt_frame_s ompt_frame_t;
enum { ompt_parallel_league = 0x40000000 };
/* Barrier kinds; 1 and 2 are deprecated in 5.1 but old runtimes (LLVM 14) still send 2
 * for both the join barrier and a construct's. */
enum {
    ompt_sync_region_barrier = 1, ompt_sync_region_barrier_implicit, ompt_sync_region_barrier_explicit,
    ompt_sync_region_barrier_implementation, ompt_sync_region_taskwait, ompt_sync_region_taskgroup,
    ompt_sync_region_barrier_implicit_workshare = 8,
    ompt_sync_region_barrier_implicit_parallel,
};
enum {
    ompt_mutex_lock = 1, ompt_mutex_test_lock, ompt_mutex_nest_lock, ompt_mutex_test_nest_lock,
    ompt_mutex_critical, ompt_mutex_atomic, ompt_mutex_ordered,
};
enum { ompt_work_single_executor = 3 };

#endif
