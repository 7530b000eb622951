"""Score-P's CUBE profiles (``readers.cube``): Extra-P's own test profiles
(tests/data/cube/README.md) and small ones written here, each a tar of ``anchor.xml`` and
the ``time`` metric's index and data, as CubeLib writes them."""
from __future__ import annotations

import builtins
import io
import os
import json
import shutil
import struct
import tarfile
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main
from corecast.io.readers import read_inputs

pytest.importorskip("pycubexr")

CUBE = Path(__file__).parent / "data" / "cube"
THREADED = CUBE / "simple_threaded"          # example.f1..f5: f is the count, 2 processes x 2 threads each
SINGLE = CUBE / "single_parameter"           # mm.x{1,10,25,50,100}y1z1.r1: x is the count, 1 thread


def _member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_cube(path: Path, threads: list[int], times: list[float], solve: float = 0.5,
               metric: str = "time", kinds: dict[int, str] | None = None) -> Path:
    """A profile of processes with ``threads[i]`` threads each; ``times``: main's
    inclusive time per thread, in order; ``solve``: main->solve's, every thread.
    ``kinds``: another location type than thread (``{location: type}``)."""
    locations, n, kinds = [], 0, kinds or {}
    for rank, count in enumerate(threads):
        locs = "".join(f'<location Id="{n + t}"><name>Thread {t}</name><rank>{t}</rank>'
                       f'<type>{kinds.get(n + t, "thread")}</type></location>' for t in range(count))
        locations.append(f'<locationgroup Id="{rank}"><name>Process {rank}</name><rank>{rank}</rank>'
                         f"<type>process</type>{locs}</locationgroup>")
        n += count
    assert len(times) == n
    anchor = f"""<?xml version="1.0" encoding="UTF-8"?>
<cube version="4.4"><metrics>
<metric id="0" type="INCLUSIVE"><disp_name>T</disp_name><uniq_name>{metric}</uniq_name><dtype>DOUBLE</dtype>
<uom>sec</uom><url></url><descr></descr></metric></metrics>
<program>
<region id="0" mod="m.c" begin="1" end="9"><name>main</name><mangled_name>main</mangled_name><paradigm>user</paradigm><role>function</role><url></url><descr></descr></region>
<region id="1" mod="m.c" begin="2" end="8"><name>solve</name><mangled_name>solve</mangled_name><paradigm>user</paradigm><role>function</role><url></url><descr></descr></region>
<cnode id="0" line="1" mod="m.c" calleeId="0"><cnode id="1" line="2" mod="m.c" calleeId="1"></cnode></cnode>
</program>
<system><systemtreenode Id="0"><name>machine</name><class>machine</class>
<systemtreenode Id="1"><name>node</name><class>node</class>{"".join(locations)}</systemtreenode></systemtreenode>
<topologies></topologies></system></cube>
""".encode()
    index = b"CUBEX.INDEX" + struct.pack("<ihbi", 1, 0, 0, 2) + struct.pack("<2i", 0, 1)
    data = b"CUBEX.DATA" + struct.pack(f"<{2 * n}d", *times, *[solve] * n)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        _member(tar, "anchor.xml", anchor)
        _member(tar, "0.index", index)
        _member(tar, "0.data", data)
    return path


def _one(paths, **options):
    (s,) = read_inputs([str(p) for p in paths], **options)
    return s


# ---------------------------------------------------------------- Extra-P's profiles


def test_count_from_the_folders_names_extrap_convention():
    s = _one(sorted(SINGLE.glob("*/profile.cubex")))
    assert (s.callpath, s.metric_name, s.source, s.count_unit) == ("main", "time", "cube", "x")
    assert s.data.counts.tolist() == [1, 10, 25, 50, 100]
    # main's inclusive time at the root (the profile's one thread), x1 and x100
    assert s.data.values[0] == pytest.approx(3.8177e-05) and s.data.values[-1] == pytest.approx(1.8759e-05)


