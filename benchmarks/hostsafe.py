"""The host-safety issue list, re-run: each item against a C OpenMP host and a Python host
running pyopencl kernels (examples/opencl_two_kernels.py), without corecast and with it
(`corecast run`; bare LD_PRELOAD for the C host, `python -m corecast.opencl` for the Python
one), comparing what is the program's: its stdout bytes, exit status and files.

    python benchmarks/hostsafe.py [--repeat 20] [--host c|python] [--only NAME] [--editable]

One line per item, host and way of running: `held` or `DIFFERS` with what differed; exit
status 1 when any differs.  Items (docs/promise.md):
  fsize      `ulimit -f 1` with stdout a file: the program's own output is kept
  fulldisk   stdout /dev/full, and a file on a full private tmpfs (root only)
  stderr-    stderr closed (`2>&-`)
  epipe      stderr a pipe whose reader left before the program started
  daemon     the program forks a daemon at its end: the caller's pipes reach end of file
             while the daemon lives (it waits for a file the runner makes afterwards)
  locale     LC_ALL=de_DE.UTF-8 (compiled with localedef into a private LOCPATH): the
             program's "0,5" is its own, and every JSON line parses with "." numbers
  fd1000     the program writes to and closes descriptor 1000 that its shell opened, and
             lists its descriptors
  output-    CORECAST_OUTPUT in a folder that does not exist, and in a read-only one
  exec       `corecast run` of a missing, a non-executable and a folder command: status and
             reason as bash's (no host)
  editable   (--editable) an editable install predicts: the test that builds one
Racy items are worth --repeat 20.  Nothing here depends on timing: a hang guard of 120 s
per run only turns a hang into a DIFFERS.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "opencl_two_kernels.py"
BIN = Path(sys.executable).parent
GUARD_S = 120

# Both hosts do the same: set the locale from the environment, run parallel work, print a
# locale-formatted number and their descriptors, write to fd 1000 if open, and, asked to,
# fork a daemon (setsid, /dev/null on 0-2) that waits for a file before it ends.  The daemon
# writes its pid before it lets go of the caller's pipes: the caller reads it at end of file.
C_HOST = r"""
#include <dirent.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    setlocale(LC_ALL, "");
    double s = 0;
    for (int r = 0; r < 20; r++) {
#pragma omp parallel for reduction(+:s)
        for (int i = 0; i < 200000; i++) s += i * 0.5;
    }
    printf("sum %.1f half %.1f\n", s, 0.5);
    if (fcntl(1000, F_GETFD) >= 0) { write(1000, "from the program\n", 17); close(1000); }
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int own = dirfd(d);
    printf("fds");
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != own) printf(" %s", e->d_name);
    closedir(d);
    printf("\n");
    fflush(stdout);
    if (argc > 1 && fork() == 0) {
        setsid();
        char pid[32];
        int f = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        write(f, pid, (size_t)snprintf(pid, sizeof pid, "%d\n", (int)getpid()));
        close(f);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0); dup2(null, 1); dup2(null, 2);
        char go[4096];
        snprintf(go, sizeof go, "%s.go", argv[1]);
        for (int i = 0; i < 2400 && access(go, F_OK) != 0; i++) usleep(50000);
        _exit(0);
    }
    return 3;
}
"""

PY_HOST = r"""
import locale, os, runpy, sys, time
locale.setlocale(locale.LC_ALL, "")
daemon = sys.argv[1] if len(sys.argv) > 1 else None
sys.argv = [EXAMPLE, "16384", "4"]
try:
    runpy.run_path(EXAMPLE, run_name="__main__")
except SystemExit:
    pass
print("half", locale.format_string("%.1f", 0.5))
try:
    os.write(1000, b"from the program\n")
    os.close(1000)
except OSError:
    pass
print("fds", " ".join(sorted(os.listdir("/proc/self/fd"), key=int)[:-1]))  # less listdir's own
sys.stdout.flush()
if daemon and os.fork() == 0:
    os.setsid()
    with open(daemon, "w") as f:
        f.write(f"{os.getpid()}\n")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for _ in range(2400):
        if os.path.exists(daemon + ".go"):
            break
        time.sleep(0.05)
    os._exit(0)
