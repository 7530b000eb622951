"""Machine descriptions: presets, validation, and detection from a sysfs tree."""
from __future__ import annotations

import json

import pytest

from corecast.model.machine.numa import MachineError, detect, from_dict, hop_classes, load, presets, read_topology


def test_presets_load():
    assert {"opteron6380", "two-socket"} <= set(presets())
    m = load("opteron6380")
    assert (m.nodes, m.cores_per_node, m.controller_delay) == (8, 8, 12.0)
    assert m.fill_order == list(range(8))
    two = load("two-socket")
    assert two.bus_delay == [[3.0, 5.5], [5.5, 3.0]]


def test_json_round_trip(tmp_path):
    m = load("opteron6380")
    path = tmp_path / "m.json"
    path.write_text(m.to_json())
    again = load(path)
    assert again.to_dict() == m.to_dict()
    assert json.loads(m.to_json())["bus_delay"][0][7] == 8.0


def test_fill_order_and_matrix_form():
    m = from_dict({"name": "x", "cores_per_node": 4, "nodes": 2, "bus_delay": [[1, 2], [2, 1]],
                   "controller_delay": 5, "fill_order": [1, 0]})
    assert m.fill_order == [1, 0] and m.bus_delay == [[1.0, 2.0], [2.0, 1.0]]


BASE = {"cores_per_node": 4, "nodes": 2, "bus_delay": [[1, 2], [2, 1]], "controller_delay": 5}


@pytest.mark.parametrize("change, message", [
    ({"nodes": 3}, "3 x 3 matrix"),
    ({"cores_per_node": 0}, "positive integer"),
    ({"cores_per_node": 2.5}, "positive integer"),
    ({"controller_delay": 0}, "> 0"),
    ({"controller_delay": "fast"}, "finite number"),
    ({"bus_delay": [[1, -2], [2, 1]]}, "> 0"),
    ({"fill_order": [0, 0]}, "fill_order"),
    ({"fill_order": [0, 1, 2]}, "fill_order"),
    ({"colour": "red"}, "unknown field 'colour'"),
    ({"bus_delay": None}, "matrix"),
])
def test_bad_descriptions(change, message):
    with pytest.raises(MachineError, match=message):
        from_dict({**BASE, **change})


def test_missing_fields():
    for key in ("cores_per_node", "nodes", "controller_delay"):
        with pytest.raises(MachineError, match=f"missing field '{key}'"):
            from_dict({k: v for k, v in BASE.items() if k != key})
    with pytest.raises(MachineError, match="bus_delay"):
        from_dict({k: v for k, v in BASE.items() if k != "bus_delay"})
    with pytest.raises(MachineError, match="hops"):
        from_dict({**{k: v for k, v in BASE.items() if k != "bus_delay"},
                   "hops": [[0, 3], [3, 0]], "bus_delay_by_hops": [1, 2]})


def test_load_errors(tmp_path):
    with pytest.raises(MachineError, match="no such file or preset"):
        load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(MachineError, match="not JSON"):
        load(bad)


def fake_sysfs(root, nodes: dict[int, tuple[str, list[int]]]):
    base = root / "devices/system/node"
    for nid, (cpulist, dist) in nodes.items():
        d = base / f"node{nid}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpulist + "\n")
        (d / "distance").write_text(" ".join(map(str, dist)) + "\n")
    return root


def test_detect_two_sockets(tmp_path):
    root = fake_sysfs(tmp_path, {0: ("0-7,16-23", [10, 21]), 1: ("8-15,24-31", [21, 10])})
    m = detect(root)
    assert (m.nodes, m.cores_per_node) == (2, 16)
    assert m.bus_delay == [[3.0, 5.5], [5.5, 3.0]]  # opteron delays by hop class


def test_detect_hop_classes_and_memory_only_nodes(tmp_path):
    dist = [[10, 16, 16, 22, 30], [16, 10, 22, 16, 30], [16, 22, 10, 16, 30],
            [22, 16, 16, 10, 30], [30, 30, 30, 30, 10]]
    nodes = {i: (f"{4 * i}-{4 * i + 3}", dist[i]) for i in range(4)}
    nodes[4] = ("", dist[4])  # CXL / memory-only node: no CPUs, not a CPU node
    root = fake_sysfs(tmp_path, nodes)
    cpus, matrix = read_topology(root)
    assert len(cpus) == 4 and matrix[0] == [10, 16, 16, 22]
    assert hop_classes(matrix)[0] == [0, 1, 1, 2]
    m = detect(root, {"bus_delay_by_hops": [2.0, 4.0], "controller_delay": 9.0}, name="quad")
    assert m.name == "quad" and m.controller_delay == 9.0
    assert m.bus_delay[0] == [2.0, 4.0, 4.0, 6.0]  # a third hop class continues the last step


def test_detect_takes_the_largest_node_where_cores_are_offline(tmp_path):
    # node 1 has two of its four cores offline: still a node, and the model's nodes are the
    # largest one's size (the smallest would halve every node the prediction fills)
    root = fake_sysfs(tmp_path, {0: ("0-3", [10, 20]), 1: ("4-5", [20, 10])})
    cpus, _ = read_topology(root)
    assert [len(c) for c in cpus] == [4, 2]
    m = detect(root)
    assert (m.nodes, m.cores_per_node) == (2, 4)


def test_detect_without_numa_support(tmp_path):
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/online").write_text("0-3\n")
    m = detect(tmp_path)
    assert (m.nodes, m.cores_per_node) == (1, 4)


def test_detect_this_machine():
    m = detect()
    assert m.nodes >= 1 and m.cores_per_node >= 1