def test_folders_and_the_sets_folder_read_as_the_files():
    by_files = _one(sorted(THREADED.glob("*/*.cubex")))
    assert by_files.data.counts.tolist() == [1, 2, 3, 4, 5]
    # the largest over the 4 threads of 2 processes: thread 0 of process 0
    assert by_files.data.values.tolist() == pytest.approx([14, 28, 42, 56, 70])
    for given in ([THREADED], sorted(THREADED.iterdir())):
        s = _one(given)
        assert s.data.counts.tolist() == by_files.data.counts.tolist()
        assert s.data.values.tolist() == by_files.data.values.tolist()


def test_repetitions_rN_and_two_profiles_in_one_folder(tmp_path):
    for x in (1, 10):
        for rep in (1, 2):
            shutil.copytree(SINGLE / f"mm.x{x}y1z1.r1", tmp_path / f"mm.x{x}y1z1.r{rep}")
    shutil.copy(SINGLE / "mm.x10y1z1.r1/profile.cubex", tmp_path / "mm.x10y1z1.r2/profile2.cubex")
    s = _one([tmp_path])
    assert s.data.counts.tolist() == [1, 10]
    assert s.data.repetitions.tolist() == [2, 3]


def test_count_from_the_system_tree(tmp_path):
    runs = [write_cube(tmp_path / f"scorep-2024010{i}_1200_{i}/profile.cubex", [t, t], [10.0 / t] * (2 * t))
            for i, t in enumerate((1, 2, 4), start=1)]
    assert _one(runs).data.counts.tolist() == [2, 4, 8]        # no count in the names: locations
    threads = _one(runs, count_attribute="threads")
    assert (threads.data.counts.tolist(), threads.count_unit) == ([1, 2, 4], "threads")
    assert threads.data.values.tolist() == pytest.approx([10, 5, 2.5])
    err = pytest.raises(Exception, _one, runs, count_attribute="processes").value
    assert "every profile has processes = 2" in str(err)


def test_uneven_processes_and_the_slowest_thread(tmp_path):
    a = write_cube(tmp_path / "a/profile.cubex", [1, 3], [4.0, 9.0, 2.0, 3.0])
    b = write_cube(tmp_path / "b/profile.cubex", [2, 4, 2], [1.0] * 7 + [6.0])
    for key, counts in (("threads", [3, 4]), ("processes", [2, 3]), ("locations", [4, 8])):
        assert _one([a, b], count_attribute=key).data.counts.tolist() == counts
    assert _one([a, b]).data.values.tolist() == [9.0, 6.0]


def test_the_count_s_unit_is_what_was_counted(tmp_path):
    # processes are ranks' worth of processes, locations are threads (every CPU thread)
    runs = [write_cube(tmp_path / f"r{p}/profile.cubex", [1] * p, [1.0 / p] * p) for p in (1, 2, 4)]
    assert _one(runs, count_attribute="processes").count_unit == "processes"
    assert _one(runs, count_attribute="locations").count_unit == "threads"


def test_only_cpu_threads_are_locations(tmp_path):
    # A GPU's stream is a location too (Score-P's CUDA or OpenCL recording): it is neither
    # counted nor the slowest thread, though its time is the largest.
    runs = [write_cube(tmp_path / f"r{t}/profile.cubex", [t + 1], [4.0 / t] * t + [99.0],
                       kinds={t: "accelerator stream"}) for t in (1, 2, 4)]
    s = _one(runs)
    assert s.data.counts.tolist() == [1, 2, 4] and s.data.values.tolist() == [4.0, 2.0, 1.0]


def test_a_hidden_profile_in_a_folder_is_not_read(tmp_path):
    # as Extra-P: a name starting with a dot is no run (an editor's or a copy's leftover)
    runs = [write_cube(tmp_path / f"app.p{p}/profile.cubex", [p], [8.0 / p] * p) for p in (1, 2)]
    (tmp_path / "app.p1" / ".profile.cubex").write_bytes(b"not a profile")
    s = _one([tmp_path])
    assert s.data.counts.tolist() == [1, 2] and s.data.repetitions.tolist() == [1, 1]
    assert _one([runs[0].parent, runs[1].parent]).data.values.tolist() == [8.0, 4.0]


def test_one_profile_named_twice_is_read_once(tmp_path):
    # its folder and the file by another spelling: one run, not two repetitions
    runs = [write_cube(tmp_path / f"app.p{p}/profile.cubex", [p], [8.0 / p] * p) for p in (1, 2)]
    again = tmp_path / "app.p2" / ".." / "app.p1" / "profile.cubex"
    s = _one([runs[0].parent, again, runs[1]])
    assert s.data.repetitions.tolist() == [1, 1]


