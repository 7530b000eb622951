"""Kernels of a public OpenCL suite for issue #42's validation (``benchmarks/opencl_cu.py
--suite DIR``): which files, from which commit, and their export from a fetched git dir.

    python benchmarks/opencl_suite.py export [--mirror /work/.mirror] [--dest .dev/oclsuite]
    python benchmarks/opencl_suite.py verify [--dest .dev/oclsuite]

The suite is PolyBench/ACC's OpenCL version (PolyBench/GPU 1.0: S. Grauer-Gray, L. Xu,
R. Searles, S. Ayalasomayajula, J. Cavazos, "Auto-tuning a High-Level Language Targeted to
GPU Codes", InPar 2012), BSD-style licence.  Its .cl files are not part of this repository:
``export`` writes them from a bare git dir (``fetch github:cavazos-lab/PolyBench-ACC`` puts
one under /work/.mirror/cavazos-lab+PolyBench-ACC/) into DEST/OWNER+NAME/PATH, each checked
against its sha256 below; ``opencl_cu.py`` reads them from there at run time and checks
them again.  The host set-up (sizes, arguments, NDRange) is ``opencl_cu.py``'s own.

| name         | repository                | commit       | path                                                   | kernel               | character |
|--------------|---------------------------|--------------|--------------------------------------------------------|----------------------|-----------|
| pb.gemm      | cavazos-lab/PolyBench-ACC | 70ea4ca9047d | OpenCL/linear-algebra/kernels/gemm/gemm.cl             | gemm                 | compute-bound, 2-D |
| pb.conv2d    | cavazos-lab/PolyBench-ACC | 70ea4ca9047d | OpenCL/stencils/convolution-2d/2DConvolution.cl        | Convolution2D_kernel | memory-bound 3x3 stencil, 2-D |
| pb.jacobi2d  | cavazos-lab/PolyBench-ACC | 70ea4ca9047d | OpenCL/stencils/jacobi-2d-imper/jacobi2D.cl            | runJacobi2D_kernel1  | memory-bound 5-point stencil, 2-D |
| pb.mvt       | cavazos-lab/PolyBench-ACC | 70ea4ca9047d | OpenCL/linear-algebra/kernels/mvt/mvt.cl               | mvt_kernel2          | memory-bound matrix-vector, 1-D |
| pb.atax      | cavazos-lab/PolyBench-ACC | 70ea4ca9047d | OpenCL/linear-algebra/kernels/atax/atax.cl             | atax_kernel1         | few work-groups (8), a row reduction per work-item |
| pb.covar     | cavazos-lab/PolyBench-ACC | 70ea4ca9047d | OpenCL/datamining/covariance/covariance.cl             | covar_kernel         | unequal work-groups (triangular loop) |

(full commit: ``COMMIT`` below.)
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus16"))
import sources  # noqa: E402  (corpus16/sources.py: the same fetched-mirror layout)

ROOT = Path(__file__).resolve().parents[1]
REPO = "cavazos-lab/PolyBench-ACC"
COMMIT = "70ea4ca9047dc4ec9c3ca79b4c91b3b2cc1510e7"
DEFAULT_DEST = ROOT / ".dev" / "oclsuite"  # git-ignored: carried to a device call with .dev
MIRROR = Path("/work/.mirror")


@dataclass(frozen=True)
class SuiteKernel:
    """One kernel of the suite: where its source is and the file's sha256 at ``commit``."""
    name: str
    path: str
    function: str
    sha256: str
    repo: str = REPO
    commit: str = COMMIT

    def file(self, dest: Path) -> Path:
        return Path(dest) / self.repo.replace("/", "+") / self.path


