"""Two OpenCL kernels for `corecast run` (pyopencl; pocl gives a CPU device):

- `smooth`: every work-item iterates a contraction on its element, the same work for all
  (balanced; the runtime picks the work-group size);
- `triangle`: work-item r runs (r + 1) * cols / rows steps of a recurrence, 16 work-items
  per work-group: late work-groups carry more work than early ones (imbalance), and there
  are only 4 work-groups.

    corecast run -- python examples/opencl_two_kernels.py [N] [ITERATIONS] [--no-profiling]
    python -m corecast.opencl examples/opencl_two_kernels.py 131072 20

Prints one checksum line per kernel; the same numbers with or without corecast.
`--no-profiling` makes the program's queue one without profiling (corecast still times
the kernels, on a profiling queue of its own).
"""
import sys

import numpy as np
import pyopencl as cl

SOURCE = """
__kernel void smooth(__global float *a, const int inner)
{
    int i = get_global_id(0);
    float x = a[i];
    for (int k = 0; k < inner; k++)
        x = 0.99f * x + 0.01f * cos(x);
    a[i] = x;
}

__kernel void triangle(__global const float *m, __global float *sums, const int cols)
{
    int r = get_global_id(0);
    int rows = get_global_size(0);
    int n = (int)(((long)(r + 1) * cols) / rows);
    float s = 0.0f;
    for (int j = 0; j < n; j++)
        s = 0.9999f * s + m[(r * 7 + j) & 1023];
    sums[r] = s;
}
"""


def main(argv):
    flags = [a for a in argv if a.startswith("--")]
    args = [a for a in argv if not a.startswith("--")]
    n = int(args[0]) if len(args) > 0 else 1 << 17
    iterations = int(args[1]) if len(args) > 1 else 20
    rows, cols = 64, 2 * n

    ctx = cl.create_some_context(interactive=False)
    props = 0 if "--no-profiling" in flags else cl.command_queue_properties.PROFILING_ENABLE
    queue = cl.CommandQueue(ctx, properties=props)
    program = cl.Program(ctx, SOURCE).build()
    smooth = cl.Kernel(program, "smooth")
    triangle = cl.Kernel(program, "triangle")

    mf = cl.mem_flags
    a = (np.arange(n, dtype=np.float32) % 97) / 97.0
    m = ((np.arange(1024, dtype=np.float32) % 13) - 6.0) / 13.0
    a_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
    m_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=m)
    sums_buf = cl.Buffer(ctx, mf.WRITE_ONLY, size=rows * 4)

    triangle.set_args(m_buf, sums_buf, np.int32(cols))
    for _ in range(iterations):
        smooth(queue, (n,), None, a_buf, np.int32(16))  # through Kernel.__call__
        cl.enqueue_nd_range_kernel(queue, triangle, (rows,), (16,))  # directly
    sums = np.empty(rows, dtype=np.float32)
    cl.enqueue_copy(queue, a, a_buf)
    cl.enqueue_copy(queue, sums, sums_buf)
    queue.finish()
    total_a, total_sums = float(a.astype(np.float64).sum()), float(sums.astype(np.float64).sum())
    print(f"smooth: {n} elements x {iterations} launches, checksum {total_a:.6e}")
    print(f"triangle: {rows} rows x {iterations} launches, checksum {total_sums:.6e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
