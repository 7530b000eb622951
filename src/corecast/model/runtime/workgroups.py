"""A kernel's work-groups: how many a launch has (or, where the runtime chose the local size,
the fewest it can have), what they bound, and the prediction of a device that is not a CPU,
where they are all the run shows.

A device that is not a CPU (a GPU, an accelerator) shows no runtime threads: only each
launch's device time is observable.  Its prediction (``device_predict``) runs to the
device's compute units and is the work-group bound alone: G work-groups of equal work, one
wave of them per compute unit at a time, take ceil(G / n) waves at n units.  What limits
the kernel is named (``limits``): work-groups per launch against compute units, the
work-group size against the device's largest, and the share of compute units a launch can
occupy.  Idle time inside a launch (memory or latency bound work-items, uneven work-groups)
is not measured there, so the band's low end is the speedup with half the compute-unit time
at the device's count idle.  Nor does OpenCL report how many work-groups a unit runs at
once (a GPU's streaming multiprocessor holds several): the wave count is the most, one
work-group per unit at a time, and the band's low end lets each unit run up to as many as
the device's largest work-group holds (``resident_groups``), down to no gain when one unit
could hold them all.

Where the program left the local size to the runtime, the work-groups are not known, but
there are at least the work-items over the device's largest work-group
(``fewest_work_groups``), and the band's low end allows for that few.

Standard library only: imported inside profiled programs.
"""
from __future__ import annotations

import math

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...recording.kernelstats import KernelStats
    from .bound import TeamPrediction


def launch_shape(kernel: KernelStats) -> tuple:
    """(global size, local size) of the sampled launches when all had the same one (either
    may be None: not known, or left to the runtime); (None, None) otherwise."""
    shapes = kernel.sample.shapes or set(kernel.sizes)
    if len(shapes) != 1:
        return None, None
    (g, loc), = shapes
    return g, loc


