"""The OpenCL fixture: a device that builds and runs a kernel, or a skip saying why not."""
from __future__ import annotations

import sys

import pytest

from .helpers import clean_env, run

PROBE = r"""
import pyopencl as cl
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
kernel = cl.Program(ctx, "__kernel void one(__global int *a) { a[get_global_id(0)] = 1; }").build().one
buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 16)
kernel(queue, (4,), None, buf)
queue.finish()
print(ctx.devices[0].platform.name + " | " + ctx.devices[0].name)
"""


@pytest.fixture(scope="session")
def opencl() -> str:
    """'platform | device' of the device pyopencl picks; skips without one."""
    r = run([sys.executable, "-c", PROBE], env=clean_env())
    if r.returncode != 0:
        err = [line.strip() for line in r.stderr.decode(errors="replace").splitlines() if line.strip()]
        if any("No module named 'pyopencl'" in line for line in err):
            pytest.skip("pyopencl is not installed (pip install '.[opencl]')")
        errors = [line for line in err if "error" in line.lower()]
        why = (errors or err or [f"exit status {r.returncode}"])[-1]
        if "unknown target CPU" in why:
            why += (" (this pocl's LLVM does not know the CPU; a newer pocl, e.g. "
                    "apt install pocl-opencl-icd, may)")
        pytest.skip(f"no usable OpenCL device: {why}")
    return r.stdout.decode().strip()
