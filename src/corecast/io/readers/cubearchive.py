"""A ``.cubex`` checked before pycubexr opens it (``readers.cube``): what pycubexr will
read of it fits the input limit (``CORECAST_MAX_INPUT_MB``, as every reader's input), and
it is what CubeLib writes, an uncompressed tar of plain files.

pycubexr (``parsers/tar_parser.py``) opens any tar, compressed too (listing a compressed
one inflates all of it), follows links inside it and reads members whole: unchecked, a
file of a few kB could ask for gigabytes (a sparse member, a gzip-compressed
``anchor.xml`` or compressed data rows that inflate a thousandfold).  Nothing is
extracted to disk, here or by pycubexr.
"""
from __future__ import annotations

import os
import re
import stat
import struct
import tarfile
import zlib
from typing import BinaryIO

from ...errors import InputError
from .. import settings
from ..fileio import input_limit, limit_text, quoted, read_error, too_large

# What a .cubex is not (CubeLib writes an uncompressed tar; tarfile would open the
# compressed ones too, walking every byte of them to list the members).
_NOT_TAR = ((b"\x1f\x8b", "gzip-compressed"), (b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
            (b"(\xb5/\xfd", "zstd-compressed"), (b"PK\x03\x04", "a zip archive"), (b"PK\x05\x06", "a zip archive"))
_DATA = re.compile(r"(\d+)\.data")
_INDEX = re.compile(r"\d+\.index")
ZDATA_HEADER = b"ZCUBEX.DATA"  # CubeLib's compressed rows: count, (start, start, size) each, zlib streams


def _size(n: int) -> str:
    return next(f"{n / (1 << s):g} {u}" for s, u in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB"), (0, "bytes"))
                if n >= 1 << s or s == 0)


def check_archive(path: str, where: str) -> None:
    """``path`` is what CubeLib writes and what pycubexr will read of it fits the input
    limit (the module's docstring says what is checked); else one line naming ``where``."""
    limit = input_limit()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO swapped in since: no wait
    except OSError as exc:
        raise read_error(path, exc) from None
    with os.fdopen(fd, "rb") as f:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{where}: not a regular file")
            if st.st_size > limit:
                raise too_large(path, limit)
            head = f.read(512)
            f.seek(0)
            if not head:
                raise InputError(f"{where}: empty, not a CUBE profile")
            what = next((w for magic, w in _NOT_TAR if head.startswith(magic)), None)
            if what:
                raise InputError(f"{where}: {what}, not a CUBE profile (Score-P writes an uncompressed tar)")
            _check_members(f, st.st_size, where, limit)
        except OSError as exc:
            raise read_error(path, exc) from None


def _check_members(f: BinaryIO, size: int, where: str, limit: int) -> None:
    try:
        from pycubexr.utils.custom_tarinfo import TarInfoWithoutCheck  # what pycubexr falls back to
    except ImportError:  # another pycubexr: tarfile's own check alone
        TarInfoWithoutCheck = tarfile.TarInfo
    try:
        try:
            tar = tarfile.open(fileobj=f, mode="r:")
        except tarfile.ReadError:
            f.seek(0)
            tar = tarfile.open(fileobj=f, mode="r:", tarinfo=TarInfoWithoutCheck)
        with tar:
            members = {}
            for m in tar:  # each header checked before the next is looked for past it
                name = m.name
                if name.startswith("/") or ".." in name.split("/"):
                    raise InputError(f"{where}: its member {quoted(name)} names a path outside the archive: "
                                     "not a CUBE profile")
                if m.issym() or m.islnk():
                    raise InputError(f"{where}: its member {quoted(name)} is a link: a CUBE profile's members "
                                     "are plain files")
                if m.issparse():
                    raise InputError(f"{where}: its member {quoted(name)} is a sparse file of {_size(m.size)}: "
                                     "not a CUBE profile")
                if m.isreg() and m.offset_data + m.size > size:
                    raise InputError(f"{where}: its member {quoted(name)} claims {_size(m.size)}, more than the "
                                     "file holds (truncated?)")
                if m.isreg():
                    members[name] = m
                elif name == "anchor.xml" or _DATA.fullmatch(name) or _INDEX.fullmatch(name):
                    # pycubexr would open it as a file and fail with its own internals' words
                    raise InputError(f"{where}: its member {quoted(name)} is {_kind(m)}: a CUBE profile's "
                                     "members are plain files")
            anchor = members.get("anchor.xml")
            if anchor is not None:
                _check_anchor(tar, anchor, where, limit)
            for name, m in members.items():
                found = _DATA.fullmatch(name)
                index = members.get(f"{found[1]}.index") if found else None
                if index is not None:
                    _check_data(tar, m, _endianness(tar, index), where, limit)
    except InputError:
        raise
    except (tarfile.TarError, ValueError) as exc:  # ValueError: TarInfoWithoutCheck's bad header
        raise InputError(f"{where}: not a readable CUBE profile (not a tar archive: {str(exc)[:60]})") from None


def _over(where: str, name: str, limit: int) -> InputError:
    return InputError(f"{where}: its member {quoted(name)} inflates past the input limit of {limit_text(limit)} "
                      f"(set {settings.MAX_INPUT_MB} to raise it)")


def _check_anchor(tar: tarfile.TarFile, m: tarfile.TarInfo, where: str, limit: int) -> None:
    """A gzip-compressed ``anchor.xml`` (Score-P 1.x) inflates to no more than ``limit``;
    one that is not gzip is left to pycubexr to refuse."""
    import gzip
    import io

    with tar.extractfile(m) as raw:
        if raw.read(5) == b"<?xml":
            return
        raw.seek(0)
        total = 0
        try:
            with gzip.GzipFile(fileobj=raw) as inflated:
                while chunk := inflated.read(1 << 20):
                    total += len(chunk)
                    if total > limit:
                        raise _over(where, m.name, limit)
        except (OSError, EOFError, zlib.error, io.UnsupportedOperation):
            return  # not gzip: pycubexr says so


def _endianness(tar: tarfile.TarFile, index: tarfile.TarInfo) -> str:
    """The byte order pycubexr reads a metric's data in: its index's (``CUBEX.INDEX``, then 1)."""
    with tar.extractfile(index) as f:
        head = f.read(15)
    return "<" if head[11:15] == struct.pack("<i", 1) else ">"


def _check_data(tar: tarfile.TarFile, m: tarfile.TarInfo, order: str, where: str, limit: int) -> None:
    """CubeLib's compressed rows (``ZCUBEX.DATA``) inflate to no more than ``limit``, read
    as pycubexr reads them (``parsers/data_parser.py``: count, then (start, start, size)
    per row, then each row's zlib stream); garbled ones are left to pycubexr to refuse."""
    with tar.extractfile(m) as f:
        if f.read(len(ZDATA_HEADER)) != ZDATA_HEADER:
            return
        try:
            (rows,) = struct.unpack(order + "q", f.read(8))
            if not 0 <= rows <= m.size // 24:
                return
            heads = struct.unpack(f"{order}{3 * rows}q", f.read(24 * rows))
        except struct.error:
            return
        total = 0
        for size in heads[2::3]:
            if size <= 0:
                continue  # pycubexr skips it
            if size > m.size:  # pycubexr would ask read() for all of it at once
                raise InputError(f"{where}: its member {quoted(m.name)} has a compressed row of {_size(size)}, "
                                 f"more than the member's {_size(m.size)}: garbled data")
            try:
                total += len(zlib.decompressobj().decompress(f.read(size), limit + 1 - total))
            except zlib.error:
                return
            if total > limit:
                raise _over(where, m.name, limit)


def _kind(m: tarfile.TarInfo) -> str:
    """What a member that is not a plain file is, in a user's words."""
    return ("a folder" if m.isdir() else "a FIFO" if m.isfifo() else "a device" if m.isdev()
            else "not a plain file")