sys.exit(3)
""".replace("EXAMPLE", repr(str(EXAMPLE)))


def hosts(work: Path, which: list[str]) -> dict[str, dict[str, list[str]]]:
    """host -> way of running -> argv prefix (the host's own arguments go after)."""
    out: dict[str, dict[str, list[str]]] = {}
    corecast = str(BIN / "corecast")
    if "c" in which:
        exe = work / "omp_host"
        (work / "omp_host.c").write_text(C_HOST)
        subprocess.run(["gcc", "-O2", "-fopenmp", "-o", str(exe), str(work / "omp_host.c")], check=True)
        out["c"] = {"plain": [str(exe)], "run": [corecast, "run", "--json-out", "{json}", "--", str(exe)],
                    "preload": ["env", f"LD_PRELOAD={preload()}", "CORECAST_OUTPUT={json}", str(exe)]}
    if "python" in which:
        script = work / "py_host.py"
        script.write_text(PY_HOST)
        py = sys.executable
        out["python"] = {"plain": [py, str(script)],
                         "run": [corecast, "run", "--json-out", "{json}", "--", py, str(script)],
                         "module": ["env", "CORECAST_OUTPUT={json}", py, "-m", "corecast.opencl", str(script)]}
    return out


def preload() -> str:
    from corecast._native import PRELOAD
    return PRELOAD


def quote(argv: list[str]) -> str:
    return " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)


def run_sh(script: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["bash", "-c", script], env=env or clean_env(), capture_output=True,
                              timeout=GUARD_S, **kw)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(script, -999, b"", b"hang guard: killed")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env["OMP_NUM_THREADS"] = env.get("OMP_NUM_THREADS", "2")
    env.update(extra)
    return env


def json_ok(path: Path) -> str:
    """'' when ``path`` has lines and every one is JSON (a decimal comma in a number is not)."""
    if not path.exists() or not path.read_text().strip():
        return "no JSON lines"
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            json.loads(line)
        except ValueError as e:
            return f"JSON line {n}: {e}"
    return ""


# ---- the items: each returns what the program left, a dict compared with the plain run's ----
LIMIT_KB = 1024  # `ulimit -f`: pocl's compiler writes temporary files of tens of KiB


def item_fsize(argv: list[str], d: Path) -> dict:
    """stdout and stderr files filled to just under the limit: the program's output fits
    exactly in its file, no line of corecast's fits in the other (none is cut short)."""
    need = len(PLAIN_OUT.get(argv[0], b""))
    lim = LIMIT_KB * 1024
    (d / "out.txt").write_bytes(b"." * (lim - need))
    (d / "err.txt").write_bytes(b"." * (lim - 40))
    r = run_sh(f"cd '{d}'; ulimit -f {LIMIT_KB}; {quote(argv)} >> out.txt 2>> err.txt; echo $?")
    err = (d / "err.txt").read_bytes()[lim - 40:]
    return {"status": r.stdout, "out": (d / "out.txt").read_bytes()[lim - need:],
            "cut line": bool(err) and not err.endswith(b"\n")}


def item_fulldisk(argv: list[str], d: Path) -> dict:
    """stdout /dev/full; and a private tmpfs with one page free that holds the program's
    stdout and the JSON Lines (root and unshare(1) only)."""
    res = {"devfull": run_sh(f"{quote(argv)} > /dev/full; echo $?").stdout}
    mnt = d / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return res
    argv = [a.replace(str(d / "out.jsonl"), str(mnt / "j.jsonl")) for a in argv]
    script = (f"mount -t tmpfs -o size=64k tmpfs '{mnt}' || exit 99; cd '{mnt}'; "
              f"head -c $((60 * 1024)) /dev/zero > filler; {quote(argv)} > out.txt; echo $?; "
              f"cp out.txt '{d}/out.txt'")
    r = run_sh(f"unshare -m bash -c {quote([script])}")
    if not r.stdout.startswith(b"99"):
        res.update(tmpfs=r.stdout, out=(d / "out.txt").read_bytes())
    return res


def item_stderr_closed(argv: list[str], d: Path) -> dict:
    r = run_sh(f"{quote(argv)} 2>&-; echo $?")
    return {"out": r.stdout}


def item_epipe(argv: list[str], d: Path) -> dict:
    rd, wr = os.pipe()
    os.close(rd)  # the reader left
    try:
        r = subprocess.run(argv, env=clean_env(), stdout=subprocess.PIPE, stderr=wr, timeout=GUARD_S)
        return {"status": r.returncode, "out": r.stdout}
    except subprocess.TimeoutExpired:
        return {"status": "hang"}
    finally:
        os.close(wr)


def item_daemon(argv: list[str], d: Path) -> dict:
    pidfile = d / "daemon.pid"
    proc = subprocess.Popen([*argv, str(pidfile)], env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=GUARD_S)
        pid = int(pidfile.read_text()) if pidfile.exists() else 0
        alive = pid > 0 and Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)
        return {"status": proc.returncode, "out": out, "EOF while the daemon lives": alive}
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"status": "hang"}
    finally:
        Path(f"{pidfile}.go").write_text("")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