def test_name_wins_over_the_system_tree_unless_asked(tmp_path):
    runs = [write_cube(tmp_path / f"app.p{p}.r1/profile.cubex", [p], [8.0 / p] * p) for p in (1, 2, 4)]
    runs.append(write_cube(tmp_path / "app.p8.r1/profile.cubex", [2], [1.0, 1.0]))  # named 8, ran 2
    assert _one(runs).data.counts.tolist() == [1, 2, 4, 8]
    assert _one(runs, count_attribute="threads").data.repetitions.tolist() == [1, 2, 1]
    assert _one(runs).count_unit == "p"


def test_callpath_and_profile_metric(tmp_path):
    runs = [write_cube(tmp_path / f"app.t{t}/profile.cubex", [t], [9.0] * t, solve=8.0 / t) for t in (1, 2)]
    s = _one(runs, callpath="main->solve")
    assert (s.callpath, s.data.values.tolist()) == ("main->solve", [8.0, 4.0])
    err = pytest.raises(Exception, _one, runs, callpath="solve").value
    assert "no callpath 'solve'" in str(err) and "'main->solve'" in str(err)
    err = pytest.raises(Exception, _one, runs, profile_metric="visits").value
    assert "no metric 'visits'" in str(err)


# ---------------------------------------------------------------- bad input: one line


def test_mixed_named_and_unnamed_folders(tmp_path, capsys):
    a = write_cube(tmp_path / "app.p2.r1/profile.cubex", [2], [1.0, 1.0])
    b = write_cube(tmp_path / "scorep-20240101_1200_1/profile.cubex", [4], [1.0] * 4)
    err = assert_one_line_error(capsys, ["predict", str(a), str(b)])
    assert "carries no count" in err and "--count-attribute locations" in err
    assert _one([a, b], count_attribute="locations").data.counts.tolist() == [2, 4]


def test_count_by_name_where_the_names_carry_none(tmp_path, capsys):
    runs = [write_cube(tmp_path / f"scorep-2024010{i}_1200_{i}/profile.cubex", [t], [1.0] * t)
            for i, t in enumerate((1, 2), start=1)]
    err = assert_one_line_error(capsys, ["predict", *map(str, runs), "--count-attribute", "name"])
    assert "its folder's name carries no count" in err and "--count-attribute threads" in err


def test_two_parameters_vary_in_the_names(tmp_path, capsys):
    runs = [write_cube(tmp_path / f"mm.x{x}y{y}.r1/profile.cubex", [1], [1.0]) for x, y in ((1, 1), (2, 4))]
    err = assert_one_line_error(capsys, ["predict", *map(str, runs)])
    assert "vary in 2 parameters (x, y)" in err


def test_profile_without_a_time_metric(tmp_path, capsys):
    runs = [write_cube(tmp_path / f"app.p{p}/profile.cubex", [p], [1.0] * p, metric="visits") for p in (1, 2)]
    err = assert_one_line_error(capsys, ["predict", *map(str, runs)])
    assert "no metric 'time'" in err and "visits" in err and "--profile-metric" in err
    assert main(["predict", *map(str, runs), "--profile-metric", "visits", "--json"]) == 0


@pytest.mark.parametrize("cut", [0, 100, 600, 5000, -1])
def test_corrupt_or_truncated_profile(tmp_path, capsys, cut):
    good = THREADED / "example.f1/cube-example1.cubex"  # 0.data at byte 512, anchor.xml at 4608
    bad = tmp_path / "example.f2/cube-example2.cubex"
    bad.parent.mkdir()
    data = good.read_bytes()
    if cut == -1:  # whole, but the time metric's data header garbled
        data = data.replace(b"CUBEX.DATA", b"XXXXX.DATA", 1)
    bad.write_bytes(data[:cut] if cut > 0 else data if cut else b"not a tar archive\n" * 50)
    err = assert_one_line_error(capsys, ["predict", str(good), str(bad)])
    assert "cube-example2.cubex" in err


