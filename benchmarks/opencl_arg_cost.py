"""Host cost of noting a kernel's buffer arguments (``opencl.profile``'s wrappers of
``Kernel.set_arg`` / ``_set_arg_multi``, which ``set_args`` and ``Kernel.__call__`` go
through): ``set_args`` of two buffers and a scalar, and the launch's total, timed with the
wrappers and again with pyopencl's own methods put back (min of 7 x 20000).

    python benchmarks/opencl_arg_cost.py          # needs pyopencl and an OpenCL device
"""
from __future__ import annotations

import os
import time

REPS, ROUNDS = 20000, 7


def main() -> int:
    os.environ.setdefault("CORECAST_QUIET", "1")
    import corecast.opencl as instrumentation

    instrumentation.instrument()
    import numpy as np
    import pyopencl as cl
    from corecast.opencl import hook, profile

    ctx = cl.create_some_context(interactive=False)
    prog = cl.Program(ctx, "__kernel void f(__global float *a, __global const float *b, float s)"
                           " { a[get_global_id(0)] = s * b[get_global_id(0)]; }").build()
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    k, s = prog.f, np.float32(2)

    def per_call_us() -> float:
        best = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for _ in range(REPS):
                k.set_args(a, b, s)
                profile.buffer_bytes(k)
            best.append((time.perf_counter() - t0) / REPS * 1e6)
        return min(best)

    noted = per_call_us()
    prof = hook.profiler()
    for attr in prof.ARG_SETTERS:
        orig = prof.originals.get(("args", attr))
        if orig is not None:
            setattr(cl._cl.Kernel, attr, orig)
    plain = per_call_us()
    print(f"set_args (2 buffers, 1 scalar): {noted:.2f} us with the notes, {plain:.2f} us without: "
          f"{noted - plain:.2f} us a call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
