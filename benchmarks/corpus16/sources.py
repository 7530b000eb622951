"""Rebuild, check and pack the corpus's source trees from the pinned commits of its manifest.

    python benchmarks/corpus16/sources.py export [--mirror ROOT] [--record]   # git dirs -> sources/
    python benchmarks/corpus16/sources.py verify                              # sources/ against the checksums
    python benchmarks/corpus16/sources.py pack DEST                           # sources/ + manifest -> DEST

Each entry of the manifest's ``"sources"`` (``local/programs.json`` beside this file unless
``--manifest``) names ``repo`` (owner/name on GitHub), ``commit`` and ``paths`` (the
sub-folders kept).  ``export`` reads them out of a bare git directory (``fetch
github:OWNER/NAME`` puts it under ``/work/.mirror/OWNER+NAME/``) file by file, so a blob the
snapshot lacks (files of 4 MiB and more) is reported rather than aborting the export.  The
checksum is sha256 over ``MODE PATH SHA256(content)`` lines of every exported file, sorted
by path; ``--record`` writes it into the manifest, otherwise a mismatch is an error.
``pack`` copies the manifest and the exported trees into DEST (``.dev/corpus16`` for a
device call, which carries at most 64 MiB) and says how large they are.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_MANIFEST = HERE / "local" / "programs.json"
MIRROR = Path("/work/.mirror")


class SourceError(Exception):
    """One line for the user, exit status 1."""


def git_dir(mirror: Path, repo: str) -> Path:
    base = mirror / repo.replace("/", "+")
    for cand in (base / "repo", base / "repo" / ".git", base):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    raise SourceError(f"{repo}: no git directory under {base} (fetch github:{repo} first)")


def git(gd: Path, *args: str, data: bytes | None = None) -> bytes:
    r = subprocess.run(["git", f"--git-dir={gd}", *args], input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise SourceError(f"git {args[0]} in {gd}: {r.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    return r.stdout


def tree_sum(entries: list[tuple[str, str, bytes]]) -> str:
    """sha256 over sorted ``MODE PATH SHA256`` lines."""
    h = hashlib.sha256()
    for mode, path, content in sorted(entries, key=lambda e: e[1]):
        h.update(f"{mode} {path} {hashlib.sha256(content).hexdigest()}\n".encode())
    return h.hexdigest()


def export_one(name: str, src: dict, gd: Path, dest: Path) -> tuple[str, list[str]]:
    """Write ``src``'s paths at its commit into ``dest``; (checksum, paths not in the snapshot)."""
    listing = git(gd, "ls-tree", "-r", "-z", src["commit"], "--", *src["paths"]).split(b"\0")
    files = []
    for item in filter(None, listing):
        meta, path = item.split(b"\t", 1)
        mode, kind, oid = meta.decode().split()
        if kind == "blob":
            files.append((mode, path.decode(), oid))
    if not files:
        raise SourceError(f"{name}: no file under {src['paths']} at {src['commit'][:12]}")
    batch = git(gd, "cat-file", "--batch", data="".join(f"{oid}\n" for _, _, oid in files).encode())
    entries, missing, pos = [], [], 0
    for mode, path, oid in files:
        end = batch.index(b"\n", pos)
        head = batch[pos:end].decode().split()
        pos = end + 1
        if len(head) < 3 or head[1] != "blob":  # "<oid> missing": the snapshot left it out
            missing.append(path)
            continue
        size = int(head[2])
        content = batch[pos:pos + size]
        pos += size + 1
        entries.append((mode, path, content))
    if dest.exists():
        shutil.rmtree(dest)
    for mode, path, content in entries:
        out = dest / path
        out.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(content.decode(), out)
        else:
            out.write_bytes(content)
            if mode == "100755":
                out.chmod(0o755)
    return tree_sum(entries), missing


def disk_sum(dest: Path, paths: list[str]) -> str:
    entries = []
    for top in paths:
        base = dest / top
        walk = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file() or p.is_symlink())
        for p in walk:
            rel = p.relative_to(dest).as_posix()
            if p.is_symlink():
                entries.append(("120000", rel, os.readlink(p).encode()))
            else:
                entries.append(("100755" if os.access(p, os.X_OK) else "100644", rel, p.read_bytes()))
    return tree_sum(entries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["export", "verify", "pack"])
    ap.add_argument("dest", nargs="?", help="pack: the folder to fill (e.g. .dev/corpus16)")
    ap.add_argument("--manifest", default=str(DEFAULT_MANIFEST))
    ap.add_argument("--sources", default=None, help="the exported trees (default: the manifest's sources_dir)")
    ap.add_argument("--mirror", default=str(MIRROR), help="where fetched git dirs are (default /work/.mirror)")
    ap.add_argument("--record", action="store_true", help="export: write the checksums into the manifest")
    ap.add_argument("--only", default="", help="comma-separated source names")
    args = ap.parse_args(argv)
    mpath = Path(args.manifest)
    try:
        data = json.loads(mpath.read_text())
    except (OSError, ValueError) as exc:
        print(f"sources: error: {mpath}: {exc}", file=sys.stderr)
        return 1
    root = Path(args.sources) if args.sources else mpath.parent / data.get("sources_dir", "sources")
    only = [s for s in args.only.split(",") if s]
    srcs = {k: v for k, v in data.get("sources", {}).items() if "repo" in v and (not only or k in only)}
    bad = 0
    try:
        if args.action == "pack":
            if not args.dest:
                raise SourceError("pack needs DEST")
            dest = Path(args.dest)
            (dest / "sources").mkdir(parents=True, exist_ok=True)
            packed = json.loads(json.dumps(data))  # the copy finds its trees beside itself
            packed["sources_dir"] = "sources"
            for v in packed.get("sources", {}).values():
                if "local" in v:  # this repository's own programs travel with the working tree
                    v["local"] = os.path.relpath((mpath.parent / v["local"]).resolve(), dest.resolve())
            (dest / "programs.json").write_text(json.dumps(packed, indent=1) + "\n")
            for k, v in data.get("sources", {}).items():
                if "local" in v or (root / k).resolve() == (dest / "sources" / k).resolve():
                    continue  # packing a packed manifest again: its trees are already there
                if (dest / "sources" / k).exists():
                    shutil.rmtree(dest / "sources" / k)
                shutil.copytree(root / k, dest / "sources" / k, symlinks=True)
            size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
            print(f"sources: packed {len(srcs)} source tree(s) and the manifest into {dest}: {size / 2**20:.1f} MiB")
            return 0
        for name, src in srcs.items():
            want = src.get("sha256", "")
            if args.action == "export":
                got, missing = export_one(name, src, git_dir(Path(args.mirror), src["repo"]), root / name)
                if missing:
                    print(f"sources: {name}: {len(missing)} file(s) not in the snapshot, left out: {missing[0]}...")
            else:
                if not (root / name).is_dir():
                    print(f"sources: {name}: missing from {root}")
                    bad += 1
                    continue
                got = disk_sum(root / name, src["paths"])
            if args.record and args.action == "export":
                src["sha256"] = got
            elif got != want:
                print(f"sources: {name}: checksum {got[:16]}... differs from the manifest's {want[:16] or '(none)'}...")
                bad += 1
                continue
            print(f"sources: {name}: {src['repo']}@{src['commit'][:12]} ok")
        if args.record and args.action == "export":
            mpath.write_text(json.dumps(data, indent=1) + "\n")
    except SourceError as exc:
        print(f"sources: error: {exc}", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