def work_groups(kernel: KernelStats) -> int | None:
    """Work-groups per launch when every sampled launch had the same known shape."""
    g, loc = launch_shape(kernel)
    if g is None or loc is None or len(g) != len(loc) or any(v <= 0 for v in loc):
        return None
    return math.prod(-(-a // b) for a, b in zip(g, loc))


def fewest_work_groups(kernel: KernelStats) -> int | None:
    """Where the runtime chose the local size: the fewest work-groups a launch can have, its
    work-items over the device's largest work-group (CL_DEVICE_MAX_WORK_GROUP_SIZE), when
    every sampled launch had the same global size; None where that is not known."""
    g, loc = launch_shape(kernel)
    largest = int(kernel.max_group or 0)
    if g is None or loc is not None or not g or any(v <= 0 for v in g) or largest <= 0:
        return None
    return -(-math.prod(g) // largest)


def limits(kernel: KernelStats) -> dict:
    """What bounds the kernel's speedup with compute units, as far as the run shows it:
    work-groups per launch (or, where the runtime chose the local size, the fewest it can
    be), the work-group size against the device's largest, and the share of the compute
    units one launch can keep busy (None: not known)."""
    units = max(1, int(kernel.compute_units))
    groups = work_groups(kernel)
    loc = launch_shape(kernel)[1]
    local = math.prod(loc) if loc else None
    return {
        "compute_units": units, "work_groups": groups,
        "fewest_work_groups": groups if groups is not None else fewest_work_groups(kernel),
        "work_group_size": local, "max_work_group_size": int(kernel.max_group) or None,
        "occupied_units": None if groups is None else round(min(groups, units) / units, 4),
        "groups_per_unit": None if groups is None else -(-groups // units),
    }


IDLE_UNOBSERVED = 0.5  # a non-CPU band's low end: this share of compute-unit time idle


def resident_groups(kernel: KernelStats) -> int:
    """Work-groups of the kernel's size one compute unit may run at once, as far as the
    device says: a unit can hold a work-group of the device's largest size
    (CL_DEVICE_MAX_WORK_GROUP_SIZE), so at least that many work-items, and OpenCL reports
    no more (a GPU's unit often holds several such groups).  1 when a size is unknown."""
    lim = limits(kernel)
    size, largest = lim["work_group_size"], lim["max_work_group_size"]
    if not size or not largest:
        return 1
    return max(1, int(largest) // int(size))


def launch_waves(groups: int, units: int, resident: int = 1) -> tuple[int, int]:
    """Waves of ``groups`` work-groups on ``units`` compute units: (fewest, most).  Most:
    one work-group per unit at a time (the work-group bound); fewest: ``resident`` per unit
    at once, none slowing the others (their work-items only wait on memory or latency)."""
    units, resident = max(1, units), max(1, resident)
    return -(-groups // (units * resident)), -(-groups // units)


def resident_low(groups: int, n: int, resident: int) -> float:
    """The lowest speedup at ``n`` units when each unit runs r work-groups at once, for any
    r in 1..``resident`` (the same r at 1 unit and at n): waves at 1 unit over waves at n.
    With every group resident on one unit (r >= groups) more units give nothing."""
    return min(launch_waves(groups, 1, r)[0] / launch_waves(groups, n, r)[0]
               for r in range(1, min(resident, groups) + 1))


def device_predict(kernel: KernelStats, target: int) -> TeamPrediction:
    """A non-CPU device's kernel at 1..target compute units (see the module's text)."""
    from .bound import TeamPrediction, prediction_counts, fastest_count

    # The table's columns (powers of two) among the counts, also past 64 counts.
    counts = sorted(set(prediction_counts(target)) | {1 << k for k in range(target.bit_length())
                                                      if 1 << k <= target})
    lim = limits(kernel)
    groups, units = lim["work_groups"], lim["compute_units"]

    def waves(n: int) -> float:
        return n if groups is None else groups / launch_waves(groups, n)[1]

    speedup = [waves(n) for n in counts]
    high = [float(n if groups is None else min(n, groups)) for n in counts]
    # Amdahl's form through S(units) = (1 - IDLE_UNOBSERVED) x units: idle time the device
    # does not report would grow the same way.
    serial = (1 / (1 - IDLE_UNOBSERVED) - 1) / (units - 1) if units > 1 else 0.0
    low = [min(s, 1 / (serial + (1 - serial) / n)) for s, n in zip(speedup, counts)]
    resident = resident_groups(kernel)
    if groups is not None and resident > 1:
        low = [min(lo, resident_low(groups, n, resident)) for lo, n in zip(low, counts)]
    fewest = lim["fewest_work_groups"] if groups is None else None
    if fewest is not None:
        # The runtime may have chosen the largest work-groups: as few as ``fewest`` then,
        # in waves of them; the band's low end allows for it.
        low = [min(lo, fewest / launch_waves(fewest, n)[1]) for lo, n in zip(low, counts)]
    parts = []
    if groups is None and fewest is None:
        parts.append("work-groups per launch not known (the runtime chose the local size)")
    elif groups is None:
        parts.append(f"at least {fewest} work-groups per launch (the runtime chose the local size, "
                     f"at most {lim['max_work_group_size']} work-items each)"
                     + (f": not the limit at {counts[-1]} compute units" if fewest >= counts[-1]
                        else f": the limit past {fewest} compute units if the runtime chose the largest"))
    else:
        parts.append(f"{groups} work-groups per launch on {units} compute units "
                     f"({100 * lim['occupied_units']:.0f}% occupied, {lim['groups_per_unit']} per unit)")
    if lim["work_group_size"] is not None:
        size = f"work-group size {lim['work_group_size']}"
        if lim["max_work_group_size"]:
            size += f" of at most {lim['max_work_group_size']}"
        parts.append(size)
    band = "; band: idle time inside launches is not measured on this device"
    if groups is not None and resident > 1:
        band += (f", nor how many work-groups a unit runs at once (1 to {resident}: "
                 "its largest work-group's work-items)")
    basis = "work-group bound on the device's compute units: " + ", ".join(parts) + band
    bottleneck = None
    if groups is not None and groups < counts[-1]:
        bottleneck = "work_groups"
    elif groups is None:
        bottleneck = "unobserved"
    return TeamPrediction(counts, speedup, low, high, fastest_count(counts, speedup), basis,
                          ["work_groups"] if groups is not None else [], bottleneck)
