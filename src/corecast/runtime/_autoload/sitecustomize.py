"""corecast's sitecustomize: ``corecast run`` puts this folder first on PYTHONPATH.

Under the preload library (``libcorecast_preload`` in LD_PRELOAD), or with
``CORECAST_OPENCL=1``, it instruments pyopencl (``corecast.opencl.hook.autoload``: an import
hook; nothing else is imported until the program imports pyopencl); ``CORECAST_OPENCL=0``
turns that off.  Then it runs
the sitecustomize this one shadows, if there is one, as site.py would have.  It never
raises: a failure of its own costs one warning line.  Pythons older than 3.8 are left
alone.

The program must see the sys.path and modules it has without corecast: this folder leaves
sys.path (PYTHONPATH still passes it to the program's Python children).  In a Python that
cannot import corecast (another interpreter than corecast's), the hook comes from the
package beside this file, loaded under a private name (``_corecast_private``): neither
corecast's site-packages (numpy, cffi, ...) nor ``corecast`` itself become importable there.
"""


def _corecast_autoload():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in [p for p in sys.path if p and os.path.abspath(p) == here]:
        sys.path.remove(entry)
        sys.path_importer_cache.pop(entry, None)
    flag = os.environ.get("CORECAST_OPENCL", "").strip()
    words = {"false": "0", "no": "0", "off": "0", "true": "1", "yes": "1", "on": "1"}  # io.settings.FLAG_WORDS
    flag = words.get(flag.lower(), flag)
    if flag not in ("", "0", "1"):  # the library's rule for a bad flag: one line, the default
        try:
            os.write(2, ("corecast: warning: CORECAST_OPENCL=%s is not 0 or 1 (or true or false, yes or no, "
                         "on or off); using the default\n" % os.environ["CORECAST_OPENCL"]).encode(errors="replace"))
        except Exception:
            pass
        flag = ""
    wanted = flag == "1" if flag else "libcorecast_preload" in os.environ.get("LD_PRELOAD", "")
    if wanted and sys.version_info >= (3, 8):
        try:
            try:
                from corecast.opencl import hook
            except ImportError:
                hook = _private_hook(os.path.dirname(os.path.dirname(here)))
            hook.autoload()
        except Exception as exc:
            try:
                os.write(2, ("corecast: warning: opencl: not instrumented: %s: %s\n"
                             % (type(exc).__name__, exc)).encode())
            except Exception:
                pass
    # The sitecustomize this one hides (a distribution's or a virtual environment's).
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]  # "" may be this folder
    if not any(os.path.exists(os.path.join(p or os.curdir, name)) for p in path
               for name in ("sitecustomize.py", "sitecustomize.pyc", "sitecustomize")):
        return
    try:
        import importlib.machinery
        import importlib.util

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is not None and spec.loader is not None:
            mine = sys.modules.get("sitecustomize")
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules["sitecustomize"] = mine
                raise
    except Exception as err:  # as site.py reports a failing sitecustomize
        try:
            if sys.flags.verbose:
                sys.excepthook(*sys.exc_info())
            else:
                sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                                 "%s: %s\n" % (type(err).__name__, err))
        except Exception:
            pass


def _private_hook(package):
    """corecast.opencl.hook from ``package`` (corecast's folder) without sys.path: the
    package is loaded as ``_corecast_private`` (its modules import one another relatively),
    so that the program's own ``import corecast`` fails as it does without corecast."""
    import importlib
    import importlib.util
    import os
    import sys

    name = "_corecast_private"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(package, "__init__.py"),
                                                      submodule_search_locations=[package])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return importlib.import_module(name + ".opencl.hook")


_corecast_autoload()
del _corecast_autoload, _private_hook
