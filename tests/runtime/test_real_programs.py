"""Programs no one here wrote: pigz (pthreads) and ImageMagick's convert (OpenMP) give
byte-identical output and the same exit status with and without the preload library, and
the library writes their JSON lines."""
from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from .helpers import TIMEOUT, clean_env, corecast_run, events, read_lines, run

# The real ImageMagick, by its Debian path: a plain ``convert`` may be something else
# (e.g. a stand-in script earlier on PATH).
IMAGEMAGICK = ("/usr/bin/convert-im6.q16", "/usr/bin/convert-im7.q16", "/usr/bin/magick")


def find_imagemagick() -> str | None:
    for path in IMAGEMAGICK:
        if Path(path).is_file():
            return path
    return None


def links_libgomp(exe: str) -> bool:
    ldd = shutil.which("ldd")
    if ldd is None:
        return True  # cannot tell; the JSON checks below still hold
    out = subprocess.run([ldd, exe], capture_output=True, text=True, timeout=TIMEOUT).stdout
    return "libgomp" in out


@pytest.fixture(scope="module")
def pigz() -> str:
    path = shutil.which("pigz")
    if path is None:
        pytest.skip("pigz is not installed")
    return path


@pytest.fixture(scope="module")
def convert() -> str:
    path = find_imagemagick()
    if path is None:
        pytest.skip("ImageMagick is not installed")
    if not links_libgomp(path):
        pytest.skip(f"{path} is built without OpenMP")
    return path


@pytest.fixture(scope="module")
def text_file(tmp_path_factory) -> Path:
    """About 4 MB of deterministic, compressible text."""
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "core", "cast", "thread", "lock", "queue", "barrier"]
    path = tmp_path_factory.mktemp("pigz") / "input.txt"
    path.write_text(" ".join(f"{rng.choice(words)}{rng.randrange(1000)}" for _ in range(500_000)))
    return path


@pytest.fixture(scope="module")
def image_file(tmp_path_factory) -> Path:
    """A 1024x768 binary PPM with a deterministic pattern."""
    w, h = 1024, 768
    row = bytes((x * 7) & 255 for x in range(w * 3))
    data = b"".join(row[y % 97:] + row[:y % 97] for y in range(h))
    path = tmp_path_factory.mktemp("convert") / "input.ppm"
    path.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + data)
    return path


def test_pigz(pigz, text_file, lib, tmp_path):
    plain = run([pigz, "-p", "2", "-c", text_file])
    assert plain.returncode == 0 and len(plain.stdout) > 0
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--json-out", str(out)], [pigz, "-p", "2", "-c", text_file])
    assert proc.returncode == plain.returncode
    assert proc.stdout == plain.stdout  # the compressed stream, byte for byte
    assert b"corecast" not in proc.stdout
    lines = read_lines(out)
    (process,) = events(lines, "process")
    assert process["runtime"] == "pthreads" and process["object"] == "pigz"
    assert process["threads"] >= 2
    assert process["predicted"] and process["predicted"][0]["speedup"] == pytest.approx(1.0)
    assert events(lines, "summary")
    assert "process (pthreads)" in proc.stderr.decode()
    # and it still decompresses to the input
    back = subprocess.run([pigz, "-d", "-c"], input=proc.stdout, capture_output=True, timeout=TIMEOUT)
    assert back.stdout == text_file.read_bytes()


def test_pigz_error_status_unchanged(pigz, lib, tmp_path):
    missing = tmp_path / "missing.txt"
    plain = run([pigz, "-p", "2", "-c", missing])
    proc = corecast_run([], [pigz, "-p", "2", "-c", missing])
    assert plain.returncode != 0
    assert proc.returncode == plain.returncode
    assert proc.stdout == plain.stdout


def test_convert_noise(convert, image_file, lib, tmp_path):
    # -seed 1 makes +noise Random reproducible; -strip keeps timestamps out of the file.
    args = [image_file, "-seed", "1", "+noise", "Random", "-strip"]
    plain_out = tmp_path / "plain.ppm"
    plain = run([convert, *args, plain_out])
    assert plain.returncode == 0 and plain_out.stat().st_size > 0
    cc_out = tmp_path / "cc.ppm"
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--json-out", str(out)], [convert, *args, cc_out])
    assert proc.returncode == plain.returncode
    assert proc.stdout == plain.stdout
    assert cc_out.read_bytes() == plain_out.read_bytes()
    lines = read_lines(out)
    regions = events(lines, "region")
    assert regions, "no OpenMP region recorded"
    for r in regions:
        assert r["runtime"] == "openmp" and r["calls"] >= 1 and r["threads"] >= 1
        assert r["object"].startswith("libMagickCore")
    (process,) = events(lines, "process")
    assert process["runtime"] == "openmp"
    assert process["object"] == Path(convert).name
    assert events(lines, "summary")[0]["regions"] == len(regions)


def test_convert_canvas_team(convert, lib, tmp_path):
    """Filling a canvas this size takes a team of OMP_NUM_THREADS threads (ImageMagick's
    thread limit follows OpenMP's, whatever the cores): the team size is recorded, and
    the output is unchanged."""
    args = ["-size", "1024x1024", "xc:gray", "-seed", "1", "+noise", "Random", "-strip"]
    plain_out, cc_out, out = tmp_path / "plain.ppm", tmp_path / "cc.ppm", tmp_path / "cc.jsonl"
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run([convert, *args, plain_out], env=env)
    proc = corecast_run(["--quiet", "--json-out", str(out)], [convert, *args, cc_out], env=env)
    assert proc.returncode == plain.returncode == 0
    assert proc.stderr == b""
    assert cc_out.read_bytes() == plain_out.read_bytes()
    lines = read_lines(out)
    regions = events(lines, "region")
    assert len(regions) >= 2
    assert max(r["threads"] for r in regions) == 2
    (process,) = events(lines, "process")
    assert process["threads"] == 2