KERNELS = (
    SuiteKernel("pb.gemm", "OpenCL/linear-algebra/kernels/gemm/gemm.cl", "gemm",
                "b6a6d680c3a1731399e137d827f3ad33f15daf1045dc179b543ea783ebbde137"),
    SuiteKernel("pb.conv2d", "OpenCL/stencils/convolution-2d/2DConvolution.cl", "Convolution2D_kernel",
                "0474b3a82a50cd85e6b1db566abe6ca4c14f5c855e9fe7d27fe495837741b228"),
    SuiteKernel("pb.jacobi2d", "OpenCL/stencils/jacobi-2d-imper/jacobi2D.cl", "runJacobi2D_kernel1",
                "f5f270837392bff14f40e1fbc28fdddf0c3673efbfa05ad672d060eb929aa1ad"),
    SuiteKernel("pb.mvt", "OpenCL/linear-algebra/kernels/mvt/mvt.cl", "mvt_kernel2",
                "fc9658f5554ebc1c76bbe2c949c5ee4e4f5da252f542125b6ec4a8cb6396e0da"),
    SuiteKernel("pb.atax", "OpenCL/linear-algebra/kernels/atax/atax.cl", "atax_kernel1",
                "bddd2ef86686f4001be84a56fd7d98c9c69b12efe1ddf87dbc3b4c3f880ca07c"),
    SuiteKernel("pb.covar", "OpenCL/datamining/covariance/covariance.cl", "covar_kernel",
                "48f46330497635809348a6050937bf03380bacf977adba8bbee25b64ab3f1f28"),
)


class SuiteError(Exception):
    """One line for the user, exit status 1."""


def read_source(kernel: SuiteKernel, dest: Path) -> str:
    """The kernel's .cl source from the exported tree ``dest``, checked against its sha256."""
    path = kernel.file(dest)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SuiteError(f"{kernel.name}: cannot read {path}: {exc.strerror or exc} "
                         f"(python benchmarks/opencl_suite.py export --dest {dest})") from None
    got = hashlib.sha256(data).hexdigest()
    if got != kernel.sha256:
        raise SuiteError(f"{kernel.name}: {path} is not {kernel.repo}@{kernel.commit[:12]}'s file "
                         f"(sha256 {got[:16]}..., expected {kernel.sha256[:16]}...)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # unreachable with the pinned hashes; a table edited by hand
        raise SuiteError(f"{kernel.name}: {path} is not UTF-8 text") from None


def git_dir(mirror: Path, repo: str) -> Path:
    """The fetched git directory of ``repo`` under ``mirror`` (corpus16/sources.py's)."""
    try:
        return sources.git_dir(mirror, repo)
    except sources.SourceError as exc:
        raise SuiteError(str(exc)) from None


def export(mirror: Path, dest: Path, kernels: tuple[SuiteKernel, ...] = KERNELS) -> list[Path]:
    """Write every kernel's file at its commit from the fetched git dir under ``mirror``
    into ``dest``, each checked against its sha256 before it is written."""
    written = []
    for path in sorted({(k.repo, k.commit, k.path) for k in kernels}):
        repo, commit, rel = path
        gd = git_dir(mirror, repo)
        r = subprocess.run(["git", f"--git-dir={gd}", "show", f"{commit}:{rel}"], capture_output=True)
        if r.returncode != 0:
            last = (r.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            raise SuiteError(f"{repo}@{commit[:12]}:{rel}: {last}")
        want = {k.sha256 for k in kernels if (k.repo, k.commit, k.path) == path}
        got = hashlib.sha256(r.stdout).hexdigest()
        if got not in want:
            raise SuiteError(f"{repo}@{commit[:12]}:{rel}: sha256 {got[:16]}... is not the pinned one")
        out = Path(dest) / repo.replace("/", "+") / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(r.stdout)
        written.append(out)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["export", "verify"])
    ap.add_argument("--mirror", default=str(MIRROR), help="where fetched git dirs are (default /work/.mirror)")
    ap.add_argument("--dest", default=str(DEFAULT_DEST), help="the exported tree (default .dev/oclsuite)")
    args = ap.parse_args(argv)
    dest = Path(args.dest)
    try:
        if args.action == "export":
            files = export(Path(args.mirror), dest)
            print(f"opencl_suite: exported {len(files)} file(s) of {REPO}@{COMMIT[:12]} into {dest}")
        for k in KERNELS:
            read_source(k, dest)
        if args.action == "verify":
            print(f"opencl_suite: {len(KERNELS)} kernels in {dest} match {REPO}@{COMMIT[:12]}")
    except SuiteError as exc:
        print(f"opencl_suite: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
