"""OpenCL kernels at 1..N compute units: corecast's kernel predictions against measured
device time (issue #42), on pocl's CPU device with ``POCL_CPU_MAX_CU_COUNT`` limiting its
compute units (``POCL_MAX_PTHREAD_COUNT`` too, pocl 3's name).

    python benchmarks/opencl_cu.py [--max-cu N] [--runs 2,4] [--repeat R] [--budget S]
                                   [--kernels a,b,...|all] [--suite DIR] [--json OUT] [--machine FILE]

* truth: for every count 1..N (default: this machine's cores) and repetition (counts
  interleaved), one child process runs every kernel until its device time reaches a share
  of the budget; the median device time per launch (profiling events) is T(n), and the
  measured speedup S(n) = T(1) / T(n);
* predictions: ``corecast run --target N --json-out`` of the same child at each count of
  ``--runs`` (default 2,4; counts above N are left out: here they would oversubscribe the
  cores) gives every kernel's predicted speedups at 1..N with their band;
* figures: per run count, the median over kernels of |ln(S_pred(N) / S_meas(N))| and the
  band coverage (low <= S_meas(n) <= high over kernels and counts 2..N).  Issue #42's targets:
  median |ln| <= 0.14 at 16, coverage >= 80%, for at least 6 kernels: the two examples and
  at least four from a public suite, whose figures are printed apart (``examples+suite``)
  when the in-house kernels ran beside them.

Kernels: ``smooth`` and ``triangle`` from examples/opencl_two_kernels.py, and six written
here after well-known benchmark kernels (no code taken from any repository): ``triad``
(STREAM's triad, McCalpin), ``sgemm`` (a naive matrix multiply, as SHOC's and Parboil's
SGEMM measure), ``reduce`` (a work-group tree reduction in local memory, as SHOC's
Reduction), ``stencil`` (a 5-point Jacobi sweep, as SHOC's Stencil2D), ``conv`` (a 5x5
2-D convolution, as the vendor SDKs' convolution samples) and ``nbody`` (all-pairs
gravitation, as the SDKs' n-body samples).

A public suite's kernels (issue #42 asks for them) run with ``--suite DIR``: six kernels of
PolyBench/ACC's OpenCL version, ``pb.gemm`` (compute-bound), ``pb.conv2d`` and
``pb.jacobi2d`` (memory-bound stencils), ``pb.mvt`` (memory-bound matrix-vector),
``pb.atax`` (8 work-groups: fewer than 16 units) and ``pb.covar`` (work-groups of unequal
work).  Their .cl files are not in this repository: ``benchmarks/opencl_suite.py`` holds
the citation table (repository, commit, path, kernel, sha256) and exports them from a
fetched git dir into ``.dev/oclsuite`` (git-ignored); this script reads them from DIR at
run time, checked against the same sha256 (a missing or changed file: one line, exit 1).
The host side (sizes, arguments, NDRange: ``_suite_setup``) is written here, sized for
about 5-50 ms a launch on one core.  A kernel line names a suite kernel by its OpenCL
function; saved files name it by the suite's name, and ``--rescore`` needs no DIR.

The budget (``--budget``, seconds, default 240) sets each kernel's device time per child
(the truth gets half of it, the corecast runs the rest); a guard ends a child that hangs.

## On the 16-core device machine

pocl (truth and predictions at 1..16 compute units), the recipe of ../shared/device/README.md:

    # here: echo /.dev/ >> .git/info/exclude; mkdir -p .dev/whl; cp -r ../shared/device .dev/
    #       python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \\
    #         --implementation cp --platform manylinux2014_x86_64 -d .dev/whl \\
    #         cffi pycparser 'setuptools>=77' wheel pyopencl pytools platformdirs siphash24
    # run (carry [".dev"]):
    bash .dev/device/setup.sh; /tmp/v/bin/pip install -q --no-index --find-links .dev/whl pyopencl
    /tmp/v/bin/python benchmarks/opencl_cu.py --max-cu 16 --budget 420 --json $OUT/opencl_cu.json

(about 7 minutes: 16 counts x 8 kernels; ``--budget`` lower for less.)

With the suite (issue #42's done-when: the examples and the suite's kernels; the in-house
six run too, their figures apart), after ``python benchmarks/opencl_suite.py export``
here (``fetch github:cavazos-lab/PolyBench-ACC`` first) and the wheels in ``.dev/whl``;
one call, carry [".dev"], expected to take about 150 s (not yet run there: the budget
plus each child's start, kernel builds and warm-up launches, which came to 0.85 s a child
in the 8-kernel run of 2026-11-27, 169 s for ``--budget 140``, and to about 3 s a child
with 14 kernels on the loaded 2-core VM; here 34 children):

    bash benchmarks/corpus16/setup.sh; /tmp/v/bin/python benchmarks/opencl_cu.py --max-cu 16 \
        --repeat 2 --budget 100 --suite .dev/oclsuite --json $OUT/opencl_cu_suite.json \
        --machine benchmarks/device16/calibration.json | tee $OUT/opencl_cu_suite.txt

(``--machine``: the machine's calibration, which a CPU device's kernel predictions use for
the bandwidth cap of kernels whose buffers pass its LLC; the runs record each kernel's
buffer bytes, and a saved run is rescored with it the same way.)

or as part of a longer call, ``OCLCU_S=150`` to ``benchmarks/corpus16/device_call.sh``.

The GPU (the machine's NVIDIA card through NVIDIA's OpenCL): NVIDIA's ICD is not
registered in /etc/OpenCL/vendors (which holds pocl.icd), so name it through a folder of
its own, then run the example under corecast:

    mkdir -p /tmp/icd && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
    OCL_ICD_VENDORS=/tmp/icd PYOPENCL_CTX=0 /tmp/v/bin/corecast run --json-out $OUT/gpu.jsonl -- \\
        /tmp/v/bin/python examples/opencl_two_kernels.py

The report should predict up to the device's compute units (132 on an H100 or H200, not 16),
name ``triangle``'s 4 work-groups, and say on the process line that the host waits on the
device.  The work-group check of issue #42 (vary the work-groups, the flat region within
15% of measured device time) is ``--gpu``: a kernel of equal work per work-group at 1 .. 2 x
the device's compute units of work-groups, measured against the work-group bound:

    OCL_ICD_VENDORS=/tmp/icd PYOPENCL_CTX=0 /tmp/v/bin/python benchmarks/opencl_cu.py --gpu \
        --budget 30 --json $OUT/gpu_groups.json

Both ran on 2026-11-27 (the H200: the flat region within 0%; past the units the launches
stayed one wave where one work-group per unit at a time predicts two).

A saved run is scored again by this checkout without a device (the measured curves as
saved, every kernel line predicted again from what it recorded), and so is a saved
``--gpu`` file (``--max-group N`` for one saved before it held the device's largest
work-group):

    python benchmarks/opencl_cu.py --rescore opencl_cu.json [--machine benchmarks/device16/calibration.json]
    python benchmarks/opencl_cu.py --rescore gpu_groups.json --max-group 1024
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANG_S = 600  # a child that runs this long is stuck: ended, its count reported missing


def _beside(name: str):
    """A module beside this file, loaded without putting benchmarks/ on sys.path."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().with_name(f"{name}.py"))
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


