"""ARCHITECTURE.md matches the tree: every file or folder it names in backticks under
src/corecast, native/ and shims/ exists, and it names every Python module of
src/corecast and every C file of native/ and shims/.

A name in backticks is read the way the document writes it: a path from the repository
root (`native/core.c`, `src/corecast/model/curve/methods/`), from the package (`runtime/bridge.py`,
`io/`), a dotted module (`corecast.recording.abi`), or a bare name (`channel.c`,
`fileio`) that stands for a file in a folder the same table row, list item or paragraph
names (`native/...`, `io/...`).  `:name` and `.function` tails are a module's contents;
`NAME` is a placeholder and `*` a pattern that must match something."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "corecast"
DOC = ROOT / "ARCHITECTURE.md"
C_ROOTS = ("native/", "shims/")
ELSEWHERE = ("tests/", "docs/", "benchmarks/", "examples/", ".ci/", "/")


def files() -> dict[str, Path]:
    """The files the document must name, by their key: a package path for Python
    (``runtime/bridge.py``), a root path for C (``native/core.c``)."""
    found = {p.relative_to(PKG).as_posix(): p for p in PKG.rglob("*.py")}
    for top in C_ROOTS:
        found.update({p.relative_to(ROOT).as_posix(): p for p in (ROOT / top).rglob("*.c")})
    return found


def blocks(text: str) -> list[str]:
    """Table rows, list items and paragraphs: the context a bare name is read in."""
    out: list[str] = []
    for line in text.splitlines():
        starts = not line.strip() or line.startswith("|") or re.match(r"\s*(- |\d+\. |#)", line)
        if starts or not out:
            out.append(line)
        else:
            out[-1] += " " + line
    return [b for b in out if b.strip()]


def tokens(block: str) -> list[str]:
    found = []
    for span in re.findall(r"`([^`]+)`", block):
        for tok in re.findall(r"[A-Za-z0-9_./*:-]+", span):
            tok = tok.split(":")[0].rstrip(".")
            if tok.startswith("corecast.") and "/" not in tok:
                tok = tok[len("corecast."):].replace(".", "/")
            if tok.startswith("src/corecast/"):
                tok = tok[len("src/corecast/"):]
            head, _, last = tok.rpartition("/")
            if "." in last.strip(".") and not last.endswith((".py", ".c", ".h", ".md")):
                tok = head + "/" * bool(head) + last.split(".")[0]  # module.attribute
            if tok and tok not in ("src/corecast", "corecast"):
                found.append(tok)
    return found


def folders(toks: list[str]) -> set[str]:
    """The folders a block names: its path tokens' folders, seen from the package or root."""
    named = set()
    for tok in toks:
        if "/" in tok and not tok.startswith(ELSEWHERE):
            parts = tok.split("/")[:-1]
            named.update("/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1))
    # a folder named beside its parent (`views/` ... `sweepviz/`) is read inside it
    return {""} | named | {a + b for a in named for b in named if a != b}


def resolve(tok: str, dirs: set[str]) -> list[str]:
    """Keys of ``files()`` (or folders, ending in /) that ``tok`` can name."""
    hits = []
    for d in sorted(dirs) + list(C_ROOTS):
        rel = d + tok
        base = ROOT if rel.startswith(C_ROOTS) else PKG
        if "*" in rel:
            hits += [p.relative_to(base).as_posix() for p in base.glob(rel)]
            continue
        stem = rel.rstrip("/")
        for cand in (stem, stem + ".py", stem + ".c", stem + ".h"):
            path = base / cand
            if path.is_file():
                hits.append(cand)
            elif path.is_dir() and cand == stem:
                hits.append(stem + "/")
                if (path / "__init__.py").is_file():
                    hits.append(stem + "/__init__.py")  # a package is named by its folder
    return sorted(set(hits))


def named_and_missing() -> tuple[set[str], list[str]]:
    named: set[str] = set()
    missing: list[str] = []
    for block in blocks(DOC.read_text()):
        toks = tokens(block)
        dirs = folders(toks)
        for tok in toks:
            pathlike = "/" in tok or tok.endswith((".py", ".c", ".h"))
            test = tok.startswith(("test_", ".")) or "/test_" in tok  # tests, suffixes
            if "NAME" in tok or tok.startswith(ELSEWHERE) or test or ("*" in tok and not pathlike):
                continue
            hits = resolve(tok, dirs)
            if "*" not in tok:  # a pattern shows a file exists, it does not name it
                named.update(hits)
            if pathlike and not hits:
                missing.append(tok)
    return named, missing


def test_every_path_it_names_exists():
    _, missing = named_and_missing()
    assert not missing, f"ARCHITECTURE.md names files or folders that do not exist: {sorted(set(missing))}"


def test_it_names_every_module_and_c_file():
    named, _ = named_and_missing()
    unnamed = sorted(key for key in files() if key not in named)
    assert not unnamed, f"ARCHITECTURE.md does not mention: {unnamed}"


def test_the_reader_finds_what_it_should():
    """The check itself: a path from the root, from the package, a dotted module and a
    bare name in its row's folder all count; a made-up path does not."""
    dirs = folders(tokens("`native/core.c`, `channel.c`, `io/`: `fileio`"))
    assert resolve("channel.c", dirs) == ["native/channel.c"]
    assert "io/fileio.py" in resolve("fileio", dirs)
    assert resolve(tokens("`corecast.recording.abi`")[0], {""}) == ["recording/abi.py"]
    assert resolve("runtime/no_such_module.py", {""}) == []
