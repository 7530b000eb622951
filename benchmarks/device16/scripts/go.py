"""Device checks for session 16, time-boxed: python3 go.py OUT DEADLINE_S [phases]

Paths come from the environment, with the device call's defaults: CC_NPB (the NPB
binaries, .dev/npb/bin), CC_BIN (the test programs, /tmp/bin), CC_DATA (the compressors'
input, /tmp/data60.bin, made by gen.py) and CC_TMP (scratch files, /tmp)."""
import json, os, subprocess, sys, time, hashlib

OUT, DEADLINE = sys.argv[1], float(sys.argv[2])
PHASES = sys.argv[3].split(",") if len(sys.argv) > 3 else ["info", "safety", "startup", "steer", "rec16", "truth16", "held", "probe"]
T0 = time.time()
NPB = os.environ.get("CC_NPB", ".dev/npb/bin")
B = os.environ.get("CC_BIN", "/tmp/bin")
DATA = os.environ.get("CC_DATA", "/tmp/data60.bin")
TMP = os.environ.get("CC_TMP", "/tmp")
LOG = open(os.path.join(OUT, "go.jsonl"), "a")
CC = os.path.join(OUT, "cc")
os.makedirs(CC, exist_ok=True)


def left():
    return DEADLINE - (time.time() - T0)


def say(*a):
    print(f"[{time.time()-T0:5.0f}s]", *a, flush=True)


def rec(**kw):
    kw["t"] = round(time.time() - T0, 1)
    LOG.write(json.dumps(kw) + "\n"); LOG.flush()


def run(argv, n, timeout=120, cwd=None, env_extra=None):
    env = dict(os.environ, OMP_NUM_THREADS=str(n))
    env.update(env_extra or {})
    t = time.perf_counter()
    timeout = min(timeout, max(3.0, left() - 8))
    try:
        r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
        return time.perf_counter() - t, r.returncode, r.stdout, r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t, -999, b"", "timeout"


PROGS = {
    **{f"npb-{b}": [f"{NPB}/{b}"] for b in ("bt.S", "bt.W", "ft.A", "ft.S", "ft.W", "is.A", "is.S", "is.W",
                                            "mg.A", "mg.S", "mg.W", "cg.A", "cg.W", "ep.W", "lu.W", "sp.W")},
    "omp_critical": [f"{B}/omp_critical", "400"],
    "omp_slowdown": [f"{B}/omp_slowdown", "4000"],
    "omp_triad": [f"{B}/omp_triad", "200", "64"],
    "pthreads_sync": [f"{B}/pthreads_sync", "2000", "{n}"],
    "pigz": [f"{B}/pigz", "-p", "{n}", "-c", DATA],
    "xz": ["xz", "-T{n}", "-1", "-c", DATA],
}


def argv(name, n):
    return [a.replace("{n}", str(n)) for a in PROGS[name]]


def cc_record(name, n, extra=(), tag=""):
    f = os.path.join(CC, f"{name}{tag}-{n}.jsonl")
    base, rc0, _, _ = run(argv(name, n), n)
    dt, rc, _, err = run(["corecast", "run", "--target", "16", "--json-out", f, *extra, "--"] + argv(name, n), n, timeout=180)
    with open(os.path.join(CC, f"{name}{tag}-{n}.report.txt"), "w") as fh:
        fh.write(err)
    rec(phase="rec" + tag, prog=name, n=n, base_s=base, cc_s=dt, rc0=rc0, rc=rc)
    say(f"rec{tag} {name} n={n} base {base:.2f}s cc {dt:.2f}s rc {rc0}/{rc}")


def phase_info():
    for c in ("nproc", "uname -a", "lscpu", "gcc --version", "python3 --version", "cat /proc/self/status | grep -i cpus_allowed_list", "corecast --version"):
        r = subprocess.run(c, shell=True, capture_output=True, text=True)
        rec(phase="info", cmd=c, out=(r.stdout + r.stderr)[-3000:])