opencl_suite = _beside("opencl_suite")  # the public suite's citation table and its checked loader

KERNELS = r"""
__kernel void triad(__global float *a, __global const float *b, __global const float *c, const float s)
{
    size_t i = get_global_id(0);
    a[i] = b[i] + s * c[i];
}

__kernel void sgemm(__global const float *A, __global const float *B, __global float *C, const int n)
{
    int row = get_global_id(1), col = get_global_id(0);
    float acc = 0.0f;
    for (int k = 0; k < n; k++)
        acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
}

__kernel void reduce(__global const float *in, __global float *partial, __local float *tmp)
{
    size_t lid = get_local_id(0), size = get_local_size(0);
    float x = 0.0f;
    for (int r = 0; r < 8; r++)   /* 8 elements per work-item: a strided walk */
        x += in[get_global_id(0) + r * get_global_size(0)];
    tmp[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t step = size / 2; step > 0; step /= 2) {
        if (lid < step)
            tmp[lid] += tmp[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = tmp[0];
}

__kernel void stencil(__global const float *in, __global float *out, const int w)
{
    int x = get_global_id(0), y = get_global_id(1);
    int h = get_global_size(1);
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        out[y * w + x] = in[y * w + x];
        return;
    }
    out[y * w + x] = 0.2f * (in[y * w + x] + in[y * w + x - 1] + in[y * w + x + 1]
                             + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}

__kernel void conv(__global const float *in, __constant float *f, __global float *out, const int w)
{
    int x = get_global_id(0), y = get_global_id(1);
    int h = get_global_size(1);
    float acc = 0.0f;
    for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++) {
            int xx = clamp(x + dx, 0, w - 1), yy = clamp(y + dy, 0, h - 1);
            acc += f[(dy + 2) * 5 + dx + 2] * in[yy * w + xx];
        }
    out[y * w + x] = acc;
}

__kernel void nbody(__global const float4 *pos, __global float4 *acc, const int n)
{
    int i = get_global_id(0);
    float4 p = pos[i];
    float3 a = (float3)(0.0f);
    for (int j = 0; j < n; j++) {
        float4 q = pos[j];
        float3 d = q.xyz - p.xyz;
        float r2 = dot(d, d) + 1e-3f;
        float inv = native_rsqrt(r2);
        a += d * (q.w * inv * inv * inv);
    }
    acc[i] = (float4)(a, 0.0f);
}
"""

