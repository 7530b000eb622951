/* The bridge to the model library (cffi-embedded Python), loaded lazily.
 *
 * Non-Python hosts: the model library brings its own interpreter (Python home and
 * package root are passed before it starts).  Python hosts: the host's interpreter runs
 * the model; its version must match the model library's, and an atexit hook registered
 * there produces the exit report while the interpreter still lives. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apart.h"
#include "corecast.h"
#include "lazy.h"
#include "sample.h"

#ifndef CC_PY_VERSION
#define CC_PY_VERSION "unknown"
#endif
#ifndef CC_PY_SONAME
#define CC_PY_SONAME ""
#endif
#ifndef CC_PY_HOME
#define CC_PY_HOME ""
#endif

enum { MODEL_UNTRIED, MODEL_READY, MODEL_FAILED };
static int state = MODEL_UNTRIED;
static int loading; /* spin flag */
static char why[256];
static int (*model_predict)(const struct cc_sample *, struct cc_result *);
static int host_python = -1;
/* CPU nanoseconds of the model's start and of all its work (summary's "sampler" object):
 * corecast_cpu_s less these is the measurement's own. */
static unsigned long start_cpu_ns, model_cpu_ns;
static void (*exit_report)(void);

void cc_model_set_exit_report(void (*report)(void)) { exit_report = report; }

/* Found with the host, at the start: the exit may come where the loader cannot be asked
 * (a dl_iterate_phdr callback holds its lock: lifecycle.c). */
static int (*py_alive)(void), (*py_held)(void);

int cc_host_is_python(void) {
    /* Decided before corecast loads any Python of its own. */
    if (__atomic_load_n(&host_python, __ATOMIC_ACQUIRE) < 0) {
        py_alive = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
        py_held = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
        __atomic_store_n(&host_python, py_alive != NULL, __ATOMIC_RELEASE);
    }
    return host_python;
}

/* os._exit and os.exec* leave Python holding its interpreter: the model (which runs in
 * it) cannot run on the sampler, and letting go of it would let the program's other
 * Python threads run on past the point where a plain run ends them. */
int cc_holds_python(void) { return cc_host_is_python() && py_held && py_alive() && py_held(); }

const char *cc_model_warning(void) { return state == MODEL_FAILED ? why : NULL; }

static void fail(const char *msg) {
    snprintf(why, sizeof why, "%s", msg);
    state = MODEL_FAILED;
}

/* Every reason the model did not start says so, in the table and as the JSON "model". */
static void fail_start(const char *msg) {
    char text[sizeof why];
    snprintf(text, sizeof text, "the model could not start: %s", msg);
    fail(text);
}

/* Whether the process has locked memory (VmLck): after its mlockall(MCL_FUTURE) a refused
 * dlopen ("failed to map segment") is its RLIMIT_MEMLOCK, not a broken install. */
static int memory_locked(void) {
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strstr(buf, "\nVmLck:");
    return p && strtol(p + 7, NULL, 10) > 0;
}

static int own_dir(char *out, size_t size) {
    const char *file = cc_library_file();
    if (!file)
        return 0;
    if (!realpath(file, out))
        snprintf(out, size, "%s", file);
    char *slash = strrchr(out, '/');
    if (!slash)
        return 0;
    *slash = 0;
    return 1;
}

/* Where the model library was loaded from, once it was: its libraries are in the process. */
static char loaded_from[PATH_MAX];

