"""Device calls 2 and 3 (CALL=2|3): overhead matrix (steering, probing) at 16 threads,
steering where 1 thread is best, more truth reps.  Call 3 ran as a copy of this file with
the CALL=3 settings written in (go3.py), merged here since.  CALL=4 with PHASES
calib,matrix,slow (prepared in session 17, not yet run): corecast calibrate's e(n) on the
machine, and steering's cost at 16 threads with the model's start put off."""
import json, os, subprocess, sys, time, statistics
sys.path.insert(0, ".dev")
OUT, DEADLINE = sys.argv[1], float(sys.argv[2])
T0 = time.time()
LOG = open(os.path.join(OUT, "go2.jsonl"), "a")
NPB = os.environ.get("CC_NPB", ".dev/npb/bin"); B = os.environ.get("CC_BIN", "/tmp/bin")  # as go.py
LIB = subprocess.run(["corecast", "lib"], capture_output=True, text=True).stdout.strip()
def left(): return DEADLINE - (time.time() - T0)
def say(*a): print(f"[{time.time()-T0:5.0f}s]", *a, flush=True)
def rec(**kw):
    kw["t"] = round(time.time() - T0, 1); LOG.write(json.dumps(kw) + "\n"); LOG.flush()
def run(argv, n, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_")}
    env["OMP_NUM_THREADS"] = str(n); env.update(extra or {})
    t = time.perf_counter()
    try:
        r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=max(3.0, min(120, left() - 8)))
        return time.perf_counter() - t, r.returncode, r.stdout, r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t, -999, b"", "timeout"
P = dict(LD_PRELOAD=LIB, CORECAST_QUIET="1")
CALL = os.environ.get("CALL", "2")
SIDES = {"none": None, "quiet": dict(P), "steer": dict(P, CORECAST_STEER="1"),
         "steer_start_only": dict(P, CORECAST_STEER="1", CORECAST_WINDOW_MS="60000"),
         "probe": dict(P, CORECAST_PROBE="1")}
if CALL == "3":
    SIDES = {"none": None, "quiet": dict(P), "quiet_w60s": dict(P, CORECAST_WINDOW_MS="60000"),
             "steer": dict(P, CORECAST_STEER="1"), "steer_keep": dict(P, CORECAST_STEER="1", CORECAST_KEEP_COUNTING="1"),
             "steer_w1000": dict(P, CORECAST_STEER="1", CORECAST_WINDOW_MS="1000"),
             "steer_w60s": dict(P, CORECAST_STEER="1", CORECAST_WINDOW_MS="60000")}
if CALL == "4":  # session 17's changes: the model's start put off (steering), corecast calibrate
    SIDES = {"none": None, "quiet": dict(P), "steer": dict(P, CORECAST_STEER="1")}
def matrix(name, argv, n, runs, sides=SIDES):
    t = {k: [] for k in sides}; own = {}
    for i in range(runs):
        ks = list(sides); ks = ks[i % len(ks):] + ks[:i % len(ks)]
        for k in ks:
            if left() < 40: break
            dt, rc, _, _ = run(argv, n, sides[k]); t[k].append(dt)
    for k, e in sides.items():  # own CPU with the report on (one run each)
        if e and left() > 40:
            _, _, _, err = run(argv, n, dict(e, CORECAST_QUIET="0"))
            own[k] = [l for l in err.splitlines() if "own CPU" in l or l.startswith("steering") and "explored" not in l]
    rec(phase="matrix", prog=name, n=n, times=t, own=own)
    say(name, {k: (round(statistics.median(v) * 1000, 1), round(min(v) * 1000, 1)) for k, v in t.items() if v}, own)
PHASES = sys.argv[3].split(",") if len(sys.argv) > 3 else ["matrix", "slow", "truth"]
if "calib" in PHASES:
    r = subprocess.run(["corecast", "calibrate", "-o", os.path.join(OUT, "calibration.json")],
                       capture_output=True, text=True, timeout=120)
    rec(phase="calib", rc=r.returncode, out=r.stdout, err=r.stderr); say(r.stdout, r.stderr)
if "matrix" in PHASES:
    runs = 9 if CALL == "2" else 11
    matrix("npb-bt.W", [f"{NPB}/bt.W"], 16, runs)
    matrix("npb-cg.A", [f"{NPB}/cg.A"], 16, runs)
    if CALL == "2":
        matrix("npb-mg.A", [f"{NPB}/mg.A"], 16, 3)
        matrix("npb-lu.W", [f"{NPB}/lu.W"], 16, 3)
if "slow" in PHASES:
    s = {"own16": None, "steer16": dict(P, CORECAST_STEER="1")}
    matrix("omp_slowdown", [f"{B}/omp_slowdown", "4000"], 16, 3, s)
    t1 = [run([f"{B}/omp_slowdown", "4000"], 1)[0] for _ in range(3)]
    rec(phase="slow_best", times=t1); say("omp_slowdown at 1:", [round(x, 3) for x in t1])
    matrix("npb-sp.W", [f"{NPB}/sp.W"], 16, 2, s)
if "truth" in PHASES:
    import importlib.util
    spec = importlib.util.spec_from_file_location("go", ".dev/go.py")
    progs = ["npb-bt.S", "npb-ft.S", "npb-is.S", "npb-mg.S", "npb-cg.W", "npb-ft.W", "npb-is.W", "npb-mg.W", "pthreads_sync",
             "npb-cg.A", "npb-bt.W", "omp_critical", "npb-lu.W", "npb-ep.W", "pigz", "npb-is.A", "npb-mg.A", "npb-ft.A", "omp_slowdown"]
    sys.argv = ["go.py", OUT, str(left()), "info"]
    src = open(".dev/go.py").read().split("\nfor p in PHASES:")[0]
    g = {"__name__": "go"}; exec(compile(src, "go.py", "exec"), g)
    g["T0"] = time.time(); g["DEADLINE"] = left()
    for rep in ((5, 6, 7) if CALL == "3" else (2, 3, 4)):
        for name in progs:
            for n in ([1, 2, 4, 8, 16] if rep % 2 == 0 else [16, 8, 4, 2, 1]):
                if g["left"]() < 12 or (name == "pthreads_sync" and n == 1): continue
                dt, rc, _, err = g["run"](g["argv"](name, n), n)
                rec(phase="truth", prog=name, n=n, rep=rep, time_s=dt, rc=rc)
        say("truth rep", rep, "done")
say("done")