def phase_safety():
    cases = [("omp_teams_gcc", [f"{B}/omp_teams", "200", "16", "4"], 16, 20),
             ("omp_teams_gcc_16", [f"{B}/omp_teams", "200", "16", "16"], 16, 10),
             ("omp_teams_clang", [f"{B}/omp_teams_clang", "200", "16", "4"], 16, 12)]
    for name, cmd, n, reps in cases:
        _, rc0, out0, err0 = run(cmd, n)
        bad, errs, det = 0, [], 0
        _, rc0b, out0b, _ = run(cmd, n)
        det = int(out0 == out0b and rc0 == rc0b)
        for i in range(reps):
            if left() < 200:
                break
            _, rc, out, err = run(["corecast", "run", "--target", "16", "--"] + cmd, n)
            if rc != rc0 or out != out0:
                bad += 1
                errs.append(err[-600:])
            if i == 0:
                with open(os.path.join(OUT, f"report-{name}.txt"), "w") as fh:
                    fh.write(err)
        rec(phase="safety", case=name, runs=i + 1, bad=bad, rc0=rc0, deterministic=det, errs=errs[:3])
        say(f"safety {name}: bad {bad}/{i+1} (plain rc {rc0}, deterministic {det})")
    # closefd2: data file byte-identical
    bad = 0
    for i in range(5):
        subprocess.run([f"{B}/closefd2", f"{TMP}/d0.txt"], capture_output=True)
        r = subprocess.run(["corecast", "run", "--", f"{B}/closefd2", f"{TMP}/d1.txt"], capture_output=True)
        if open(f"{TMP}/d0.txt", "rb").read() != open(f"{TMP}/d1.txt", "rb").read():
            bad += 1
    rec(phase="safety", case="closefd2", runs=5, bad=bad, last_stderr=r.stderr.decode(errors="replace")[-800:])
    say(f"safety closefd2: bad {bad}/5")


def phase_startup():
    for label, cmd in (("true", ["/bin/true"]), ("cc_true", ["corecast", "run", "--", "/bin/true"]),
                       ("cc_lib", ["corecast", "lib"]), ("cc_version", ["corecast", "--version"])):
        ts = [run(cmd, 1)[0] for _ in range(5)]
        rec(phase="startup", case=label, times=ts)
        say(f"startup {label}: median {sorted(ts)[2]*1000:.0f} ms")


def phase_steer():
    for prog in ("npb-cg.A", "npb-bt.W"):
        if left() < 150:
            return
        r = subprocess.run([sys.executable, "benchmarks/steer_cost.py", "--runs", "5", "--own", "16", " ".join(argv(prog, 16))],
                           capture_output=True, text=True, timeout=max(30, left() - 100))
        rec(phase="steer", prog=prog, out=r.stdout[-3000:], err=r.stderr[-1500:])
        say(f"steer {prog}:\n{r.stdout[-1500:]}{r.stderr[-500:]}")
        _, rc, out, err = run(["corecast", "run", "--steer", "--"] + argv(prog, 16), 16)
        ok = b"SUCCESSFUL" in out
        rec(phase="steer_verify", prog=prog, rc=rc, verified=ok, report=err[-3000:])
        say(f"steer {prog} verification successful: {ok}, rc {rc}")


SCALE16 = ["npb-bt.S", "npb-bt.W", "npb-ft.A", "npb-ft.S", "npb-ft.W", "npb-is.A", "npb-is.S", "npb-is.W",
           "npb-mg.A", "npb-mg.S", "npb-mg.W", "omp_critical", "omp_slowdown", "pthreads_sync"]
HELD = ["npb-cg.A", "npb-ep.W", "omp_triad", "pigz", "npb-lu.W", "xz", "npb-cg.W", "npb-sp.W"]


def phase_rec16():
    for n in (2, 4):
        for name in SCALE16:
            if left() < 170:
                return
            cc_record(name, n)


def truth(name, floor):
    """Wall time at 1,2,4,8,16 threads, two repetitions in opposite orders."""
    for rep, counts in enumerate(([1, 2, 4, 8, 16], [16, 8, 4, 2, 1])):
        for n in counts:
            if left() < floor or (name == "pthreads_sync" and n == 1):
                continue
            dt, rc, _, err = run(argv(name, n), n)
            rec(phase="truth", prog=name, n=n, rep=rep, time_s=dt, rc=rc, err=err[-300:] if rc else "")
        say(f"truth {name} rep {rep} done")


def phase_truth16():
    for name in SCALE16:
        truth(name, 150)


def phase_held():
    # truth, then recordings at 2 and 4
    for name in HELD:
        if left() < 60:
            return
        truth(name, 60)
        for n in (2, 4):
            if left() < 60:
                return
            cc_record(name, n)


def phase_probe():
    for name in SCALE16 + HELD:
        if left() < 20 or name == "pthreads_sync" or name in ("pigz", "xz"):
            continue
        cc_record(name, 16, extra=("--probe",), tag=".probe")


for p in PHASES:
    if left() < 30:
        say("no time for", p); continue
    say("phase", p)
    try:
        globals()["phase_" + p]()
    except Exception as e:  # keep going: what came back is what counts
        say("phase", p, "failed:", repr(e))
        rec(phase=p, error=repr(e))
say("done")
