"""The preload library's files call each other without a loop (ARCHITECTURE.md).

Each ``native/*.c`` and ``shims/*.c`` file defines functions and variables; a file depends
on another when it names one the other defines (a call, a callback handed over, a
variable read).  Inline functions and macros of the headers count for the file that uses
them.  The arrows must form no loop, so the library reads in one direction: wrappers ->
omp_call, omp_runtime, resolve -> core; shims/process -> lifecycle -> sampler -> sample ->
counters -> core; lifecycle -> report -> jsonl -> text.

    python tests/runtime/test_native_layers.py    # prints each file's arrows
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIRS = ("native", "shims")
MAX_LINES = 400
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_OWN = re.compile(r"(cc_|CC_|corecast_)")
_KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "__attribute__", "__asm__"}


def _strip(text: str) -> str:
    """The source without comments, string and character literals (kept as blanks)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  lambda m: " " if m.group(0)[0] in "/" else '""', text, flags=re.S)


def _top_level(text: str) -> list[tuple[str, str]]:
    """(head, body) of each top-level definition or declaration: a function ends with its
    body's brace, anything else (a struct, an initialised array) at its ';'."""
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", text, flags=re.M)  # directives
    out, depth, start, item = [], 0, -1, 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0 and start < 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and _function_name(text[item:start]):
                out.append((text[item:start], text[start:i + 1]))
                item, start = i + 1, -1
        elif ch == ";" and depth == 0:
            out.append((text[item:start], text[start:i]) if start >= 0 else (text[item:i], ""))
            item, start = i + 1, -1
    return out


def _no_attributes(text: str) -> str:
    """``text`` without its ``__attribute__((...))`` parts."""
    while (k := text.find("__attribute__")) >= 0:
        depth, i = 0, text.index("(", k)
        for i in range(i, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
        text = text[:k] + text[i + 1:]
    return text


def _function_name(head: str) -> str | None:
    """The name a function definition's head declares, else None."""
    head = _no_attributes(head).strip()
    if not head.endswith(")") or "=" in head:
        return None
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            m = re.search(r"(\w+)\s*$", head[:i])
            return m.group(1) if m and m.group(1) not in _KEYWORDS else None
    return None


def _defines(text: str) -> tuple[set[str], set[str]]:
    """Non-static functions and variables a C file defines (its global names)."""
    funcs, variables = set(), set()
    for head, body in _top_level(text):
        head = head.strip()
        if not head or re.match(r"(static|extern|typedef)\b", head):
            continue
        name = _function_name(head)
        if name and body:
            funcs.add(name)
        elif not name:
            decl = _no_attributes(head).split("=")[0]
            m = re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*$", decl.strip())
            if m and m.group(1) not in ("struct", "union", "enum"):
                variables.add(m.group(1))
    # corecast's own names: the wrapped functions (exit, pthread_create) are the program's calls
    return {n for n in funcs if _OWN.match(n)}, {n for n in variables if _OWN.match(n)}


def _header_inlines(headers: list[Path]) -> dict[str, set[str]]:
    """Names each header inline function or function-like macro brings along."""
    bodies: dict[str, str] = {}
    for h in headers:
        raw = h.read_text()
        for m in re.finditer(r"^#define\s+(\w+)\(.*?(?<!\\)$", raw, flags=re.M | re.S):
            bodies[m.group(1)] = m.group(0)
        for head, body in _top_level(_strip(raw)):
            name = _function_name(head) if body and "inline" in head else None
            if name:
                bodies[name] = body
    uses = {name: set(_IDENT.findall(_strip(body))) for name, body in bodies.items()}
    changed = True
    while changed:  # an inline calling another inline brings that one's names too
        changed = False
        for name, used in uses.items():
            more = set().union(*(uses[u] for u in used if u in uses and u != name)) - used
            if more:
                used |= more
                changed = True
    return uses


def sources() -> list[Path]:
    return sorted(p for d in DIRS for p in (ROOT / d).glob("*.c"))


def graph() -> dict[str, dict[str, set[str]]]:
    """file -> {file it depends on: the names it uses from there}."""
    files = sources()
    inlines = _header_inlines(sorted(p for d in DIRS for p in (ROOT / d).glob("*.h")))
    texts = {f: _strip(f.read_text()) for f in files}
    owner: dict[str, Path] = {}
    for f, text in texts.items():
        funcs, variables = _defines(text)
        for name in funcs | variables:
            owner.setdefault(name, f)
    edges: dict[str, dict[str, set[str]]] = {}
    for f, text in texts.items():
        used = set(_IDENT.findall(text))
        for name in list(used):
            used |= inlines.get(name, set())
        out: dict[str, set[str]] = {}
        for name in used:
            g = owner.get(name)
            if g is not None and g != f:
                out.setdefault(_rel(g), set()).add(name)
        edges[_rel(f)] = out
    return edges


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _loop(edges: dict[str, dict[str, set[str]]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(edges.get(n, {})):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_graph_sees_the_known_arrows():
    edges = graph()
    assert "cc_self_slow" in edges["shims/pthread.c"]["native/core.c"]  # through cc_self()
    assert "cc_libc_init" in edges["shims/pthread.c"]["native/resolve.c"]  # through CC_LIBC()
    assert "cc_build_sample" in edges["native/sampler.c"]["native/sample.c"]
    assert "cc_cfg" in edges["native/report.c"]["native/core.c"]  # a variable


def test_no_call_loop():
    loop = _loop(graph())
    assert loop is None, "native call loop: " + " -> ".join(loop)


def test_files_under_400_lines_or_say_why():
    headers = sorted(p for d in DIRS for p in (ROOT / d).glob("*.h"))  # corecast.h reached 401 unseen
    for f in sources() + headers:
        lines = f.read_text().splitlines()
        if len(lines) > MAX_LINES:
            assert "over 400 lines" in "\n".join(lines[:3]), f"{_rel(f)}: {len(lines)} lines, no reason given"


if __name__ == "__main__":
    for src, deps in sorted(graph().items()):
        print(src)
        for dst, names in sorted(deps.items()):
            print(f"  -> {dst}: {', '.join(sorted(names))}")
    loop = _loop(graph())
    print("loop: " + " -> ".join(loop) if loop else "no loop")
    sys.exit(1 if loop else 0)
