/* The model library's C glue (libcorecast_model.so, cffi's embedding API; built by
 * src/corecast/runtime/build.py, which puts `static const char cc_site[]` (the recorded
 * site directories) before this text).  The preload library hands over the package root,
 * the program's start directory, the Python home and its exit-report callback before the interpreter starts.  Not part of
 * the preload library: build.py compiles native/*.c only, not native/model/. */

#include <Python.h>
#include <string.h>
#include <sys/resource.h>
#include "model_abi.h"

static char cc_root[4096];
static char cc_start_dir[4096]; /* where the program started: relative machine files are its */
static int cc_host_python;
static void (*cc_final_cb)(void);
/* Why the model cannot start ("" while it can): cffi answers a failed start with zeroes,
 * which read as success, and prints its reason on a stderr the program may have closed. */
static char cc_start_error[200];
static int cc_started; /* set by the init code's last line only */

static void start_failed(const char *what, const char *detail) {
    if (!cc_start_error[0])
        snprintf(cc_start_error, sizeof cc_start_error, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

/* The pending Python exception as the reason (GIL held), cleared. */
static void python_failed(const char *what) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    char detail[160];
    snprintf(detail, sizeof detail, "%s: %s", type ? ((PyTypeObject *)type)->tp_name : "error", msg ? msg : "?");
    start_failed(what, detail);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* sys.path of our own interpreter, set before cffi imports _cffi_backend: the package
 * root, the site directories the build recorded and the interpreter's own, with the
 * paths their .pth files name (runtime/sitepaths.py). */
static const char cc_path_code[] =
    "import sys\n"
    "sys.path.insert(0, root)\n"
    "from corecast.runtime.sitepaths import model_sys_path\n"
    "sys.path.extend(p for p in model_sys_path(root, [p for p in recorded.split(':') if p])\n"
    "                if p not in sys.path)\n";

static void set_path(const char *root) {
    PyObject *globals = PyDict_New(), *r = NULL;
    PyObject *root_s = PyUnicode_DecodeFSDefault(root), *site_s = PyUnicode_DecodeFSDefault(cc_site);
    if (globals && root_s && site_s && PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0
        && PyDict_SetItemString(globals, "root", root_s) == 0 && PyDict_SetItemString(globals, "recorded", site_s) == 0)
        r = PyRun_String(cc_path_code, Py_file_input, globals, globals);
    if (!r)
        python_failed("cannot set the model's module path");
    Py_XDECREF(r);
    Py_XDECREF(root_s);
    Py_XDECREF(site_s);
    Py_XDECREF(globals);
}

void corecast_model_configure(const char *root, const char *start_dir, const char *home, int host_python,
                              void (*final_cb)(void)) {
    strncpy(cc_root, root, sizeof cc_root - 1);
    strncpy(cc_start_dir, start_dir, sizeof cc_start_dir - 1);
    cc_host_python = host_python;
    cc_final_cb = final_cb;
    if (host_python || Py_IsInitialized())
        return;
    /* The interpreter is started here, and cffi then finds it running (as in a Python
     * host), because its own start would change the program:
     * - LC_CTYPE set from the environment, on the sampler thread while the program runs
     *   (a restore afterwards still races with its reads): configure_locale = 0, and
     *   UTF-8 mode decodes paths the same whatever the locale;
     * - site.main() runs the .pth files of the user's Python, arbitrary code inside the
     *   program (one may print; on this VM one imported ~40 modules, 0.1 s): no site, and
     *   the init code puts the site directories on sys.path itself;
     * - no signal handlers, stdio left as the program set it, the host's PYTHON*
     *   variables ignored (they are not meant for this interpreter), and the home given
     *   (else it is guessed from the host binary);
     * - no bytecode written under the program's file-size limit (`ulimit -f`): CPython
     *   does not check a .pyc's write, and one cut at the limit made every later start
     *   fail ("EOFError: marshal data too short") until it was deleted. */
    PyPreConfig pre;
    PyPreConfig_InitPythonConfig(&pre);
    pre.configure_locale = 0;
    pre.coerce_c_locale = 0;
    pre.utf8_mode = 1;
    pre.use_environment = 0;
    PyStatus status = Py_PreInitialize(&pre);
    if (PyStatus_Exception(status))
        return start_failed("its Python could not be pre-initialised", status.err_msg);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.site_import = 0;
    config.install_signal_handlers = 0;
    config.configure_c_stdio = 0;
    config.use_environment = 0;
    config.parse_argv = 0;
    config.user_site_directory = 0;
    config.pathconfig_warnings = 0;
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
        config.write_bytecode = 0;
    if (home && home[0])
        PyConfig_SetBytesString(&config, &config.home, home);
    status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status))
        return start_failed("its Python could not be initialised", status.err_msg);
    set_path(root);
    PyEval_SaveThread(); /* cffi takes the GIL with PyGILState_Ensure */
}

/* Starts the model (cffi's init code) now; NULL once it runs, else why it cannot. */
const char *corecast_model_start(void) {
    if (cc_start_error[0])
        return cc_start_error;
    if (!Py_IsInitialized()) {
        start_failed("its Python is not running", NULL);
        return cc_start_error;
    }
    /* The GIL is held through cffi's start (its own PyGILState_Ensure nests): cffi starts an
     * interpreter where it finds none, and a Python host whose finalization began after the
     * check above and before cffi's (its thread took the GIL between) had a second one
     * started on this thread while it tore down its own: a fault or "Fatal Python error:
     * PyInterpreterState_Delete: remaining subinterpreters" (1 in 40 runs of
     * test_host_edges.py's seccomp test under load).  Held, the host's finalization cannot
     * begin before cffi's check; a later one ends this thread where it next waits for the
     * GIL (the preload library's sampler.c). */
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *backend = PyImport_ImportModule("_cffi_backend"); /* cffi's first import */
    if (!backend)
        python_failed("cannot import cffi's _cffi_backend");
    Py_XDECREF(backend);
    if (!cc_start_error[0] && (cffi_start_python() != 0 || !cc_started))
        start_failed("cffi could not run its init code", NULL);
    PyGILState_Release(gil);
    return cc_start_error[0] ? cc_start_error : NULL;
}

void corecast_model_started(const char *error) {
    if (error && error[0])
        start_failed(error, NULL);
    else
        cc_started = 1;
}

const char *corecast_model_root(void) { return cc_root; }
const char *corecast_model_start_dir(void) { return cc_start_dir; }
int corecast_model_host_python(void) { return cc_host_python; }
void corecast_model_run_final(void) { if (cc_final_cb) cc_final_cb(); }
