"""A device-bound OpenCL host for `corecast run` (pyopencl): the host launches a few long
kernels one after another and blocks on each (`Event.wait`), so the device is busy for
most of the wall time and the host's own threads do almost nothing.  The process line
should say "waiting on device x% of wall".

    corecast run -- python examples/opencl_device_bound.py [LAUNCHES] [MS] [--inner K]

Each of LAUNCHES (default 16) launches runs a dependent chain of multiply-adds per
work-item, about MS milliseconds (default 150) on the device: two short launches time the
chain first (profiling events) and the count of steps, K, is scaled to MS; `--inner K`
fixes it instead.  Prints one line, the launches, K and a checksum: the same with or
without corecast for the same K.
"""
import argparse
import sys

import numpy as np
import pyopencl as cl

SOURCE = """
__kernel void chain(__global float *a, const int inner)
{
    int i = get_global_id(0);
    float x = a[i];
    for (int k = 0; k < inner; k++)
        x = 0.999f * x + 0.001f;
    a[i] = x;
}
"""
ITEMS = 1 << 18  # enough work-items to fill a large GPU; each runs the same chain
PROBE = 2000     # steps of the timing launches


def launch(queue, kernel):
    """One launch with the kernel's arguments as set, waited for; its device seconds."""
    event = cl.enqueue_nd_range_kernel(queue, kernel, (ITEMS,), None)
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-9


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("launches", nargs="?", type=int, default=16)
    ap.add_argument("ms", nargs="?", type=float, default=150.0, help="each launch's device milliseconds")
    ap.add_argument("--inner", type=int, help="the chain's steps (default: timed to MS)")
    args = ap.parse_args(argv)
    inner = args.inner

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    kernel = cl.Kernel(cl.Program(ctx, SOURCE).build(), "chain")
    a = np.zeros(ITEMS, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)

    if inner is None:  # the first launch may carry the runtime's own set-up: the second times
        kernel.set_args(buf, np.int32(PROBE))
        launch(queue, kernel)
        seconds = launch(queue, kernel)
        inner = max(1, int(PROBE * args.ms * 1e-3 / max(seconds, 1e-6)))
        cl.enqueue_copy(queue, buf, np.zeros(ITEMS, dtype=np.float32)).wait()  # the timing launches leave no trace
    kernel.set_args(buf, np.int32(inner))
    for _ in range(args.launches):
        launch(queue, kernel)
    cl.enqueue_copy(queue, a, buf).wait()
    print(f"chain: {args.launches} launches of {inner} steps on {ITEMS} items, checksum {float(a.astype(np.float64).sum()):.6e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
