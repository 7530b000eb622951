"""native/procparse.h, the sampler's /proc parsing by hand (strtol/strtoull in place of
sscanf, which was most of a sample build's instructions), against sscanf with the formats it
replaced, on /proc-like text: the CPU lines of /proc/stat (the total line among them) and a
task's schedstat, well formed and not.  Counts only: nothing here is timed."""
from __future__ import annotations

import random
import subprocess

from .helpers import NATIVE_SOURCE, TIMEOUT

# Reads NUL-terminated inputs from stdin; for each, both parsers' verdicts and, where both
# took it, their figures; "differs" lines for every input where they disagree.
COMPARE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procparse.h"

static int differs(const char *kind, const char *text) {
    printf("differs %s: [%s]\n", kind, text);
    return 1;
}

int main(void) {
    static char in[1 << 22];
    size_t len = fread(in, 1, sizeof in - 1, stdin);
    in[len] = 0;
    int bad = 0, n = 0;
    for (char *text = in; text < in + len; text += strlen(text) + 1, n++) {
        int cpu = 0, cpu2 = 0;
        unsigned long long v[7] = {0}, w[7] = {0};
        int ok = sscanf(text, "cpu%d %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2],
                        &v[3], &v[4], &v[5], &v[6]) == 8;
        int mine = cc_parse_cpu_line(text, &cpu2, w);
        if (ok != mine || (ok && (cpu != cpu2 || memcmp(v, w, sizeof v))))
            bad += differs("cpu", text);
        unsigned long long e = 0, r = 0, e2 = 0, r2 = 0;
        ok = sscanf(text, "%llu %llu", &e, &r) == 2;
        mine = cc_parse_schedstat(text, &e2, &r2);
        if (ok != mine || (ok && (e != e2 || r != r2)))
            bad += differs("schedstat", text);
        if (ok)
            printf("schedstat %llu %llu\n", e, r);
    }
    printf("%d inputs, %d differ\n", n, bad);
    return bad != 0;
}
"""

CASES = [
    "cpu  4705 150 1120 16250 520 0 44 0 0 0\n",  # the total line: its first figure read as the CPU
    "cpu  12 0 3 900 1 0 2 0 0 0\n",  # ... a small one, within the CPU numbers
    "cpu0 4705 150 1120 16250 520 0 44 0 0 0\n",
    "cpu15 1 2 3 4 5 6 7\n",  # exactly 8 fields
    "cpu3 1 2 3 4 5 6\n",  # fewer than 8 fields
    "cpu3 1 2 3\ncpu4 5 6 7 8 9 10 11\n",  # short, the next line after it
    "cpu3 1 2 3\n4 5 6 7 8\n",  # short, figures on the next line
    "cpu1 1 2 3 4 5 6 7 8 9 10 11 12 13\n",  # extra fields
    "cpu",
    "cpu ",
    "cpu\n",
    "cpu7",
    "cpux 1 2 3 4 5 6 7\n",
    "cpu 1",
    "   cpu0 1 2 3 4 5 6 7\n",  # leading spaces: sscanf's literal "cpu" does not skip them
    "cpu   2    1\t2 3  4 5 6    7\n",  # spaces and tabs between figures
    "cpu0 99999999999999999999999 2 3 4 5 6 7\n",  # past unsigned long long
    "cpu99999999999 1 2 3 4 5 6 7\n",  # past int
    "cpu99999999999999999999999 1 2 3 4 5 6 7\n",  # past long
    "cpu-1 1 2 3 4 5 6 7\n",
    "cpu+2 1 2 3 4 5 6 7\n",
    "cpu2 -1 2 3 4 5 6 7\n",
    "cpu2 1 2 3 4 5 6 7x\n",
    "cpu2 1 2 3 4 5 6 x7\n",
    "cpu2 0x1f 2 3 4 5 6 7\n",
    "cpu2 18446744073709551615 18446744073709551616 3 4 5 6 7\n",
    "intr 1 2 3 4 5 6 7 8\n",
    "",
    "123456789 987654321 42\n",  # a task's schedstat
    "123456789 987654321\n",
    "123456789\n",
    "123456789",
    "  5   6\n",
    "\n5\n6\n",
    "5 x\n",
    "x 5 6\n",
    "99999999999999999999999 5 6\n",
    "-5 -6\n",
    "5 -\n",
    "5 +\n",
]


def fuzz_cases(n: int, seed: int = 40) -> list[str]:
    """Lines made of the pieces above at random: fields, signs, spaces, cut-offs."""
    rnd = random.Random(seed)
    pieces = ["cpu", "cpu ", "cpu", " ", "  ", "\t", "\n", "-", "+", "x", "0", "7", "42", "1024",
              "4294967296", "18446744073709551615", "18446744073709551616", "9" * 25]
    out = []
    for _ in range(n):
        head = rnd.choice(["cpu", "cpu ", "cpu  ", "cpu" + str(rnd.randrange(0, 2000)), ""])
        fields = [rnd.choice(pieces[7:]) + rnd.choice(["", "", "", rnd.choice(pieces)])
                  for _ in range(rnd.randrange(0, 12))]
        text = head + "".join(rnd.choice([" ", " ", "  ", "\t", "\n"]) + f for f in fields)
        out.append(text[: rnd.randrange(len(text) + 1)] if rnd.random() < 0.2 else text)
    return out


def test_hand_parsing_answers_as_sscanf(build):
    prog = build("procparse_compare", COMPARE_C, f"-I{NATIVE_SOURCE}")
    inputs = CASES + fuzz_cases(3000)
    got = subprocess.run([prog], input="\0".join(inputs).encode() + b"\0", capture_output=True,
                         timeout=TIMEOUT)
    out = got.stdout.decode()
    assert got.returncode == 0, out[-4000:]
    assert f"{len(inputs)} inputs, 0 differ" in out
    # The comparison sees what it should: sscanf took these schedstat lines, and so did procparse.h.
    assert "schedstat 123456789 987654321\n" in out and "schedstat 18446744073709551615 5\n" in out
