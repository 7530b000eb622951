"""The model's own interpreter reads the directories .pth files name, never their code."""
from __future__ import annotations

from corecast.runtime.sitepaths import site_paths


def test_pth_path_lines_are_read_and_import_lines_are_not_run(tmp_path):
    site = tmp_path / "site-packages"
    extra, relative = tmp_path / "torch-venv-site", site / "vendored"
    for d in (site, extra, relative):
        d.mkdir()
    ran = tmp_path / "ran"
    (site / "a.pth").write_text(f"# a comment\n\n{extra}\nvendored\n{tmp_path / 'absent'}\n{extra}\n")
    (site / "b.pth").write_text(f"import pathlib; pathlib.Path({str(ran)!r}).touch()\n")
    (site / ".hidden.pth").write_text(f"{tmp_path}\n")
    (site / "c.pth").write_bytes(b"\xff\xfe not text")
    assert site_paths([str(tmp_path / "no-such-dir"), str(site), str(site)]) == [str(site), str(extra), str(relative)]
    assert not ran.exists()
