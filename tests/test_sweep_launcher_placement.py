"""A launcher's rank sweep says where its ranks ran as a thread sweep does: its JSON has
``placement`` (the launcher's), and no count's entry claims CPUs corecast never chose.
``--placement`` or ``--runtime`` beside ``--launcher`` would be dropped without a word: they are refused."""
from __future__ import annotations

import json

from corecast.cli import main

# Sets the rank's variables: no MPI needed.
LAUNCHER = "env PMI_SIZE={ranks} PMI_RANK=0"


def test_a_rank_sweeps_json_has_the_launchers_placement(tmp_path, capsys):
    out = tmp_path / "rs.json"
    assert main(["sweep", "--launcher", LAUNCHER, "--ranks", "1,2", "--repeat", "1", "--json-out", str(out),
                 "--", "true"]) == 0
    got = json.loads(out.read_text())
    assert got["placement"] == {"policy": "launcher", "omp_places": False, "cpus": {}}
    assert got["measured"] and all("cpus" not in m for m in got["measured"])
    text = capsys.readouterr().out
    assert "placement launcher: the launcher placed the ranks (corecast confined none to CPUs)" in text


def test_placement_beside_a_launcher_is_one_line(capsys):
    assert main(["sweep", "--placement", "spread", "--launcher", LAUNCHER, "--ranks", "1,2", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err == "corecast: error: --placement has no effect with --launcher: the launcher places the ranks\n"


def test_runtime_beside_a_launcher_is_one_line(capsys):
    # --runtime only says how a thread count reaches the program; a launcher's ranks are the
    # count, so it was dropped without a word.
    assert main(["sweep", "--runtime", "pthreads", "--launcher", LAUNCHER, "--ranks", "1,2", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("corecast: error: --runtime has no effect with --launcher") and err.count("\n") == 1