ALL = ("smooth", "triangle", "triad", "sgemm", "reduce", "stencil", "conv", "nbody")
EXAMPLES = ALL[:2]  # examples/opencl_two_kernels.py's: with the suite's, issue #42's set
ISSUE_SET = "examples+suite"


# ---- the child: every kernel, timed from its profiling events --------------------------
def _suite_setup(name: str, buf, np) -> tuple[tuple, tuple, tuple | None]:
    """A suite kernel's host side, written here (the suite's own hosts are not used): its
    arguments, global and local size, sized for about 5-50 ms a launch on one core."""
    f32, i32 = np.float32, np.int32
    if name == "pb.gemm":  # C = alpha A B + beta C, 256^3: 2-D, 256 work-groups
        n = 256
        return (buf(n * n), buf(n * n), buf(n * n), f32(1.5), f32(0.5), i32(n), i32(n), i32(n)), (n, n), (32, 8)
    if name == "pb.conv2d":  # 3x3 over 4096^2: one read and write per point
        n = 4096
        return (buf(n * n), buf(n * n, False), i32(n), i32(n)), (n, n), (32, 8)
    if name == "pb.jacobi2d":  # a 5-point sweep over 4096^2
        n = 4096
        return (buf(n * n), buf(n * n, False), i32(n)), (n, n), (32, 8)
    if name == "pb.mvt":  # x2 += A^T y2, 2048^2: 32 work-groups of 64
        n = 2048
        return (buf(n * n), buf(n), buf(n), i32(n)), (n,), (64,)
    if name == "pb.atax":  # tmp = A x for 1024 rows of 16384: 8 work-groups of 128, fewer than 16 units
        rows, cols = 1024, 1 << 14
        return (buf(rows * cols), buf(cols), buf(rows), i32(rows), i32(cols)), (rows,), (128,)
    if name == "pb.covar":  # 512 columns of 64 rows: column j does 512 - j dot products, 16 work-groups of 32
        m, n = 512, 64
        return (buf(m * m, False), buf(n * m), i32(m), i32(n)), (m,), (32,)
    raise KeyError(name)


def _launches(cl, np, ctx, queue, names: list[str], suite_dir: str | None = None) -> dict:
    """name -> a function that enqueues one launch and returns its event."""
    sys.path.insert(0, str(ROOT / "examples"))
    from opencl_two_kernels import SOURCE  # the example's two kernels, as it runs them

    prog = cl.Program(ctx, SOURCE + KERNELS).build() if any(n in ALL for n in names) else None
    suite = {k.name: k for k in opencl_suite.KERNELS}
    built: dict = {}  # one program per suite file: each has its own typedefs
    mf = cl.mem_flags
    rng = np.random.default_rng(1)
    held = []  # set_args keeps no reference: the buffers must outlive the launches

    def buf(n, fill=True):
        host = rng.random(n, dtype=np.float32)
        b = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host) if fill else \
            cl.Buffer(ctx, mf.READ_WRITE, size=4 * n)
        held.append(b)
        return b

    out = {}
    for name in names:
        if name in suite:
            sk = suite[name]
            if sk.path not in built:
                built[sk.path] = cl.Program(ctx, opencl_suite.read_source(sk, Path(suite_dir))).build()
            k = cl.Kernel(built[sk.path], sk.function)
            args, glob, local = _suite_setup(name, buf, np)
            k.set_args(*args)
            out[name] = (lambda k=k, glob=glob, local=local, held=held:
                         cl.enqueue_nd_range_kernel(queue, k, glob, local))
            continue
        k = cl.Kernel(prog, name)
        args, glob, local = _house_setup(name, buf, np, cl.LocalMemory)
        k.set_args(*args)
        out[name] = (lambda k=k, glob=glob, local=local, held=held:
                     cl.enqueue_nd_range_kernel(queue, k, glob, local))
    return out