def test_folder_without_a_cubex(tmp_path, capsys):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("x")
    err = assert_one_line_error(capsys, ["predict", str(tmp_path / "empty")])
    assert "is a directory, and no .cubex file is in it or its subfolders" in err
    # a folder of another tool's files is told to give the files, not only Score-P's folder
    # (review38: a folder of .cali files read "give a Score-P experiment folder")
    assert "give the files themselves" in err


def test_one_count_and_a_bad_count_attribute(capsys):
    files = [str(p) for p in sorted(THREADED.glob("*/*.cubex"))]
    err = assert_one_line_error(capsys, ["predict", *files, "--count-attribute", "locations"])
    assert "every profile has locations = 4" in err
    err = assert_one_line_error(capsys, ["predict", *files, "--count-attribute", "omp.num.threads"])
    assert "name, threads, processes, locations" in err


def test_without_pycubexr_one_line_names_the_extra(monkeypatch, capsys):
    real_import = builtins.__import__

    def no_pycubexr(name, *args, **kwargs):
        if name == "pycubexr" or name.startswith("pycubexr."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pycubexr)
    err = assert_one_line_error(capsys, ["predict", str(CUBE.parent / "curves")])  # a folder of CSVs
    assert "is a directory" in err and "pycubexr" not in err
    for given in ([str(THREADED)], [str(p) for p in sorted(THREADED.glob("*/*.cubex"))]):
        err = assert_one_line_error(capsys, ["predict", *given])
        assert "pip install 'corecast[cube]'" in err


# ---------------------------------------------------------------- end to end


def test_predict_end_to_end_on_the_committed_profiles(capsys):
    files = [str(p) for p in sorted(SINGLE.glob("*/profile.cubex"))]
    assert main(["predict", *files, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (s,) = out["series"]
    assert (out["source"], s["callpath"], s["metric_name"]) == ("cube", "main", "time")
    assert s["count_unit"] == "x" and [p["threads"] for p in s["predictions"]][-1] == 200
    assert main(["predict", str(THREADED), "--format", "cube"]) == 0
    assert "== main [time]" in capsys.readouterr().out


# ---------------------------------------------------------------- hostile archives
#
# pycubexr opens any tar (compressed too), follows its links and reads its members whole:
# a small file could ask for gigabytes.  Each of these ends in one line, within the input
# limit (CORECAST_MAX_INPUT_MB, as every other reader's input).


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
    return path


def _members(path: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(path) as tar:
        return [(m, tar.extractfile(m).read()) for m in tar.getmembers()]


def _info(name: str, data: bytes = b"", **kw) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    return info, data


def _error(capsys, bad: Path, *more: str) -> str:
    good = write_cube(bad.parent.parent / "app.p2" / "profile.cubex", [2], [1.0, 0.5])
    return assert_one_line_error(capsys, ["predict", str(bad), str(good), *more])


def test_a_profile_over_the_input_limit(tmp_path, capsys, monkeypatch):
    good = write_cube(tmp_path / "app.p1" / "profile.cubex", [1], [1.0])
    monkeypatch.setenv("CORECAST_MAX_INPUT_MB", "0.005")  # 5,243 bytes; the profile is 4,096 or more
    err = _error(capsys, good)
    assert "app.p1/profile.cubex: larger than the input limit of 0.005 MiB (set CORECAST_MAX_INPUT_MB" in err


@pytest.mark.parametrize("kind, said", [("empty", "empty"), ("gzip", "gzip-compressed"), ("zip", "a zip archive"),
                                        ("bzip2", "bzip2-compressed"), ("xz", "xz-compressed")])
def test_empty_compressed_or_zip_is_no_profile(tmp_path, capsys, kind, said):
    import bz2
    import gzip
    import lzma
    import zipfile
    raw = write_cube(tmp_path / "src.p9" / "profile.cubex", [1], [1.0]).read_bytes()
    bad = tmp_path / "app.p1" / "profile.cubex"
    bad.parent.mkdir()
    if kind == "zip":
        with zipfile.ZipFile(bad, "w") as z:
            for info, data in _members(tmp_path / "src.p9" / "profile.cubex"):
                z.writestr(info.name, data)
    else:
        bad.write_bytes({"empty": b"", "gzip": gzip.compress(raw), "bzip2": bz2.compress(raw),
                         "xz": lzma.compress(raw)}[kind])
    err = _error(capsys, bad)
    assert f"app.p1/profile.cubex: {said}" in err and "not a CUBE profile" in err


def test_a_sparse_member_claiming_gigabytes(tmp_path, capsys):
    bad = tmp_path / "app.p1" / "profile.cubex"
    bad.parent.mkdir()
    shutil.copy(CUBE / "hostile" / "sparse.p1.cubex", bad)
    err = _error(capsys, bad)
    assert "member '0.data' is a sparse file of 8 GiB" in err


def test_a_member_claiming_more_than_the_file_holds(tmp_path, capsys):
    bad = tmp_path / "app.p1" / "profile.cubex"
    bad.parent.mkdir()
    info, _ = _info("anchor.xml")
    info.size = 1 << 40
    bad.write_bytes(info.tobuf(format=tarfile.GNU_FORMAT) + b"<?xml" + b" " * 4000)
    err = _error(capsys, bad)
    assert "member 'anchor.xml' claims 1 TiB, more than the file holds (truncated?)" in err
    # less than the file, but past its end from where the member starts
    info.size = 1200
    bad.write_bytes(info.tobuf(format=tarfile.GNU_FORMAT) + b"<?xml" + b" " * 995)
    err = _error(capsys, bad)
    assert "member 'anchor.xml' claims 1.17188 KiB, more than the file holds (truncated?)" in err


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "loop"])
def test_links_in_the_archive(tmp_path, capsys, kind):
    members = _members(write_cube(tmp_path / "src.p9" / "profile.cubex", [1], [1.0]))
    link = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "loop": tarfile.SYMTYPE}[kind]
    head = [_info("anchor.xml", type=link, linkname="/etc/passwd" if kind != "loop" else "b")]
    if kind == "loop":
        head.insert(0, _info("b", type=tarfile.SYMTYPE, linkname="anchor.xml"))
    bad = _tar(tmp_path / "app.p1" / "profile.cubex", head + members[1:])
    err = _error(capsys, bad)
    assert "is a link" in err and "a CUBE profile's members are plain files" in err


