"""The machine, one concept in four facets: ``hardware`` (the machine a curve prediction is
for: hardware threads, cores, sockets, fill order, SMT yield), ``numa`` (NUMA machine
descriptions and presets for the node-count model), ``sysfs`` (this machine as Linux shows
it: NUMA nodes, cores, allowed CPUs) and ``calibration`` (its measured compute and bandwidth
curves).  Nothing is imported here: ``calibration``, ``numa`` and ``sysfs`` are standard
library only and imported inside profiled programs; ``hardware`` needs numpy."""
