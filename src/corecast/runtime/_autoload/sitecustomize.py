"""corecast's sitecustomize: ``corecast run`` puts this folder first on PYTHONPATH.

Under the preload library (``libcorecast_preload`` in LD_PRELOAD), or with
``CORECAST_OPENCL=1``, it instruments pyopencl (``corecast.opencl.hook.autoload``: an import
hook; nothing else is imported until the program imports pyopencl); ``CORECAST_OPENCL=0``
turns that off.  Then it runs
the sitecustomize this one shadows, if there is one, as site.py would have.  It never
raises: a failure of its own costs one warning line.  Pythons older than 3.8 are left
alone.
"""


def _corecast_autoload():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
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
                # Another Python than corecast's: take corecast from where this file is.
                root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
                if root not in sys.path:
                    sys.path.append(root)
                from corecast.opencl import hook
            hook.autoload()
        except Exception as exc:
            try:
                os.write(2, ("corecast: warning: opencl: not instrumented: %s: %s\n"
                             % (type(exc).__name__, exc)).encode())
            except Exception:
                pass
    # The sitecustomize this one hides (a distribution's or a virtual environment's).
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
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


_corecast_autoload()
del _corecast_autoload
