"""``corecast numa`` (speedup per NUMA node count) and ``corecast machine`` (machine
descriptions)."""
from __future__ import annotations

import argparse
import sys

from .common import CliError, add_format_option, add_output_options, count, efficiency, file_name, print_json

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..model.machine.numa import Machine
    from ..model.numa import NumaPrediction, Rates


def add_numa(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "numa",
        help="predict speedup per NUMA node count from a memory-traffic sample",
        description="The two-level queueing model of Cho, Oh and Egger (\"Online Scalability "
        "Characterization of Data-Parallel Programs on Many Cores\", PACT 2016): speedup at 1..K nodes of MACHINE, "
        "relative to the program alone on one node, from a sample of its memory traffic "
        "(rates per work cycle, or raw counts with total_cycles), optionally next to a "
        "co-running program on the last nodes of the fill order. --replay predicts again "
        "every region of a 'corecast run --target-machine' JSON Lines file.",
    )
    p.add_argument("--machine", required=True, metavar="M.json", type=file_name,
                   help="machine description file or preset name (see 'corecast machine presets')")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--sample", metavar="S.json", type=file_name, help='{"llc": [...], "bus": [...], "mct": [...]}')
    src.add_argument("--replay", metavar="FILE.jsonl", type=file_name, help="JSON Lines written by corecast run")
    p.add_argument("--co-run", metavar="S2.json", type=file_name, help="sample of a program running at the same time")
    p.add_argument("--co-nodes", type=count, metavar="K2", help="nodes the co-runner takes")
    p.add_argument("--efficiency", type=efficiency, metavar="F",
                   help="preferred = the fewest nodes within F of the best speedup (default: the best)")
    add_output_options(p)
    p.declare_later(lambda p: add_format_option(p, "recording", "--replay's file"))
    p.set_defaults(func=cmd_numa)


def cmd_numa(args: argparse.Namespace) -> int:
    from ..io.readers import NUMA_SAMPLE, read
    from ..model.machine import numa as machines
    from ..model import numa
    from ..views import nodeview

    if (args.co_run is None) != (args.co_nodes is None):
        raise CliError("--co-run and --co-nodes go together")
    if args.replay is not None and args.co_run:
        raise CliError("--co-run works with --sample, not with --replay")
    try:
        machine = machines.load(args.machine)
        if args.replay is not None:  # '' never comes here: its argument type refuses it
            return _replay(args, machine)
        rates = read([args.sample], NUMA_SAMPLE, machine=machine)  # bad files: InputError, one line
        co = [(read([args.co_run], NUMA_SAMPLE, machine=machine), args.co_nodes)] if args.co_run else []
        pred = _predict(machine, rates, co, args)
    except (machines.MachineError, numa.SampleError) as exc:
        raise CliError(str(exc)) from None
    out = pred.to_dict()
    if co:
        out["co_runner"] = {"nodes": args.co_nodes,
                            "node_ids": machine.fill_order[-args.co_nodes:]}
    if args.json:
        print_json(out)
    else:
        sys.stdout.write(nodeview.sample_report(machine, out, pred.notes, args.efficiency))
    return 0


def _predict(machine: Machine, rates: Rates, co: list[tuple[Rates, int]], args: argparse.Namespace) -> NumaPrediction:
    """``predict_nodes``, a sample the model cannot take named by its file: the sample's
    alone, the co-runner's alone, or the two together."""
    from ..io.fileio import shown
    from ..model import numa

    try:
        return numa.predict_nodes(machine, rates, co, args.efficiency)
    except numa.SampleError as exc:
        if not co:
            raise numa.SampleError(f"{shown(args.sample)}: {exc}") from None
        for path, alone in ((args.sample, rates), (args.co_run, co[0][0])):
            try:
                numa.predict_nodes(machine, alone)
            except numa.SampleError:
                raise numa.SampleError(f"{shown(path)}: {exc}") from None
        raise numa.SampleError(f"{shown(args.sample)} with the co-runner {shown(args.co_run)}: {exc}") from None


def _replay(args: argparse.Namespace, machine: Machine) -> int:
    from ..views import nodeview
    from ..tools.replay import replay_nodes

    regions = replay_nodes(args.replay, machine, args.efficiency, args.format)  # bad files: InputError, one line
    if not regions:
        raise CliError("no region with NUMA inputs (record with 'corecast run --target-machine')",
                       args.replay)
    if args.json:
        print_json({"machine": machine.name, "regions": regions})
    else:
        sys.stdout.write(nodeview.replay_report(machine, regions, args.efficiency))
    return 0


def add_machine(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "machine",
        help="machine descriptions for 'corecast numa': detect this one (detect), list the presets (presets), "
        "show one (show)",
        description="'detect' writes this machine's description from sysfs (nodes, CPUs, the "
        "SLIT distance table mapped to hop classes) with delays per hop class from a preset or "
        "a calibration file; 'presets' lists the shipped descriptions; 'show' prints one.",
    )
    msub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    d = msub.add_parser("detect", help="describe this machine")
    d.add_argument("-o", "--output", metavar="M.json", type=file_name, help="write here instead of stdout")
    d.add_argument("--delays", metavar="PRESET|FILE", default="opteron6380",
                   help="delays per hop class from this preset or file: a machine description or "
                   '{"bus_delay_by_hops": [...], "controller_delay": D_m} (default opteron6380)')
    d.add_argument("--name", metavar="NAME", help="name to put in the description")
    d.add_argument("--sysfs", default="/sys", help=argparse.SUPPRESS)
    msub.add_parser("presets", help="list the shipped machine descriptions")
    s = msub.add_parser("show", help="print a preset or file as normalised JSON")
    s.add_argument("machine", metavar="PRESET|FILE")
    p.set_defaults(func=cmd_machine)


def cmd_machine(args: argparse.Namespace) -> int:
    from ..model.machine import numa as machines
    from ..errors import counted
    from ..io.fileio import write_file

    try:
        if args.action == "presets":
            for name in machines.presets():
                m = machines.load(name)
                print(f"{name:14s} {m.nodes} nodes x {m.cores_per_node} cores  {m.name}")
            return 0
        if args.action == "show":
            sys.stdout.write(machines.load(args.machine).to_json())
            return 0
        machine = machines.detect(args.sysfs, machines.load_delays(args.delays), args.name)
    except machines.MachineError as exc:
        raise CliError(str(exc)) from None
    text = machine.to_json()
    if args.output:
        write_file(args.output, text)  # errors: one line naming the file
        print(f"wrote {args.output}: {counted(machine.nodes, 'node')} x {counted(machine.cores_per_node, 'core')}",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


COMMANDS = [add_numa, add_machine]
