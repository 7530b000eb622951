"""Hostile files, descriptors and inputs (issue 20): symlinks, FIFOs, standard input and
output, /dev/zero, oversize and non-UTF-8 files, closed pipes, control characters in
names.  Every FIFO is served by a thread that is unblocked at the end, and every
subprocess has a timeout, so that a regression fails instead of hanging."""
from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.io import fileio, settings
from corecast.cli import main
from corecast.model.curve.entities import InputError
from corecast.io.fileio import OutputError, append_lines, printable, read_bytes, read_text, write_file

CSV = "threads,time\n1,10\n2,5.4\n4,3.1\n8,2.2\n"
TIMEOUT = 120  # seconds; only reached when something hangs
CORECAST = [sys.executable, "-m", "corecast"]


def run_cli(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(CORECAST + args, capture_output=True, timeout=TIMEOUT, **kwargs)


@pytest.fixture
def csv_file(tmp_path) -> Path:
    path = tmp_path / "m.csv"
    path.write_text(CSV)
    return path


# ---------------------------------------------------------------- FIFO helpers


@contextlib.contextmanager
def fifo_feeding(path: Path, data: bytes):
    """A FIFO at ``path`` that a thread fills with ``data`` once a reader opens it."""
    os.mkfifo(path)
    thread = threading.Thread(target=lambda: path.write_bytes(data), daemon=True)
    thread.start()
    try:
        yield path
    finally:
        if thread.is_alive():  # nobody opened it: let the writer's open return
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        thread.join(10)
        assert not thread.is_alive()


@contextlib.contextmanager
def fifo_draining(path: Path):
    """A FIFO at ``path`` read by a thread; yields the list the bytes arrive in."""
    os.mkfifo(path)
    got: list[bytes] = []
    thread = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    thread.start()
    try:
        yield got
    finally:
        if not got and thread.is_alive():  # nobody wrote: give the reader its end of file
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
        assert not thread.is_alive()


# ---------------------------------------------------------------- writing


def test_symlink_output_keeps_the_link_and_replaces_its_target(tmp_path, capsys):
    target = tmp_path / "real.json"
    target.write_text("old contents\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(["machine", "detect", "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["nodes"] >= 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]  # no temp files


def test_dangling_symlink_output_creates_the_target(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to("made.txt")
    write_file(link, "x\n")
    assert link.is_symlink() and (tmp_path / "made.txt").read_text() == "x\n"


def test_fifo_output_is_written_in_place(tmp_path, capsys):
    fifo = tmp_path / "out.fifo"
    with fifo_draining(fifo) as got:
        assert main(["machine", "detect", "-o", str(fifo)]) == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a file in its place
    assert json.loads(got[0])["nodes"] >= 1
    assert os.listdir(tmp_path) == ["out.fifo"]


def test_plot_onto_a_fifo_is_written_in_place(tmp_path, csv_file, capsys):
    fifo = tmp_path / "plot.fifo"
    with fifo_draining(fifo) as got:
        assert main(["predict", str(csv_file), "--plot", str(fifo)]) == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got[0].startswith(b"\x89PNG")


def test_dash_output_is_standard_output(capsys):
    assert main(["machine", "detect", "-o", "-"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["nodes"] >= 1


@pytest.mark.parametrize("via_link", [False, True])
def test_dev_stdout_is_written_through_the_descriptor(tmp_path, via_link):
    out = tmp_path / "redirected.json"
    name = "/dev/stdout"
    if via_link:
        (tmp_path / "link").symlink_to(name)
        name = str(tmp_path / "link")
    with open(out, "wb") as f:
        inode = os.fstat(f.fileno()).st_ino
        r = subprocess.run(CORECAST + ["machine", "detect", "-o", name], stdout=f,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_ino == inode  # the shell's file, not a replacement
    assert json.loads(out.read_text())["nodes"] >= 1


def test_regular_file_is_replaced_keeping_its_permissions(tmp_path):
    path = tmp_path / "private.txt"
    path.write_text("old")
    path.chmod(0o600)
    write_file(path, b"new")
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "keep.txt"
    path.write_text("old")

    def broken(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OutputError, match=r"keep\.txt: cannot write: No space left on device"):
        write_file(path, b"new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_a_folder_is_not_replaced(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="a folder"):
        write_file(tmp_path / "d", b"x")
    assert (tmp_path / "d").is_dir()


def test_append_lines_follows_symlinks_and_refuses_a_fifo_without_reader(tmp_path):
    target = tmp_path / "t.jsonl"
    target.write_text('{"a":1}\n')
    link = tmp_path / "l.jsonl"
    link.symlink_to(target)
    append_lines(link, ['{"b":2}\n'])
    assert link.is_symlink() and target.read_text() == '{"a":1}\n{"b":2}\n'
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="no reader"):  # at a program's exit: no wait
        append_lines(fifo, ["x\n"])


def test_append_lines_gives_up_on_a_reader_that_stops_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(fileio, "APPEND_PATIENCE_S", 0.2)
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # there, but never reads
    try:
        with pytest.raises(OutputError, match="stopped reading"):  # not a hang at exit
            append_lines(fifo, ["x" * 4095 + "\n"] * 64)  # more than a pipe holds
    finally:
        os.close(reader)


APPEND_AT_LIMIT_PY = r"""
import signal, sys
from corecast.io.fileio import OutputError, append_lines
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # a program that takes the default action back
try:
    append_lines(sys.argv[1], ['{"a":1}\n', '{"b":"' + "x" * 100 + '"}\n'])
except OutputError as exc:
    print(exc)
"""


def test_append_lines_stops_whole_at_the_file_size_limit(tmp_path):
    """`ulimit -f` (here 64 bytes) where the first line fits and the second does not: no
    part of it is written, no SIGXFSZ ends the process, the error says why."""
    import resource

    out = tmp_path / "j.jsonl"
    out.write_text('{"program":0}\n')
    proc = subprocess.run([sys.executable, "-c", APPEND_AT_LIMIT_PY, str(out)], capture_output=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64)))
    assert proc.returncode == 0 and b"File too large" in proc.stdout, proc
    assert out.read_text() == '{"program":0}\n{"a":1}\n'


@pytest.mark.skipif(os.geteuid() != 0, reason="making someone else's symlink needs root")
def test_append_lines_refuses_someone_elses_symlink_in_a_sticky_directory(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = shared / "out.jsonl"
    link.symlink_to(victim)
    os.lchown(link, 65534, 65534)
    with pytest.raises(OutputError, match="not followed"):
        append_lines(link, ["x\n"])
    assert victim.read_text() == "precious\n"


def test_json_written_is_ascii_whatever_the_names(tmp_path):
    from corecast import sweep

    name = os.fsdecode(b"prog-\xff\xfe")  # undecodable bytes of a file name
    out = tmp_path / "s.json"
    sweep.write_json({"command": [name, "caf\u00e9"], "measured": []}, str(out))
    raw = out.read_bytes()
    assert raw.isascii()
    assert json.loads(raw.decode("utf-8"))["command"][1] == "caf\u00e9"


# ---------------------------------------------------------------- reading


def test_fifo_input_is_read_once(tmp_path, capsys):
    with fifo_feeding(tmp_path / "in.fifo", CSV.encode()) as fifo:
        assert main(["predict", str(fifo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["predictions"]


def test_fifo_delay_file_is_read_once(tmp_path, capsys):
    calib = json.dumps({"bus_delay_by_hops": [2.0, 3.0], "controller_delay": 7.0}).encode()
    with fifo_feeding(tmp_path / "d.fifo", calib) as fifo:
        assert main(["machine", "detect", "--delays", str(fifo)]) == 0
    assert json.loads(capsys.readouterr().out)["controller_delay"] == 7.0


def test_dash_reads_standard_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CSV.encode())))
    assert main(["predict", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["predictions"]


def test_dash_reads_standard_input_from_a_pipe():
    r = run_cli(["predict", "-"], input=CSV.encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"threads")


def test_dev_zero_is_one_line_error(capsys):
    err = assert_one_line_error(capsys, ["predict", "/dev/zero"])
    assert "/dev/zero: larger than the input limit of 64 MiB" in err
    assert settings.MAX_INPUT_MB in err


def test_limit_is_set_by_the_environment(tmp_path, monkeypatch, capsys):
    big = tmp_path / "big.csv"
    big.write_text("threads,time\n" + "1,1\n2,0.6\n" * 4_000)  # 40 KiB
    assert main(["predict", str(big)]) == 0
    capsys.readouterr()
    monkeypatch.setenv(settings.MAX_INPUT_MB, "0.01")
    err = assert_one_line_error(capsys, ["predict", str(big)])
    assert f"{big}: larger than the input limit of 0.01 MiB" in err
    monkeypatch.setenv(settings.MAX_INPUT_MB, "lots")
    assert "CORECAST_MAX_INPUT_MB='lots': not a positive number" in assert_one_line_error(
        capsys, ["predict", str(big)])
    # A limit far above memory reads the file as any other (read(limit) once overflowed).
    monkeypatch.setenv(settings.MAX_INPUT_MB, "99999999999999999999")
    assert main(["predict", str(big)]) == 0


def test_the_limit_is_said_as_it_was_set(tmp_path, monkeypatch, capsys):
    # 1e-9 MiB is one byte: the message once gave it back as "9.537e-07 MiB".
    small = tmp_path / "small.csv"
    small.write_text("threads,time\n1,1\n2,0.6\n")
    monkeypatch.setenv(settings.MAX_INPUT_MB, "1e-9")
    err = assert_one_line_error(capsys, ["predict", str(small)])
    assert f"{small}: larger than the input limit of 1e-9 MiB, 1 byte (set {settings.MAX_INPUT_MB}" in err
    assert "e-07" not in err
    monkeypatch.setenv(settings.MAX_INPUT_MB, " 0.00002 ")  # 21 bytes, as given less the blanks
    assert "input limit of 0.00002 MiB, 21 bytes (set" in assert_one_line_error(capsys, ["predict", str(small)])


def test_limit_holds_for_streams_without_a_size(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.MAX_INPUT_MB, "0.001")  # 1048 bytes
    with fifo_feeding(tmp_path / "f", b"x" * 5000) as fifo:
        with pytest.raises(InputError, match="larger than the input limit"):
            read_bytes(fifo)
    assert read_bytes("/dev/null") == b""


def test_oversize_file_in_a_subprocess_has_no_traceback(tmp_path):
    big = tmp_path / "big.csv"
    big.write_bytes(b"threads,time\n" + b"1,1\n" * 1000)
    r = run_cli(["predict", str(big)], env={**os.environ, settings.MAX_INPUT_MB: "0.001"})
    assert r.returncode == 2
    assert r.stderr.decode().splitlines() == [
        f"corecast: error: {big}: larger than the input limit of 0.001 MiB (set CORECAST_MAX_INPUT_MB to raise it)"]


def test_non_utf8_input_is_one_line_error(tmp_path, capsys):
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(b"threads,time\n1,10\n2,5\n# \xe9t\xe9\n")
    assert "latin1.csv: line 4: not UTF-8 text" in assert_one_line_error(capsys, ["predict", str(bad)])
    replay = tmp_path / "r.jsonl"
    replay.write_bytes(b"\xff\n")
    assert "r.jsonl: line 1: not UTF-8 text" in assert_one_line_error(
        capsys, ["numa", "--machine", "opteron6380", "--replay", str(replay)])


@pytest.mark.parametrize("name, text, words", [
    ("p.csv", "threads,time\n1," + "9" * 200_000 + "\n", "line 2: not a CSV row"),
    ("p.json", "[" * 100_000, "nested too deeply"),
    ("p.csv", '{"measured": [{"threads": ' + "1" * 5000 + ', "time_s": 1}]}', "not valid JSON"),
    ("p.csv", "threads,time\n1,1_0\n2,5\n4,3\n", "'1_0' is not a number"),  # Python's float takes it
])
def test_pathological_contents_are_one_line_errors(tmp_path, capsys, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    assert words in assert_one_line_error(capsys, ["predict", str(path)])


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000, "nested too deeply"),
    ('{"cores_per_node": 1, "nodes": 1, "bus_delay": [[1]], "controller_delay": 1' + "0" * 400 + "}",
     "must be a finite number"),
    ('{"cores_per_node": 1' + "0" * 30 + ', "nodes": 1, "bus_delay": [[1]], "controller_delay": 1}',
     "at most"),
    ('{"cores_per_node": 1, "nodes": 2, "bus_delay": [[1, 1], [1, 1]], "controller_delay": 1, '
     '"fill_order": [0, "a"]}', "fill_order"),
    ('{"name": "\\u001b[2J", "cores_per_node": 1, "nodes": 1, "bus_delay": [[1]], "controller_delay": 1}',
     "printable"),
])
def test_hostile_machine_files_are_one_line_errors(tmp_path, capsys, text, words):
    path = tmp_path / "m.json"
    path.write_text(text)
    assert words in assert_one_line_error(capsys, ["machine", "show", str(path)])


# ---------------------------------------------------------------- inside a profiled program


def test_machine_on_dev_zero_costs_the_runtime_one_warning(monkeypatch, capfd):
    from corecast.runtime import bridge, channel
    from corecast.model.runtime.numa import NumaState, predict_region_nodes

    state = NumaState(path="/dev/zero")
    assert state.machine is None
    assert state.error.startswith("/dev/zero: larger than the input limit")
    assert predict_region_nodes(state, {"name": "r", "object": "o"}, None, None, lambda n: None) is None

    monkeypatch.setenv("CORECAST_TARGET_MACHINE", "/dev/zero")
    monkeypatch.setattr(bridge, "_numa", None)
    # The warning goes to the report channel: here, with no library and no copy kept by an
    # earlier OpenCL test, that is fd 2 itself.
    monkeypatch.setattr(channel, "_origin", None)
    monkeypatch.setattr(channel, "_lib_write", False)
    capfd.readouterr()
    assert bridge._numa_state() is None
    assert bridge._numa_state() is None  # the file is read, and reported, once
    err = capfd.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("corecast: warning: no node-count predictions: /dev/zero: larger than")


def test_machine_on_a_fifo_without_writer_is_read_by_nobody_else(tmp_path):
    from corecast.model.runtime.numa import NumaState

    machine = json.dumps({"cores_per_node": 2, "nodes": 2, "bus_delay": [[1, 2], [2, 1]],
                          "controller_delay": 3}).encode()
    with fifo_feeding(tmp_path / "m.fifo", machine) as fifo:
        state = NumaState(path=str(fifo))
    assert state.error is None and state.machine.nodes == 2


# ---------------------------------------------------------------- closed pipes, names


def test_closed_stdout_pipe_exits_quietly(csv_file):
    r, w = os.pipe()
    os.close(r)  # the reader is gone before corecast writes
    try:
        p = subprocess.run(CORECAST + ["predict", str(csv_file)], stdout=w, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
    finally:
        os.close(w)
    assert (p.returncode, p.stderr) == (0, b"")


def test_predict_into_head(csv_file):
    p = subprocess.run(f"{sys.executable} -m corecast predict '{csv_file}' | head -1", shell=True,
                       capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0
    assert p.stdout.decode().startswith("threads") and p.stdout.count(b"\n") == 1
    assert p.stderr == b""


def test_control_characters_in_names_are_escaped(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("threads,time,stall:\x1b[31mred\n1,10,0\n2,6,1\n4,4,2\n6,3.5,3\n8,3.2,4\n12,3,5\n")
    assert main(["predict", str(path), "--method", "estima"]) == 0
    out, err = capsys.readouterr()
    assert "\\x1b[31mred" in out  # the warning names the stall category, escaped
    assert "\x1b" not in out + err
    missing = tmp_path / "a\x1b[2Jb\udcff.csv"
    err = assert_one_line_error(capsys, ["predict", str(missing)])
    assert "a\\x1b[2Jb\\udcff.csv: no such file" in err


def test_sweep_report_escapes_the_command_and_the_program_stderr():
    from corecast.views.sweeptable import format_sweep

    text = format_sweep({"runtime": "openmp", "command": ["./p\x1b]0;title\x07"], "measured": [],
                         "predictions": [], "failed": [{"threads": 2, "reason": "exit status 1: \x1b[2J"}],
                         "warnings": []})
    assert "\x1b" not in text and "\x07" not in text
    assert "./p\\x1b]0;title\\x07" in text and "exit status 1: \\x1b[2J" in text


def test_html_and_png_take_undecodable_and_control_characters(tmp_path):
    from corecast.views import sweepviz
    from test_sweepviz import make_result

    result = make_result()
    result["command"] = ["./p" + os.fsdecode(b"\xff") + "\x1b[2J"]
    result["measured"][0]["stalls_s"]["lock\udcfe"] = 0.1
    sweepviz.html_report(result, str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_bytes().decode("utf-8")  # valid UTF-8
    assert "./p\\udcff\\x1b[2J" in page and "\x1b" not in page
    sweepviz.plot_sweep(result, str(tmp_path / "r.png"))
    assert (tmp_path / "r.png").read_bytes().startswith(b"\x89PNG")


def test_opencl_table_escapes_kernel_and_device_names():
    import time

    from corecast.opencl import report
    from corecast.model.runtime import kernelmodel as predict
    from corecast.recording.kernelstats import KernelStats

    k = KernelStats("k\x1b[31m", "dev\u202e", "cpu", 4)
    k.launches = k.completed = 10
    k.device_ns = k.sample.device_ns = 200_000_000
    k.sample.launches, k.sample.cpu_ns, k.sample.cpu_measured = 10, 8e8, True
    k.sizes, k.sample.shapes = {((4096,), None): 10}, {((4096,), None)}

    class Profiler:
        pid, window_ns, started_ns, failed_reason = 1, 200_000_000, time.monotonic_ns(), None

        class shim:
            available = False

    text = report.table(Profiler, [(k, predict.predict(k, 4, 4), None)], 4, 4)
    assert "k\\x1b[31m" in text and "dev\\u202e" in text
    assert "\x1b" not in text and "\u202e" not in text


def test_printable():
    assert printable("plain ±·") == "plain ±·"
    assert printable("a\x1b[0m\tb\u202e\udcff") == "a\\x1b[0m\\tb\\u202e\\udcff"


def test_read_text_reports_the_file_once(tmp_path):
    with pytest.raises(InputError, match=r"nope: no such file$"):
        read_text(tmp_path / "nope")