static void load(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], root[PATH_MAX];
    if (!own_dir(dir, sizeof dir))
        return fail_start("cannot locate the corecast library directory");
    snprintf(path, sizeof path, "%s/libcorecast_model.so", dir);
    /* <root>/corecast/_native/<this library>: root goes on the model's sys.path. */
    snprintf(root, sizeof root, "%s", dir);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(root, '/');
        if (slash)
            *slash = 0;
    }
    int python = cc_host_is_python();
    if (python) {
        const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
        int (*alive)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
        const char *v = version ? version() : "?";
        size_t k = strlen(CC_PY_VERSION);
        if (strncmp(v, CC_PY_VERSION, k) != 0 || (v[k] != '.' && v[k] != ' ' && v[k] != 0)) {
            char msg[160];
            snprintf(msg, sizeof msg, "host Python %.*s differs from the model's Python %s",
                     (int)strcspn(v, " "), v, CC_PY_VERSION);
            return fail_start(msg);
        }
        if (!alive || !alive())
            return fail_start("the Python host finished before the model was reached");
    } else {
        char probe[PATH_MAX + 64];
        snprintf(probe, sizeof probe, "%s/lib/python%s/encodings/__init__.py", CC_PY_HOME,
                 CC_PY_VERSION);
        if (access(probe, R_OK) != 0) /* a program that dropped its privileges may not read it */
            return fail_start(errno == EACCES || errno == EPERM
                                  ? "this process may not read the Python the model was built with (" CC_PY_HOME ")"
                                  : "the Python the model was built with is gone (" CC_PY_HOME ")");
    }
    void *h = dlopen(path, RTLD_NOW | (python ? RTLD_LOCAL : RTLD_GLOBAL));
    if (!h) {
        char msg[200];
        const char *err = dlerror();
        if (err && strstr(err, "failed to map") && memory_locked()) /* the one line has 160 bytes */
            return fail_start("cannot map the model library: the program locks its memory (mlockall) "
                              "and RLIMIT_MEMLOCK has no room for it");
        snprintf(msg, sizeof msg, "cannot load the model library: %s", err ? err : "?");
        return fail_start(msg);
    }
    snprintf(loaded_from, sizeof loaded_from, "%s", dir); /* its libraries are in: see below */
    /* Extension modules the model imports need libpython's symbols globally. */
    if (!python && CC_PY_SONAME[0])
        dlopen(CC_PY_SONAME, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    void (*configure)(const char *, const char *, const char *, int, void (*)(void)) =
        (void (*)(const char *, const char *, const char *, int, void (*)(void)))dlsym(h, "corecast_model_configure");
    model_predict = (int (*)(const struct cc_sample *, struct cc_result *))dlsym(h, "corecast_model_predict");
    const char *(*start)(void) = (const char *(*)(void))dlsym(h, "corecast_model_start");
    if (!configure || !model_predict || !start)
        return fail_start("the model library lacks its entry points");
    configure(root, cc_cfg.start_dir, CC_PY_HOME, python, exit_report);
    /* cffi would answer a failed start with a zeroed result, read as success. */
    const char *error = start();
    if (error)
        return fail_start(error);
    state = MODEL_READY;
}

#ifndef CC_TEARDOWN_RUNTIMES
#define CC_TEARDOWN_RUNTIMES ""
#endif
#ifndef CC_TEARDOWN_DIR
#define CC_TEARDOWN_DIR "teardown_order"
#endif

/* The runtime by the name the loader knows it under (its soname or the name it was loaded
 * by, as it will resolve the library's need); finding it may search the library path
 * where it is not, hence apart. */
static void load_after(void *name) {
    if (!dlopen(name, RTLD_LAZY | RTLD_NOLOAD))
        return; /* the handle is kept: the process is ending */
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/" CC_TEARDOWN_DIR "/%s.so", loaded_from, (const char *)name);
    dlopen(path, RTLD_LAZY | RTLD_LOCAL);
}

/* The exit report's end, the model done: the model's libraries (libpython, the extension
 * modules it imported) are to be finalized before the program's OpenMP runtime.  glibc
 * before 2.39 finalizes objects in load order, each before those it needs (2.39 on: in
 * reverse order of their constructors, where this is already so), so libraries loaded after
 * the runtime went after it.  LLVM's and Intel's runtimes free their threads' state in
 * their destructor; a program that exits while other threads are in parallel regions has
 * those threads touch it until the process ends, and every finalizer after the runtime's
 * widened that window: a clang host exiting from one thread while two ran regions crashed
 * in 30 of 200 runs with the report, 12 without corecast.  A library loaded last that
 * needs the runtime (runtime/build.py's, one per name) puts the runtime after all loaded
 * before it.  libgomp's destructor frees nothing the program's threads use. */
void cc_model_finalize_first(void) {
    if (state != MODEL_READY) /* nothing loaded, or a fork child's model, not its own */
        return;
    const char *runtime = cc_omp_runtime_soname(); /* the name the anchor's need resolves by */
    if (!runtime)
        return;
    char names[] = " " CC_TEARDOWN_RUNTIMES " ", word[80], name[64];
    snprintf(word, sizeof word, " %s ", runtime);
    snprintf(name, sizeof name, "%s", runtime);
    double cpu_s;
    if (strstr(names, word) && cc_try_apart(load_after, name, &cpu_s))
        cc_own_cpu_add(cpu_s);
}

static unsigned long cpu_ns_since(double t0) {
    double d = cc_thread_cpu_s() - t0;
    return d > 0 ? (unsigned long)(d * 1e9) : 0;
}

double cc_model_start_cpu_s(void) { return __atomic_load_n(&start_cpu_ns, __ATOMIC_RELAXED) * 1e-9; }
double cc_model_cpu_s(void) { return __atomic_load_n(&model_cpu_ns, __ATOMIC_RELAXED) * 1e-9; }

static int predict(const struct cc_sample *s, struct cc_result *r);

int cc_model_predict(const struct cc_sample *s, struct cc_result *r) {
    if (cc_cfg.quiet && !cc_cfg.output[0] && (!cc_cfg.steer || s->final)) {
        /* Nobody would read a prediction (steering reads the windows' only): spare the
         * program the interpreter's start, or the exit's fits. */
        r->status = -1;
        snprintf(r->note, sizeof r->note, "not needed (quiet, no output)");
        return -1;
    }
    double t0 = cc_thread_cpu_s();
    int rc = predict(s, r);
    __atomic_add_fetch(&model_cpu_ns, cpu_ns_since(t0), __ATOMIC_RELAXED);
    return rc;
}