@pytest.mark.parametrize("kind", [tarfile.DIRTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE])
@pytest.mark.parametrize("name", ["anchor.xml", "0.index", "0.data"])
def test_a_member_that_is_no_file_is_one_line(tmp_path, capsys, name, kind):
    # A folder (or FIFO, device) where the anchor or a metric's data should be: the
    # archive check opened it as a file, and predict said "internal error: TypeError".
    members = [(m, d) if m.name != name else _info(name, type=kind)
               for m, d in _members(write_cube(tmp_path / "src.p9" / "profile.cubex", [1], [1.0]))]
    bad = _tar(tmp_path / "app.p1" / "profile.cubex", members)
    err = _error(capsys, bad)
    assert "app.p1" in err and "internal error" not in err
    assert f"its member '{name}' is a" in err and "members are plain files" in err
    assert "Error" not in err  # no Python exception's name (it said "TypeError: 'NoneType' ...")


def test_names_outside_the_archive_are_refused_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    members = _members(write_cube(tmp_path / "src.p9" / "profile.cubex", [1], [1.0]))
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    for name in ("../../escaped", "/tmp/escaped-corecast-test"):
        bad = _tar(tmp_path / "app.p1" / "profile.cubex", members + [_info(name, b"x")])
        err = _error(capsys, bad)
        assert f"member '{name}' names a path outside the archive" in err
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/escaped-corecast-test").exists()