def _house_setup(name: str, buf, np, local_memory) -> tuple[tuple, tuple, tuple | None]:
    """An in-house kernel's arguments, global and local size (``_suite_setup``'s form)."""
    if name == "smooth":  # the example's sizes: 2^17 elements, 16 inner steps
        return (buf(1 << 17), np.int32(16)), (1 << 17,), None
    if name == "triangle":  # 64 rows of 2 x 2^17 columns, 4 work-groups of 16
        return (buf(1024), buf(64, False), np.int32(2 << 17)), (64,), (16,)
    if name == "triad":
        n = 1 << 24
        return (buf(n, False), buf(n), buf(n), np.float32(3.0)), (n,), None
    if name == "sgemm":
        n = 256
        return (buf(n * n), buf(n * n), buf(n * n, False), np.int32(n)), (n, n), (16, 16)
    if name == "reduce":
        n, local = 1 << 22, 128
        return (buf(n), buf(n // 8 // local, False), local_memory(4 * local)), (n // 8,), (local,)
    if name == "stencil":
        w = 4096
        return (buf(w * w), buf(w * w, False), np.int32(w)), (w, w), (16, 16)
    if name == "conv":
        w = 1024
        return (buf(w * w), buf(25), buf(w * w, False), np.int32(w)), (w, w), (16, 16)
    if name == "nbody":  # 2048 bodies, 64 per work-group
        n = 2048
        return (buf(4 * n), buf(4 * n, False), np.int32(n)), (n,), (64,)
    raise KeyError(name)


def setup_bytes(name: str) -> int:
    """A kernel's buffer bytes per launch as its set-up here makes them (float32 buffers,
    each once): what a kernel line recorded before ``sample.buffer_bytes`` was held."""
    import types

    sizes: list[int] = []

    def buf(n, fill=True):
        sizes.append(4 * n)
        return None

    fake = types.SimpleNamespace(float32=float, int32=int)
    if name in ALL:
        _house_setup(name, buf, fake, lambda n: None)
    else:
        _suite_setup(name, buf, fake)
    return sum(sizes)


def child(names: list[str], seconds: float, suite_dir: str | None = None) -> int:
    """Every kernel until its device time reaches ``seconds``; one JSON line on stdout."""
    import numpy as np
    import pyopencl as cl

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    dev = ctx.devices[0]
    result = {"device": dev.name.strip(), "compute_units": dev.max_compute_units, "per_launch_s": {}}
    for name, launch in _launches(cl, np, ctx, queue, names, suite_dir).items():
        launch().wait()  # warm-up: the first launch pays for set-up
        times, total = [], 0.0
        while total < seconds and len(times) < 400:
            ev = launch()
            ev.wait()
            t = (ev.profile.end - ev.profile.start) * 1e-9
            times.append(t)
            total += t
        result["per_launch_s"][name] = statistics.median(times)
    print(json.dumps(result), flush=True)
    return 0


GROUP_KERNEL = r"""
__kernel void spin(__global float *a, const int inner)
{
    size_t i = get_global_id(0);
    float x = a[i];
    for (int k = 0; k < inner; k++)   /* the same work for every work-item: no memory traffic */
        x = 0.999f * x + 0.001f * sin(x);
    a[i] = x;
}
"""
GROUP_SIZE = 64
PAST_UNITS = (2, 4, 8, 16, 32)  # work-groups per launch as multiples of the compute units


def child_groups(seconds: float) -> int:
    """The work-group check: ``spin`` at 1 .. 32 x compute units work-groups of GROUP_SIZE
    work-items, each the same work; median device time per launch, one JSON line."""
    import numpy as np
    import pyopencl as cl

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    dev = ctx.devices[0]
    units = int(dev.max_compute_units)
    k = cl.Program(ctx, GROUP_KERNEL).build().spin
    # Past the units up to PAST_UNITS x: where the launches stop being one wave tells how
    # many work-groups a unit ran at once (OpenCL does not say).
    groups = sorted(({1, 2, 4, units // 4, units // 2, units - 1, units, units + 1, 3 * units // 2}
                     | {m * units for m in PAST_UNITS}) - {0})
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                  hostbuf=np.ones(max(groups) * GROUP_SIZE, dtype=np.float32))
    out = {"device": dev.name.strip(), "compute_units": units, "type": cl.device_type.to_string(dev.type),
           "max_work_group_size": int(dev.max_work_group_size), "group_size": GROUP_SIZE, "per_launch_s": {}}
    for g in groups:
        k.set_args(a, np.int32(1 << 14))
        cl.enqueue_nd_range_kernel(queue, k, (g * GROUP_SIZE,), (GROUP_SIZE,)).wait()
        times, total = [], 0.0
        while total < seconds and len(times) < 200:
            ev = cl.enqueue_nd_range_kernel(queue, k, (g * GROUP_SIZE,), (GROUP_SIZE,))
            ev.wait()
            times.append((ev.profile.end - ev.profile.start) * 1e-9)
            total += times[-1]
        out["per_launch_s"][g] = statistics.median(times)
    print(json.dumps(out), flush=True)
    return 0


def gpu_check(seconds: float, json_out: str | None) -> int:
    """Measured device time per launch against corecast's work-group bound
    (``workgroups.device_predict``) as the work-groups per launch vary (``gpu_table``)."""
    res = _run_child([sys.executable, __file__, "--child-groups", "--seconds", str(seconds)], dict(os.environ))
    if res is None:
        print("opencl_cu: error: no OpenCL device ran the work-group check", file=sys.stderr)
        return 1
    figures = gpu_table(res)
    if json_out:
        Path(json_out).write_text(json.dumps({"gpu": res, **figures}, indent=1))
    return 0


def gpu_table(res: dict, max_group: int | None = None) -> dict:
    """Print the work-group check of ``res`` (``child_groups``' line, measured or saved)
    and return its figures (``max_group``: the device's largest work-group where ``res``
    predates its recording).  Predicted: the time at the device's units, anchored at
    work-groups = compute units, one work-group per unit at a time (the wave count of
    ``workgroups.device_predict``); band: from ``launch_waves``' fewest waves (each unit
    running as many work-groups at once as the device's largest work-group holds: OpenCL
    does not say how many it does) to the most.  The flat region (at most one work-group
    per unit) must match within 15%; past the units the measured time must lie in the band."""
    from corecast.model.runtime import workgroups
    from corecast.recording.kernelstats import KernelStats

    units = int(res["compute_units"])
    meas = {int(g): float(t) for g, t in res["per_launch_s"].items()}
    largest = int(res.get("max_work_group_size") or max_group or 0)
    size = int(res.get("group_size") or GROUP_SIZE)

    def kernel(g: int) -> KernelStats:
        k = KernelStats("spin", res["device"], "gpu", units)
        k.sample.launches, k.sample.device_ns, k.sample.shapes = 1, 1, {((g * size,), (size,))}
        k.max_group = largest
        return k

    def predicted_s(g: int) -> float:  # time at the device's units = work / speedup there
        return g / workgroups.device_predict(kernel(g), units).speedup[-1]

    resident = workgroups.resident_groups(kernel(units))
    per_wave = meas[units] / predicted_s(units)
    print(f"opencl_cu --gpu: {res['device']} ({res['type']}), {units} compute units, work-groups of {size}"
          + (f" (at most {largest}: up to {resident} at once per unit in the band)" if largest else
             " (the device's largest work-group not saved: one at a time per unit)"))
    if "GPU" not in res["type"] and "ACCELERATOR" not in res["type"]:
        print("(not a GPU: a CPU device's units are this host's cores, shared with its other load; "
              "the check is meant for a GPU)")
    print(f"{'groups':>7} {'measured ms':>12} {'predicted ms':>13} {'ratio':>6} {'band ms':>15}  in band")
    worst, past, held, waves_seen = 0.0, 0, 0, []
    for g in sorted(meas):
        pred = per_wave * predicted_s(g)
        few, most = workgroups.launch_waves(g, units, resident)
        low, high = per_wave * few, per_wave * most
        inside = low * (1 - FLAT_TOLERANCE) <= meas[g] <= high * (1 + FLAT_TOLERANCE)
        if g <= units:
            worst = max(worst, abs(meas[g] / pred - 1))
        else:
            past += 1
            held += inside
            waves_seen.append((g, meas[g] / per_wave))
        print(f"{g:>7} {1e3 * meas[g]:>12.3f} {1e3 * pred:>13.3f} {meas[g] / pred:>6.2f} "
              f"{1e3 * low:>7.3f}-{1e3 * high:<7.3f}  {'yes' if inside else 'NO'}")
    print(f"flat region (1..{units} work-groups): worst |measured/predicted - 1| = {100 * worst:.0f}% "
          f"(target <= {100 * FLAT_TOLERANCE:.0f}%)")
    if past:
        g, w = waves_seen[-1]
        print(f"past the units ({units + 1}..{max(meas)} work-groups): measured in the band at {held} of {past} "
              f"counts (within {100 * FLAT_TOLERANCE:.0f}%); at {g} work-groups the launch took {w:.2f} "
              f"one-group waves where one at a time per unit takes {-(-g // units)}")
    return {"flat_worst": worst, "past_units": past, "past_in_band": held, "resident": resident}


FLAT_TOLERANCE = 0.15  # issue #42: the flat region within 15% of measured device time


# ---- the parent --------------------------------------------------------------------------
def _pocl_env(cu: int, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_")}
    env.update(POCL_CPU_MAX_CU_COUNT=str(cu), POCL_MAX_PTHREAD_COUNT=str(cu), **(extra or {}))
    return env


def _run_child(cmd: list[str], env: dict) -> dict | None:
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG_S)
    except subprocess.TimeoutExpired:
        print(f"opencl_cu: a child ran past {HANG_S}s: ended", file=sys.stderr)
        return None
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        print(f"opencl_cu: child failed: {tail}", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def _child_cmd(names: list[str], seconds: float, suite_dir: str | None) -> list[str]:
    return ([sys.executable, __file__, "--child", ",".join(names), "--seconds", str(seconds)]
            + (["--suite", str(suite_dir)] if suite_dir else []))


def truth(names: list[str], counts: list[int], repeat: int, seconds: float,
          suite_dir: str | None = None) -> tuple[dict, dict]:
    """name -> {count: median device time per launch}, and the device description."""
    seen: dict = {name: {n: [] for n in counts} for name in names}
    device: dict = {}
    t0, done = time.monotonic(), 0
    for _ in range(repeat):
        for n in counts:  # interleaved: slow drift of the machine hits every count alike
            res = _run_child(_child_cmd(names, seconds, suite_dir), _pocl_env(n))
            done += 1  # a call cut short by its time limit shows how far it got
            print(f"opencl_cu: truth {done}/{repeat * len(counts)} ({n} compute units), "
                  f"{time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
            if res is None:
                continue
            device = {"device": res["device"]}
            for name, t in res["per_launch_s"].items():
                seen[name][n].append(t)
    return {name: {n: statistics.median(v) for n, v in per.items() if v} for name, per in seen.items()}, device


def predictions(names: list[str], cu: int, target: int, seconds: float, suite_dir: str | None = None,
                machine: str | None = None) -> dict:
    """``corecast run`` of the child at ``cu`` compute units: name -> kernel line (a suite
    kernel's line, named by its OpenCL function, under the suite's name); ``machine``:
    this host's calibration file (``CORECAST_MACHINE_FILE``), none without it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "k.jsonl")
        cmd = [sys.executable, "-m", "corecast", "run", "--quiet", "--target", str(target), "--json-out", out,
               "--", *_child_cmd(names, seconds, suite_dir)]
        if _run_child(cmd, _pocl_env(cu, {"CORECAST_MACHINE_FILE": machine or ""})) is None:
            return {}
        lines = [json.loads(x) for x in Path(out).read_text().splitlines() if x.strip()] if os.path.exists(out) else []
    return kernel_lines(names, lines)


def kernel_lines(names: list[str], lines: list[dict]) -> dict:
    """name -> the recording's kernel line of that kernel (a suite kernel's by its function)."""
    by_function = {k.function: k.name for k in opencl_suite.KERNELS if k.name in names}
    by_function.update({n: n for n in names if n in ALL})
    return {by_function[d["name"]]: d for d in lines
            if d.get("event") == "kernel" and d.get("name") in by_function}


def compare(meas: dict, line: dict, top: int) -> dict | None:
    """One kernel's prediction (a kernel line) against its measured curve."""
    base = meas.get(1)
    pred = {p["threads"]: p for p in line.get("predicted", [])}
    if not base or top not in meas or top not in pred:
        return None
    s_meas = {n: base / t for n, t in meas.items()}
    held = [pred[n]["low"] <= s_meas[n] <= pred[n]["high"] for n in s_meas if n >= 2 and n in pred]
    p = pred[top]
    return {"pred": p["speedup"], "low": p["low"], "high": p["high"], "meas": s_meas[top],
            "abs_ln": abs(math.log(p["speedup"] / s_meas[top])), "held": sum(held), "cases": len(held),
            "bottleneck": line.get("future_bottleneck")}


def table(names: list[str], meas: dict, lines: dict, runs: list[int], top: int) -> dict:
    """Print the measured curves, each run's predictions at ``top`` and the figures; the
    figures per run count."""
    counts = list(range(1, top + 1))
    width = max([9] + [len(n) for n in names])
    head = f"{'kernel':<{width}} {'T(1) ms':>8} " + " ".join(f"{'S@' + str(n):>6}" for n in counts[1:][:8])
    for r in runs:
        head += f" | run@{r}: S@{top} pred [band]    |ln|"
    print(head)
    summary: dict = {r: [] for r in runs}
    for name in names:
        m = meas.get(name, {})
        row = f"{name:<{width}} {1e3 * m.get(1, float('nan')):>8.2f} "
        row += " ".join(f"{m[1] / m[n]:>6.2f}" if 1 in m and n in m else f"{'-':>6}" for n in counts[1:][:8])
        for r in runs:
            c = compare(m, lines[r].get(name, {}), top)
            summary[r].append(c)
            row += (f" | {c['pred']:>13.2f} [{c['low']:.2f}-{c['high']:.2f}] {c['abs_ln']:.3f}" if c
                    else f" | {'no prediction':>30}")
        print(row)
    # Issue #42 counts the two examples and a public suite's kernels: their figures apart
    # when the in-house kernels ran beside them.
    suite = {k.name for k in opencl_suite.KERNELS}
    issue = [i for i, n in enumerate(names) if n in EXAMPLES or n in suite]
    figures = {}
    for r in runs:
        figures[r] = _figures(summary[r], f"run@{r}", top)
        if any(names[i] in suite for i in issue) and len(issue) < len(names):
            figures[r][ISSUE_SET] = _figures([summary[r][i] for i in issue], f"run@{r} ({ISSUE_SET})", top)
    return figures


def _figures(compared: list, label: str, top: int) -> dict:
    got = [c for c in compared if c]
    med = statistics.median(c["abs_ln"] for c in got) if got else float("nan")
    cases = sum(c["cases"] for c in got)
    cover = sum(c["held"] for c in got) / cases if cases else float("nan")
    print(f"{label}: {len(got)} kernels: median |ln(pred/meas)| at {top} = {med:.3f} (target <= 0.14), "
          f"band coverage over counts 2..{top} = {100 * cover:.0f}% of {cases} (target >= 80%)")
    return {"kernels": len(got), "median_abs_ln": med, "coverage": cover, "cases": cases}


def repredict(line: dict, target: int, machine=None, name: str | None = None) -> dict:
    """A recorded kernel line with its predictions made again, by this checkout's model,
    from what the line holds (``record.kernel_from_json``: the sample, shapes, limits),
    with ``machine`` (a ``Calibration``) or none; a line saved before its sample held
    ``buffer_bytes`` gets kernel ``name``'s from its set-up here (``setup_bytes``)."""
    from corecast.model.runtime import kernelmodel
    from corecast.recording.record import kernel_from_json

    k = kernel_from_json(line)
    if not k.sample.buffer_bytes and name is not None:
        k.sample.buffer_bytes = setup_bytes(name) * k.sample.launches
    pred = kernelmodel.predict(k, target, int(line.get("cores") or target), machine)
    out = dict(line, predicted=[], basis="", future_bottleneck=None)
    if pred is not None:
        out["predicted"] = [{"threads": int(n), "speedup": float(v), "low": float(lo), "high": float(hi)}
                            for n, v, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)]
        out["basis"], out["future_bottleneck"] = pred.basis, pred.bottleneck
    return out


def rescore(path: str, json_out: str | None, max_group: int | None = None, machine: str | None = None) -> int:
    """Score a saved run (``--json`` of this script) again: the measured curves as they
    were, every recorded kernel line predicted again by this checkout (no device needed),
    with the calibration in the file ``machine`` (the run's machine's) or none."""
    cal = None
    if machine:
        from corecast.model.machine.calibration import CalibrationError, read

        try:
            cal = read(machine)
        except CalibrationError as exc:
            print(f"opencl_cu: error: --machine: {exc}", file=sys.stderr)
            return 1
    try:
        saved = json.loads(Path(path).read_text())
        if isinstance(saved, dict) and isinstance(saved.get("gpu"), dict):  # a --gpu check's file
            figures = gpu_table(saved["gpu"], max_group)
            if json_out:
                Path(json_out).write_text(json.dumps({"gpu": saved["gpu"], **figures}, indent=1))
            return 0
        top = int(saved["max_cu"])
        meas = {name: {int(n): float(t) for n, t in per.items()} for name, per in saved["measured"].items()}
        runs = sorted(int(r) for r in saved["lines"])
        lines = {r: {name: repredict(line, top, cal, name) for name, line in saved["lines"][str(r)].items()}
                 for r in runs}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"opencl_cu: error: cannot rescore {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    known = ALL + tuple(k.name for k in opencl_suite.KERNELS)
    names = [k for k in known if k in meas] + sorted(k for k in meas if k not in known)
    print(f"opencl_cu --rescore {path}: {saved.get('device', {}).get('device', '?')}, compute units 1..{top}, "
          "measured curves as saved, predictions made again from the saved kernel lines, "
          + (f"calibration {machine}" if machine else "no calibration"))
    figures = table(names, meas, lines, runs, top)
    if json_out:
        Path(json_out).write_text(json.dumps(dict(saved, figures=figures, lines=lines), indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-cu", type=int, default=os.cpu_count() or 1,
                    help="largest compute-unit count (default: cores)")
    ap.add_argument("--runs", default="2,4", help="compute-unit counts of the corecast runs (default 2,4)")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of the truth (default 3)")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds of device time in all (default 240)")
    ap.add_argument("--kernels", help="which kernels, comma-separated, or 'all' (default: all: the 8 here, "
                                      "and with --suite its 6 too)")
    ap.add_argument("--suite", metavar="DIR",
                    help="the public suite's exported tree (python benchmarks/opencl_suite.py export: "
                         ".dev/oclsuite): its kernels run too, read from there")
    ap.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    ap.add_argument("--machine", metavar="FILE",
                    help="this machine's calibration (corecast calibrate; the device machine's: "
                         "benchmarks/device16/calibration.json): the corecast runs use it, and so do "
                         "--rescore's predictions (the run's machine's); default: none")
    ap.add_argument("--gpu", action="store_true",
                    help="the work-group check on the device pyopencl picks (a GPU: see the docstring)")
    ap.add_argument("--rescore", metavar="SAVED",
                    help="score a saved --json run again with this checkout's predictions (no device)")
    ap.add_argument("--max-group", type=int, metavar="N",
                    help="with --rescore of a --gpu file saved without it: the device's largest work-group "
                         "(CL_DEVICE_MAX_WORK_GROUP_SIZE; a kernel line's limits.max_work_group_size)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-groups", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=0.3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        try:
            return child(args.child.split(","), args.seconds, args.suite)
        except opencl_suite.SuiteError as exc:
            print(f"opencl_cu: error: {exc}", file=sys.stderr)
            return 1
    if args.child_groups:
        return child_groups(args.seconds)
    if args.rescore:
        return rescore(args.rescore, args.json, args.max_group, args.machine)
    if args.gpu:
        return gpu_check(max(0.05, args.budget / 10), args.json)
    suite = [k.name for k in opencl_suite.KERNELS]
    known = list(ALL) + (suite if args.suite else [])
    names = known if args.kernels in (None, "all") else [k for k in args.kernels.split(",") if k]
    bad = [k for k in names if k not in known]
    if bad and bad[0] in suite:
        ap.error(f"kernel {bad[0]} is the public suite's: name its exported tree with --suite DIR "
                 "(python benchmarks/opencl_suite.py export)")
    if bad or not names:
        ap.error(f"unknown kernel {bad[0] if bad else '(none)'}; choose from {','.join(known)}")
    if args.suite:
        args.suite = str(Path(args.suite).resolve())  # children and messages name the one tree, whatever the cwd
    try:  # every suite file checked before a child starts: a missing or changed one is one line
        for k in opencl_suite.KERNELS:
            if k.name in names:
                opencl_suite.read_source(k, Path(args.suite))
    except opencl_suite.SuiteError as exc:
        print(f"opencl_cu: error: {exc}", file=sys.stderr)
        return 1
    if args.machine:  # checked before any child starts: a bad file is one line, not a run without it
        from corecast.model.machine.calibration import CalibrationError, read

        try:
            read(args.machine)
        except CalibrationError as exc:
            print(f"opencl_cu: error: --machine: {exc}", file=sys.stderr)
            return 1
    if not 1 <= args.max_cu <= 1024 or args.repeat < 1 or args.budget <= 0:
        ap.error("--max-cu must be 1..1024, --repeat at least 1 and --budget positive")
    try:
        runs = sorted({int(x) for x in args.runs.split(",") if x.strip()})
    except ValueError:
        ap.error(f"--runs: not a list of counts: {args.runs!r}")
    skipped = [r for r in runs if r > args.max_cu or r < 1]
    runs = [r for r in runs if 1 <= r <= args.max_cu]
    if not runs:
        ap.error(f"no --runs count within 1..{args.max_cu}")
    counts = list(range(1, args.max_cu + 1))
    # Device time per kernel and child: half the budget to the truth, the rest to the runs
    # (each at least corecast's 200 ms sample window).
    truth_s = max(0.05, args.budget / 2 / (len(counts) * args.repeat * len(names)))
    run_s = max(0.25, args.budget / 2 / (len(runs) * len(names)))
    t0 = time.monotonic()
    meas, device = truth(names, counts, args.repeat, truth_s, args.suite)
    if not device:
        print("opencl_cu: error: no OpenCL device ran the kernels (pocl: apt install pocl-opencl-icd)",
              file=sys.stderr)
        return 1
    if args.json:  # the measured curves first: a call cut short in the runs keeps them
        Path(args.json).write_text(json.dumps({"device": device, "max_cu": args.max_cu, "measured": meas},
                                              indent=1))
    machine = str(Path(args.machine).resolve()) if args.machine else None
    lines = {r: predictions(names, r, args.max_cu, run_s, args.suite, machine) for r in runs}
    print(f"opencl_cu: {device['device']} (pocl), compute units 1..{args.max_cu} (POCL_CPU_MAX_CU_COUNT), "
          f"{args.repeat} repetitions, {os.cpu_count()} host cores, {time.monotonic() - t0:.0f}s")
    if skipped:
        print(f"runs at {','.join(map(str, skipped))} compute units left out: above --max-cu {args.max_cu} "
              "(unmeasured here)")
    figures = table(names, meas, lines, runs, args.max_cu)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "max_cu": args.max_cu, "measured": meas,
                                               "figures": figures, "lines": lines}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