LOCPATH: list[str] = []


def item_locale(argv: list[str], d: Path) -> dict:
    if not LOCPATH:
        folder = Path(tempfile.mkdtemp(prefix="hostsafe-loc-"))
        r = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(folder / "de_DE.UTF-8")],
                           capture_output=True)
        LOCPATH.append(str(folder) if r.returncode in (0, 1) else "")
    if not LOCPATH[0]:
        return {"skipped": "localedef cannot build de_DE.UTF-8"}
    r = run_sh(f"{quote(argv)}; echo $?", env=clean_env(LOCPATH=LOCPATH[0], LC_ALL="de_DE.UTF-8"))
    comma = [ln for ln in r.stderr.decode(errors="replace").splitlines() if re.search(r"\d,\d", ln)]
    return {"out": r.stdout, "json": json_ok(d / "out.jsonl"), "comma in the table": comma}


def item_fd1000(argv: list[str], d: Path) -> dict:
    r = run_sh(f"cd '{d}'; exec 1000>data1000; {quote(argv)}; echo $?")
    return {"out": r.stdout, "data": (d / "data1000").read_bytes()}


def item_output(argv: list[str], d: Path) -> dict:
    ro = d / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    res = {}
    for name, target in (("missing dir", d / "no" / "such.jsonl"), ("read-only dir", ro / "x.jsonl")):
        bad = [a.replace(str(d / "out.jsonl"), str(target)) for a in argv]
        if "--json-out" in bad:  # corecast run refuses an unwritable --json-out: the variable instead
            i = bad.index("--json-out")
            bad = ["env", f"CORECAST_OUTPUT={target}", *bad[:i], *bad[i + 2:]]
        r = subprocess.run(bad, env=clean_env(), capture_output=True, timeout=GUARD_S)
        res[name] = (r.returncode, r.stdout)
    return res


PLAIN_OUT: dict[str, bytes] = {}  # a host's stdout, plain, by its argv[0]: the room item_fsize leaves

ITEMS = {"fsize": item_fsize, "fulldisk": item_fulldisk, "stderr-": item_stderr_closed, "epipe": item_epipe,
         "daemon": item_daemon, "locale": item_locale, "fd1000": item_fd1000, "output-": item_output}
# Items whose corecast run must hold a property of its own, not only the plain run's figures.
MUST = {"fsize": {"cut line": False}, "daemon": {"EOF while the daemon lives": True},
        "locale": {"json": "", "comma in the table": []}}