/* Whether this thread holds a Python host's GIL: the model's start on another thread
 * (PyGILState_Ensure) waits for it, so this one must not wait for that start. */
static int holds_gil(void) { return cc_host_is_python() && py_held && py_held(); }

/* A Python host that finalizes ends a starting thread that waits for its GIL (sampler.c):
 * the start is over, the flag not left held for a later caller to spin on. */
static void start_ended(void *unused) {
    fail_start("the Python host finished while the model started");
    __atomic_store_n(&loading, 0, __ATOMIC_RELEASE);
}

static int predict(const struct cc_sample *s, struct cc_result *r) {
    if (state == MODEL_UNTRIED) {
        while (__atomic_exchange_n(&loading, 1, __ATOMIC_ACQUIRE)) {
            if (holds_gil()) {
                r->status = -1;
                snprintf(r->note, sizeof r->note, "the model was still starting on another thread");
                return -1;
            }
            sched_yield(); /* the other caller may be starting an interpreter */
        }
        if (state == MODEL_UNTRIED) {
            double t0 = cc_thread_cpu_s();
            pthread_cleanup_push(start_ended, NULL);
            load();
            pthread_cleanup_pop(0);
            __atomic_add_fetch(&start_cpu_ns, cpu_ns_since(t0), __ATOMIC_RELAXED);
        }
        __atomic_store_n(&loading, 0, __ATOMIC_RELEASE);
    }
    if (state != MODEL_READY) {
        r->status = -1;
        snprintf(r->note, sizeof r->note, "%s", why);
        return -1;
    }
    if (cc_host_is_python()) {
        int (*alive)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
        if (!alive || !alive()) {
            r->status = -1;
            snprintf(r->note, sizeof r->note, "the Python host had finished");
            return -1;
        }
    }
    /* The interpreter starts without touching the program's locale (runtime/build.py's
     * corecast_model_configure): no save and restore here, which would race with a
     * program that sets its own meanwhile. */
    int rc = model_predict(s, r);
    if (rc != 0 && !r->note[0])
        snprintf(r->note, sizeof r->note, "the model failed (code %d)", rc);
    if (rc != 0)
        r->status = rc;
    return rc;
}

/* Python hosts: start the model now, on the program's own thread while it is still the
 * only one, so the atexit hook is in place however short the run (a load from the
 * sampler would queue for the GIL behind the program's threads). */
void cc_model_warmup(void) {
    /* Mapped for the call alone, without regions (lazy.h, sample.h). */
    size_t sb = CC_RECORD_BYTES(struct cc_sample, 0), rb = CC_RECORD_BYTES(struct cc_result, 0);
    struct cc_sample *empty = cc_map(sb);
    struct cc_result *ignored = cc_map(rb);
    if (empty && ignored) { /* refused: the model starts at its first prediction instead */
        empty->abi = CC_ABI_VERSION;
        struct cc_thread *t = cc_self();
        t->guard++;
        cc_model_predict(empty, ignored);
        t->guard--;
    }
    cc_unmap(empty, sb);
    cc_unmap(ignored, rb);
}

void cc_model_after_fork(void) {
    /* A forked child of a non-Python host must not enter an interpreter whose other
     * threads (and perhaps its lock) stayed behind; Python hosts re-initialise their
     * interpreter in os.fork and keep the model.  A start another thread was making at the
     * fork (an interpreter or dlopen half done) is nobody's in the child, on any host: made
     * again there, it would build on the half. */
    if (loading && state == MODEL_UNTRIED)
        fail("model not available in a child forked while the model was starting");
    else if (state == MODEL_READY && !cc_host_is_python())
        fail("model not available in a child forked after the model was loaded");
    loading = 0;
}

/* Tests (CORECAST_TEST_FAULT=loading_at_fork): the flag held across the program's forks,
 * as a thread holds it while it starts the model. */
static void hold_loading(void) {
    while (__atomic_exchange_n(&loading, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}
static void drop_loading(void) { __atomic_store_n(&loading, 0, __ATOMIC_RELEASE); }
void cc_model_test_hooks(void) {
    if (cc_cfg.loading_at_fork)
        pthread_atfork(hold_loading, drop_loading, NULL);
}

/* Tests (CORECAST_TEST_FAULT=sampler_first): the program's thread goes on only once the
 * sampler has begun the model's start (bounded: a sampler that never starts is no hang). */
void cc_model_test_wait_start(void) {
    for (int i = 0; i < 20000 && !__atomic_load_n(&loading, __ATOMIC_ACQUIRE) && state == MODEL_UNTRIED; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}
