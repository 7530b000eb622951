"""The docs and the program in step: every `corecast SUBCOMMAND --flag`
the pages show is one the parser has, and every key the recording's writers write is named
in docs/recording.md."""
from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "examples" / "README.md",
         *sorted((ROOT / "docs").glob("*.md"))]
# `corecast SUB ...` up to what ends a command in prose or a shell line
_COMMAND = re.compile(r"\bcorecast ([a-z][\w-]*)((?: [^`|#;&)]*)?)")


def command_lines(page: Path) -> list[str]:
    """The `corecast ...` commands of ``page``: code block lines and inline code spans."""
    text, out, fenced = page.read_text(), [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    corecast "):  # a fenced or an indented code block
            out.append(line.split(" #")[0])
    out += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return [m.group(0) for span in out for m in _COMMAND.finditer(span)]


def options(parser: argparse.ArgumentParser) -> tuple[set[str], dict[str, argparse.ArgumentParser]]:
    getattr(parser, "_declare", lambda: None)()  # arguments a subcommand declares when it is parsed
    subs = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subs.update(action.choices)
    return set(parser._option_string_actions), subs


def unknown(command: str, parser: argparse.ArgumentParser) -> list[str]:
    """What in ``command`` (``corecast SUB [ACTION] --flag ...``) the parser lacks."""
    words = command.split(" -- ")[0].split()[1:]  # past a lone `--` the words are the program's
    flags, subs = options(parser)
    if words[0] not in subs:
        return [words[0]]
    flags, actions = options(subs[words[0]])
    if actions and len(words) > 1 and words[1] in actions:
        flags, _ = options(actions[words[1]])
    named = [w.lstrip("[(").rstrip("]),.").split("=")[0] for w in words[1:]]  # `[--upto N]` in a synopsis
    return [w for w in named if w.startswith("--") and w not in flags]


def test_every_command_the_docs_show_has_its_subcommand_and_flags():
    from corecast.cli import build_parser

    parser = build_parser()
    seen, bad = 0, []
    for page in PAGES:
        for command in command_lines(page):
            seen += 1
            if missing := unknown(command, parser):
                bad.append(f"{page.relative_to(ROOT)}: {command.strip()!r}: {missing}")
    assert seen > 100 and not bad, "\n".join(bad)


def test_a_renamed_flag_is_caught():
    from corecast.cli import build_parser

    parser = build_parser()
    assert unknown("corecast sweep --threads 1,2 --repeats 3 -- ./prog --repeats", parser) == ["--repeats"]
    assert unknown("corecast machine detect -o here.json --delay x", parser) == ["--delay"]
    assert unknown("corecast sweeps --threads 1", parser) == ["sweeps"]
    assert unknown("corecast run --target 16 --json-out cc.jsonl -- pigz -p 2 big.tar", parser) == []
    assert unknown("corecast run [--target N] [--window-msx 200] -- CMD", parser) == ["--window-msx"]


def kernel_keys() -> set[str]:
    """The keys of the pyopencl report's `kernel` line (and of its `sample`), from its dict literal."""
    tree = ast.parse((ROOT / "src" / "corecast" / "opencl" / "report.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(isinstance(v, ast.Constant) and v.value == "kernel" for v in node.values):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            for k, v in zip(node.keys, node.values):
                if isinstance(v, ast.Dict) and isinstance(k, ast.Constant) and k.value == "sample":
                    keys |= {s.value for s in v.keys if isinstance(s, ast.Constant)}
            return keys
    raise AssertionError("no kernel line in opencl/report.py")


def test_every_key_a_recording_writer_writes_is_in_recording_md():
    # the kernel line's `in_order_launches` and `limits` and a region's `threads_differ`
    # were written (and read back by replay) but named nowhere
    doc = (ROOT / "docs" / "recording.md").read_text()
    named = set(re.findall(r"`(?:\w+\.)?(\w+)`", doc))
    written = set()
    for c in (ROOT / "native").glob("*.c"):
        written |= set(re.findall(r'\\"([a-z_0-9]+)\\":', c.read_text()))
    written |= set(re.findall(r"""'?,\\?"([a-z_0-9]+)\\?":'""", (ROOT / "src/corecast/runtime/bridge.py").read_text()))
    written |= kernel_keys()
    nested = {"speedup", "low", "high", "counters"}  # `predicted` entries, `counters.NAME` rows
    assert {"in_order_launches", "threads_differ", "wall_s"} <= written
    assert not written - named - nested, sorted(written - named - nested)


def method_table(page: Path) -> set[str]:
    """The methods the first cells of ``page``'s table with the `auto` (default) row name."""
    tables = re.split(r"\n(?!\|)", page.read_text())
    (table,) = [b for b in tables if "| `auto` (default) |" in b]
    return {m for line in table.splitlines() if line.startswith("|")
            for m in re.findall(r"`(\w+)`", line.split("|")[1])}


def test_readme_and_predict_md_method_tables_are_the_method_choices():
    from corecast.cli import build_parser

    _, subs = options(build_parser())
    options(subs["predict"])
    (method,) = [a for a in subs["predict"]._actions if "--method" in a.option_strings]
    for page in (ROOT / "README.md", ROOT / "docs" / "predict.md"):
        assert method_table(page) == set(method.choices), (page.name, method_table(page) ^ set(method.choices))