def item_exec(d: Path) -> list[str]:
    """`corecast run` of commands that cannot start: status and reason as bash's."""
    plainfile = d / "notexec"
    plainfile.write_text("#!/bin/sh\necho hi\n")
    folder = d / "folder"
    folder.mkdir()
    lines = []
    for name, cmd in (("missing", str(d / "missing")), ("not executable", str(plainfile)), ("a folder", str(folder))):
        sh = subprocess.run(["bash", "-c", quote([cmd])], capture_output=True, env=clean_env())
        cc = subprocess.run([str(BIN / "corecast"), "run", "--", cmd], capture_output=True, env=clean_env())
        reason = sh.stderr.decode().strip().rsplit(": ", 1)[-1]
        ok = sh.returncode == cc.returncode and reason in cc.stderr.decode()
        lines.append(f"{'held' if ok else 'DIFFERS'}  exec {name}: bash {sh.returncode} '{reason}', "
                     f"corecast run {cc.returncode} {cc.stderr.decode().strip()!r}")
    return lines


def check(name: str, plain: list[str], way: list[str], work: Path, repeat: int = 1,
          show=None) -> list[str]:
    """Item ``name`` run by ``plain`` (argv) and, ``repeat`` times, by ``way`` (argv, "{json}"
    for its JSON Lines): what differed, at most 3 lines ([] : held)."""
    fn = ITEMS[name]
    if plain[0] not in PLAIN_OUT:
        PLAIN_OUT[plain[0]] = subprocess.run(plain, env=clean_env(), capture_output=True, timeout=GUARD_S).stdout
    PLAIN_OUT[way[0]] = PLAIN_OUT[plain[0]]
    base = fn(plain, Path(tempfile.mkdtemp(dir=work)))
    if show:
        show(f"plain: {base!r:.600}")
    want = {**base, **MUST.get(name, {})}
    differ: list[str] = []
    for i in range(repeat):
        d = Path(tempfile.mkdtemp(dir=work))
        got = fn([a.replace("{json}", str(d / "out.jsonl")) for a in way], d)
        if show:
            show(f"run {i + 1}: {got!r:.600}")
        for k in want:
            if got.get(k) != want[k] and len(differ) < 3:
                differ.append(f"run {i + 1}: {k}: {got.get(k)!r:.200} != {want[k]!r:.200}")
    return differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--host", choices=["c", "python"], action="append")
    ap.add_argument("--only", action="append", help="an item's name (repeatable)")
    ap.add_argument("--show", action="store_true", help="print what each run left")
    ap.add_argument("--editable", action="store_true", help="also build an editable install (a minute or more)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        print("hostsafe: --repeat must be at least 1", file=sys.stderr)
        return 2
    unknown = [n for n in args.only or [] if n not in ITEMS and n not in ("exec", "editable")]
    if unknown:
        print(f"hostsafe: unknown item {unknown[0]!r} (items: {', '.join([*ITEMS, 'exec', 'editable'])})",
              file=sys.stderr)
        return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="hostsafe-") as tmp:
        work = Path(tmp)
        for host, ways in hosts(work, args.host or ["c", "python"]).items():
            for name in ITEMS:
                if args.only and name not in args.only:
                    continue
                for way, prefix in ways.items():
                    if way == "plain":
                        continue
                    differ = check(name, ways["plain"], prefix, work, args.repeat,
                                   (lambda line: print(f"         {name} {host} {way} {line}")) if args.show else None)
                    bad += bool(differ)
                    print(f"{'DIFFERS' if differ else 'held':7}  {name:9} {host:6} {way:7} x{args.repeat}"
                          + "".join(f"\n           {x}" for x in differ), flush=True)
        if not args.only or "exec" in args.only:
            for line in item_exec(work):
                bad += line.startswith("DIFFERS")
                print(line)
    if args.editable or (args.only and "editable" in args.only):
        r = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                            "tests/runtime/test_model_start.py::test_an_editable_install_predicts"],
                           cwd=ROOT, capture_output=True)
        bad += r.returncode != 0
        print(f"{'held' if r.returncode == 0 else 'DIFFERS'}  editable install predicts "
              f"(tests/runtime/test_model_start.py): {r.stdout.decode().strip().splitlines()[-1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