def test_compressed_members_that_inflate_past_the_limit(tmp_path, capsys, monkeypatch):
    import gzip
    import zlib
    members = _members(write_cube(tmp_path / "src.p9" / "profile.cubex", [1], [1.0]))
    monkeypatch.setenv("CORECAST_MAX_INPUT_MB", "0.1")  # 104,858 bytes: both bombs are a few hundred
    anchor = gzip.compress(b"<?xml version='1.0'?><a>" + b"x" * (1 << 20) + b"</a>")
    bad = _tar(tmp_path / "app.p1" / "profile.cubex", [_info("anchor.xml", anchor)] + members[1:])
    err = _error(capsys, bad)
    assert "member 'anchor.xml' inflates past the input limit of 0.1 MiB" in err
    z = zlib.compress(b"\0" * (1 << 20))
    data = b"ZCUBEX.DATA" + struct.pack("<q3q", 1, 0, 0, len(z)) + z
    bad = _tar(tmp_path / "app.p1" / "profile.cubex", members[:2] + [_info("0.data", data)])
    err = _error(capsys, bad)
    assert "member '0.data' inflates past the input limit of 0.1 MiB" in err
    # a big-endian profile's rows, read in the byte order its index names
    index = b"CUBEX.INDEX" + struct.pack(">ihbi", 1, 0, 0, 2) + struct.pack(">2i", 0, 1)
    data = b"ZCUBEX.DATA" + struct.pack(">q3q", 1, 0, 0, len(z)) + z
    bad = _tar(tmp_path / "app.p1" / "profile.cubex", members[:1] + [_info("0.index", index), _info("0.data", data)])
    err = _error(capsys, bad)
    assert "member '0.data' inflates past the input limit of 0.1 MiB" in err
    data = b"ZCUBEX.DATA" + struct.pack("<q3q", 1, 0, 0, 1 << 50) + z  # a row claiming a PiB
    bad = _tar(tmp_path / "app.p1" / "profile.cubex", members[:2] + [_info("0.data", data)])
    err = _error(capsys, bad)
    assert "member '0.data' has a compressed row of 1024 TiB" in err and "garbled" in err


def test_a_compressed_data_member_that_reads_right(tmp_path):
    """ZCUBEX data (CubeLib's compressed rows) within the limit: the check leaves it to pycubexr."""
    import zlib
    members = _members(write_cube(tmp_path / "src.p9" / "profile.cubex", [1], [1.0]))
    rows = [struct.pack("<d", 2.0), struct.pack("<d", 0.5)]
    zs = [zlib.compress(r) for r in rows]
    heads = b"".join(struct.pack("<3q", 8 * i, 0, len(z)) for i, z in enumerate(zs))
    data = b"ZCUBEX.DATA" + struct.pack("<q", len(zs)) + heads + b"".join(zs)
    a = _tar(tmp_path / "app.p1" / "profile.cubex", members[:2] + [_info("0.data", data)])
    b = write_cube(tmp_path / "app.p2" / "profile.cubex", [2], [1.0, 1.0])
    assert _one([a, b]).data.values.tolist() == [2.0, 1.0]


def test_the_archive_check_refuses_what_is_no_regular_file():
    # a device or FIFO swapped in after the folder was listed: the check says so, rather
    # than reading it as an empty archive and handing it to pycubexr
    from corecast.errors import InputError
    from corecast.io.readers.cubearchive import check_archive

    with pytest.raises(InputError, match="x.cubex: not a regular file"):
        check_archive("/dev/zero", "x.cubex")


def test_a_symlink_loop_names_itself(tmp_path, capsys):
    loop = tmp_path / "x.cubex"
    loop.symlink_to("x.cubex")
    err = assert_one_line_error(capsys, ["predict", str(loop)])
    assert "x.cubex: cannot read: Too many levels of symbolic links" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_profile(tmp_path, capsys):
    bad = write_cube(tmp_path / "app.p1" / "profile.cubex", [1], [1.0])
    bad.chmod(0)
    err = _error(capsys, bad)
    assert "app.p1/profile.cubex: permission denied" in err


def test_cubewriter_4_8_s_bad_checksums_print_no_python_warning(tmp_path):
    # CubeWriter 4.8 wrote tar headers with wrong checksums, which pycubexr reads past with
    # warnings.warn: predict printed its source path and line on stderr (custom_tarinfo.py:85).
    import warnings

    for n in (1, 2, 3):
        src = THREADED / f"example.f{n}" / f"cube-example{n}.cubex"
        data = bytearray(src.read_bytes())
        data[148:156] = b"0000000\0"  # the first member's header checksum, wrong
        (tmp_path / f"example.f{n}").mkdir()
        (tmp_path / f"example.f{n}" / "profile.cubex").write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = _one([tmp_path])
    assert [str(w.message) for w in seen] == []
    assert list(s.data.counts) == [1, 2, 3]
