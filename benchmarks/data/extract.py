"""Rebuild the corpus CSVs from git snapshots of their source repositories.

Every value is read from a file of the named commit and written unchanged (only units
are resolved where the source prints them, e.g. "2.03us" -> 2030 ns); nothing is
interpolated, averaged or filled in.  Which curves are taken from each source is fixed
below, chosen by workload before looking at how any method predicts them.

    python benchmarks/data/extract.py MIRRORS_DIR

MIRRORS_DIR holds one bare or normal git repository per source, named OWNER+NAME
(``git clone --mirror https://github.com/OWNER/NAME MIRRORS_DIR/OWNER+NAME``); each
source is read at the commit recorded here, so a newer clone gives the same files.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent


def git_show(mirrors: Path, repo: str, commit: str, path: str) -> str:
    d = mirrors / repo.replace("/", "+")
    for cand in (d / "repo" / ".git", d / "repo", d):
        if cand.exists():
            d = cand
            break
    return subprocess.run(["git", "-C", str(d), "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def write(name: str, source: str, metric: str, machine: str, notes: str, rows,
          hw: tuple = ()) -> None:
    """One curve's CSV; ``hw``: the machine's (hardware threads, cores[, sockets,
    fill]), where its provenance states them."""
    rows = [(int(n), v) for n, v in rows]
    assert len(rows) >= 5 and len({n for n, _ in rows}) == len(rows), name
    hw_item = "".join(f", {k}: {v}" for k, v in zip(("hardware threads", "cores", "sockets", "fill"), hw))
    text = (f"# source: {source}, metric: {metric}, machine: {machine}{hw_item}, notes: {notes}\n"
            "threads,value\n" + "".join(f"{n},{v}\n" for n, v in rows))
    (OUT / f"{name}.csv").write_text(text)


def columns(text: str, header_prefix: str = "Threads") -> dict[str, list[tuple[str, str]]]:
    """Whitespace table with a header line naming the columns after the count."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    head = next(ln for ln in lines if ln[0].lstrip("#") in (header_prefix, ""))
    names = head[1:]
    out: dict[str, list] = {n: [] for n in names}
    for ln in lines:
        if ln[0].isdigit():
            for name, v in zip(names, ln[1:]):
                out[name].append((ln[0], v))
    return out


# -- pramalhe/2PLSF: set benchmarks of software TMs and 2PL, machine "cervino" ------------
PLSF = ("pramalhe/2PLSF", "738423b09f7d84363535905e20f708bd26e95f6f")


def plsf(m: Path) -> None:
    for ds in ("ll-1k", "hash-10k", "skiplist-1m", "tree-1m", "ravl-1m"):
        for tm in ("2plsf", "tl2orig", "tiny"):
            path = f"graphs/data/cervino/set-{ds}-{tm}.txt"
            cols = columns(git_show(m, *PLSF, path))
            col = next(c for c in cols if c.endswith("-100%"))
            write(f"2plsf__cervino_set_{ds}_{tm}_100pct", f"github {PLSF[0]} {path} @{PLSF[1]} (column {col})",
                  "throughput", "'cervino' (name of the data folder; hardware not stated in the repository)",
                  f"set {ds} with 100% updates under {tm}; value=operations/s as stored", cols[col])


# -- pramalhe/orcgc: lock-free sets and queues with memory reclamation -----------------------
ORC = ("pramalhe/orcgc", "7a6b70ff741ca29dfb4ed49e6904c5cacc8cacd2")


def orcgc(m: Path) -> None:
    picks = [("set-ll-1k-mh-hp", "-100%"), ("set-ll-1k-mh-orc", "-100%"), ("set-ll-1k-hsh-orc", "-10%"),
             ("set-tree-1m-nata-hp", "-100%"), ("set-tree-1m-nata-orc", "-10%"),
             ("set-skiplist-1m-hsskip-orc", "-100%")]
    for host in ("castor", "moleson"):
        for f, suffix in picks:
            path = f"graphs/data/paper/{host}/{f}.txt"
            cols = columns(git_show(m, *ORC, path))
            col = next(c for c in cols if c.endswith(suffix))
            write(f"orcgc__{host}_{f.replace('-', '_')}_{suffix.strip('-%')}pct",
                  f"github {ORC[0]} {path} @{ORC[1]} (column {col})", "throughput",
                  f"'{host}' (name of the data folder; hardware not stated in the repository)",
                  f"{col}; value=operations/s as stored", cols[col])
        path = f"graphs/data/paper/{host}/q-ll.txt"
        cols = columns(git_show(m, *ORC, path))
        for col in ("MichaelScottQueue-HazardPointers", "LCRQueue-OrcGC"):
            write(f"orcgc__{host}_queue_{col.replace('-', '_').lower()}",
                  f"github {ORC[0]} {path} @{ORC[1]} (column {col})", "throughput",
                  f"'{host}' (name of the data folder; hardware not stated in the repository)",
                  f"queue enqueue/dequeue pairs {col}; value=operations/s as stored", cols[col])


# -- LPD-EPFL/ASCYLIB: OPTIK paper data (PPoPP'16) ---------------------------------------
ASCY = ("LPD-EPFL/ASCYLIB", "3c2d1a231eac3518a4167d7d4a709cb22a3cff6b")
ASCY_MACHINE = {
    "lpdxeon2680": "lpdxeon2680 (labelled 'Xeon20' in scripts/asplos/generate_graphs/combine_data.sh; "
                   "'#HWCs 40 #Nodes 2 SMT 1' in LPD-EPFL/mctop desc/lpdxeon2680.mct "
                   "@05cc61078854c48305d1f2a54ffa39a24b6988ce)",
    "lpd48core": "lpd48core (labelled 'Opteron' in scripts/asplos/generate_graphs/combine_data.sh; "
                 "'#HWCs 48 #Nodes 8 SMT 0' in LPD-EPFL/mctop desc/lpd48core.mct "
                 "@1dbd2b6e9635e4c0a80188bc0220b6df0fc9dbdc)",
}
ASCY_HW = {"lpdxeon2680": (40, 20), "lpd48core": (48, 48)}


def ascylib(m: Path) -> None:
    picks = [("scripts/ppopp/data/data.ll.i1024.u40.w0.dat", ("ll_lazy_0", "ll_gl_0", "ll_optik_0")),
             ("scripts/ppopp/data/data.ht.i512.u40.w0.dat", ("ht_java_0", "ht_optik1_0", "ht_map_0")),
             ("scripts/ppopp/data/data.sl.i1024.u40.w0.dat", ("sl_fraser_0", "sl_herlihy_0")),
             ("scripts/ppopp/data/data.bst.i1024.u40.w0.dat", ("bst_bronson_0", "bst_tk_0")),
             ("scripts/ppopp/data/data.qu.thr.p50.dat", ("lf-qu_ms", "lb-qu_optik1")),
             ("scripts/ppopp/data/a99/lpd48core.ll.i1024.u40.w0.dat", ("ll_lazy_0", "ll_gl_0", "ll_optik_0"))]
    for path, wanted in picks:
        text = git_show(m, *ASCY, path)
        lines = [ln.split() for ln in text.splitlines() if ln.strip()]
        names = next(ln[1:] for ln in lines if ln[0] == "#" and len(ln) > 2 and "params" not in ln[1]
                     and ln[1] != "Result")
        rows = [ln for ln in lines if ln[0].isdigit()]
        for w in wanted:
            i = next(i for i, n in enumerate(names) if n.endswith(w))
            host = "lpd48core" if "lpd48core" in names[i] else "lpdxeon2680"
            stem = Path(path).stem.replace("data.", "").replace(".", "_")
            write(f"ascylib__{host}_{stem}_{w.strip('_0').replace('-', '_')}",
                  f"github {ASCY[0]} {path} @{ASCY[1]} (column {names[i]})", "throughput",
                  ASCY_MACHINE[host], f"{text.splitlines()[0].strip('# ')}; value=operations/s (median as stored)",
                  [(r[0], r[1 + i]) for r in rows], ASCY_HW[host])


# -- hgxl64/mariadb-benchmarks: sysbench 0.5 runs of MariaDB/MySQL --------------------------
MDB = ("hgxl64/mariadb-benchmarks", "6ff617a8b44c6055c9b1c9ba915a6b575c315c53")


def mariadb(m: Path) -> None:
    desc = dict(re.findall(r"^(\d\d) \.\.\. (.+)$", git_show(m, *MDB, "Archive/sysbench-runs/series15/DESC"), re.M))
    for run, server in sorted(desc.items()):
        for mode in ("ro", "rw"):
            rows = []
            for n in (1, 2, 4, 8, 16, 32, 64, 128, 256):
                path = f"Archive/sysbench-runs/series15/res{run}/sysbench.{mode}.{n}.res"
                tps = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", git_show(m, *MDB, path)).group(1)
                rows.append((n, tps))
            write(f"mariadbbench__series15_res{run}_{mode}_{server.split(',')[0].lower().replace('-', '').replace('.', '')}",
                  f"github {MDB[0]} Archive/sysbench-runs/series15/res{run}/sysbench.{mode}.N.res @{MDB[1]} "
                  "(summary line 'transactions: ... (X per sec.)')", "throughput",
                  "not stated in the repository",
                  f"sysbench 0.5 OLTP {'read-only' if mode == 'ro' else 'read-write'}; server {server}; "
                  "x=sysbench client threads; value=transactions/s", rows)


# -- facebook/folly: SharedMutex benchmark results kept in the test's comments ------------
FOLLY = ("facebook/folly", "ff98381ea68687a95c6185326db933aa6124d4c5")
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def folly(m: Path) -> None:
    path = "folly/test/SharedMutexTest.cpp"
    text = git_show(m, *FOLLY, path)
    block = text[text.index("// Following results on 2-socket"):]
    found: dict[tuple[str, str], list] = {}
    for lock, n, kind, t, unit in re.findall(
            r"^// (\w+?)_?(?:reads)?\((\d+)thread(?:_)?(all_write|)\)\s+(?:[\d.]+%\s+)?([\d.]+)(ns|us|ms|s)\s",
            block, re.M):
        key = (lock.removesuffix("_reads"), "all_write" if kind else "reads")
        found.setdefault(key, []).append((n, f"{float(t) * UNIT_NS[unit]:g}"))
    for (lock, kind), rows in sorted(found.items()):
        write(f"folly__e5_2660_sharedmutex_{kind}_{lock}",
              f"github {FOLLY[0]} {path} @{FOLLY[1]} (results comment, row {lock}{'_reads' if kind == 'reads' else ''}(Nthread{'_all_write' if kind != 'reads' else ''}), column time/iter)",
              "time", "2-socket Intel Xeon E5-2660 @ 2.20GHz (per the comment; 2 x 8 cores, 32 hardware threads "
              "per the lscpu of a 2-socket E5-2660 in folly/concurrency/container/test/"
              "FlatCombiningPriorityQueueTest.cpp at the same commit)",
              f"{'read-only' if kind == 'reads' else 'write-only'} lock/unlock loop, the ops split across N threads; "
              "value=wall time per operation in ns", rows, (32, 16))


# -- Percona-Lab-results/2026-mariadb-threadpool: sysbench 1.x read-write ------------------
PCT = ("Percona-Lab-results/2026-mariadb-threadpool", "1bee1b390f520d148a90201293623e42534f08b7")


def percona(m: Path) -> None:
    for server in ("mariadb/11.8.6-MariaDB-ubu2404", "mariadb/12.2.2-MariaDB-ubu2404", "mysql/8.4.8",
                   "mysql/9.7.0-er2", "mariadb-thp/11.8.6-MariaDB-ubu2404", "mariadb-thp/12.2.2-MariaDB-ubu2404"):
        for tier in ("Tier2G", "Tier32G"):
            rows = []
            for n in (1, 4, 16, 32, 64, 128, 256, 512):
                path = f"benchmark_logs/{server}/{tier}_RW_{n}th.sysbench.txt"
                tps = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", git_show(m, *PCT, path)).group(1)
                rows.append((n, tps))
            tag = server.replace("/", "_").replace("-MariaDB-ubu2404", "").replace(".", "").replace("-", "")
            write(f"percona__gold6230_{tag}_{tier.lower()}_rw",
                  f"github {PCT[0]} benchmark_logs/{server}/{tier}_RW_Nth.sysbench.txt @{PCT[1]} "
                  "(summary line 'transactions: ... (X per sec.)')", "throughput",
                  "2 x Intel Xeon Gold 6230 (40 cores, 80 threads, 2 NUMA nodes) per HARDWARE.md",
                  f"sysbench OLTP read-write, buffer pool tier {tier}, server {server}; x=client threads; value=transactions/s",
                  rows)


# -- paulmckrcu/perfbook: measured data behind the book's figures ---------------------------
PB = ("paulmckrcu/perfbook", "4c69e8910b5f646c3fe9846f812b3dee6f37caeb")


def perfbook(m: Path) -> None:
    hps = ("448-CPU Intel Xeon Platinum 8176 system 'hps' (per cpuinfo.hps next to the data: 8 sockets, "
           "28 cores and 56 siblings each)")
    d = "CodeSamples/datastruct/hash/data/hps.perf.2020.11.26a"
    for impl in ("hash_bkt", "hash_bkt_hazptr", "hash_bkt_qsbr", "hash_bkt_rcu", "hash_global", "hash_unsync"):
        path = f"{d}/perftest.{impl}.hps.2020.11.26a.dat"
        rows = [ln.split()[:2] for ln in git_show(m, *PB, path).splitlines() if ln.strip() and ln[0].isdigit()]
        write(f"perfbook__hps_hashtable_{impl}", f"github {PB[0]} {path} @{PB[1]} (column 2)", "throughput", hps,
              f"hash-table lookups, {impl}; value=lookups per millisecond (plots.sh ylabel)", rows, (448, 224))
    d = "CodeSamples/defer/data/hps.2019.12.17a"
    for impl in ("hazptr", "rcu", "refcnt", "seq", "qsbr"):
        path = f"{d}/route_{impl}.hps.2019.12.17a.dat"
        try:
            text = git_show(m, *PB, path)
        except subprocess.CalledProcessError:
            continue
        rows = [ln.split()[:2] for ln in text.splitlines() if ln.strip() and ln[0].isdigit()]
        write(f"perfbook__hps_route_{impl}", f"github {PB[0]} {path} @{PB[1]} (column 2)", "throughput",
              "host 'hps' per the file name (no cpuinfo next to this data; the hash-table data of "
              "2020.11.26a from a host of that name lists 448 Xeon Platinum 8176 CPUs)",
              f"route-table lookups protected by {impl}; value=lookups per millisecond (plots.sh ylabel)", rows)


# -- ignasi35/locks-benchmark: JMH lock strategies on the JVM -------------------------------
LOCKS = ("ignasi35/locks-benchmark", "1a48950ae6742e100ba6e450a7b4b85ccd4ca873")


def locks(m: Path) -> None:
    path = "results/2014-05-01/results/benchmark-results.data"
    lines = git_show(m, *LOCKS, path).splitlines()
    names = lines[1].lstrip("#").split()
    rows = [ln.split() for ln in lines if ln.strip() and ln[0].isdigit()]
    for i, name in enumerate(names):
        if name.endswith("mean-error") or name.startswith(("direct", "nb-threads")):
            continue
        write(f"locksbench__e5_2620_{name.replace('-', '_')}", f"github {LOCKS[0]} {path} @{LOCKS[1]} (column {name})",
              "throughput", "2 x Intel Xeon E5-2620 (12 cores, 24 hardware threads) per results/2014-05-01/README.md",
              f"JMH counter increment guarded by {name.rsplit('-', 1)[0]}, java -jar ... -t N; value=JMH score ops/ms "
              "(decimal comma read as a point)", [(r[0], r[i].replace(",", ".")) for r in rows], (24, 12))


# -- cmuparlay/flock: a re-implementation of LFCA trees, with a results log on a laptop ------
LFCA = ("cmuparlay/flock", "81c94a140f0189751713edec1a9022d07f29a2df")


def lfca(m: Path) -> None:
    path = "ds/lfca/performance-evaluation.txt"
    text = git_show(m, *LFCA, path)
    # i7-8550U: 4 cores, 8 threads (TechPowerUp CPU database); the log's "8-core" is its 8
    # logical CPUs: main.cpp runs MRLOCK up to std::thread::hardware_concurrency(), and every
    # MRLOCK row holds 8 values.
    machine = ("laptop with an 'Intel i7-8550U CPU' per the log's first line (which calls it 8-core: "
               "8 logical CPUs, as main.cpp runs MRLOCK up to std::thread::hardware_concurrency() "
               "and its rows hold 8 values; the i7-8550U has 4 cores and 8 threads)")
    blocks = re.findall(r"Weights: \(insert: ([\d.]+), remove: ([\d.]+), lookup: ([\d.]+), "
                        r"range query: ([\d.]+) \(Size (\d+)\)\)[^L]*\nLFCA, ([^\n]+)\nMRLOCK, ([^\n]+)", text)
    for ins, rem, look, rq, size, *trees in blocks:
        pct = [f"{float(w) * 100:g}" for w in (ins, rem, look, rq)]
        tag = f"upd{float(ins) * 200:g}_look{pct[2]}" + (f"_rq{pct[3]}_size{size}" if float(rq) else "")
        for tree, line in zip(("lfca", "mrlock"), trees):
            rows = list(enumerate(line.split(", "), start=1))
            write(f"lfca__i7_8550u_{tree}_{tag.replace('.', 'p')}",
                  f"github {LFCA[0]} {path} @{LFCA[1]} (row {tree.upper()}, value i at i threads)", "time",
                  machine, f"{tree.upper()} search tree, 200000 random operations split across N threads "
                  f"(insert {pct[0]}%, remove {pct[1]}%, lookup {pct[2]}%, range query {pct[3]}% of size {size}) "
                  "as ds/lfca/main.cpp runs them; value=wall time in ms of one run", rows, (8, 4))


# -- xacrimon/conc-map-bench: Rust concurrent hash maps (bustle, a port of libcuckoo's benchmark)
CMB = "xacrimon/conc-map-bench"
# (commit, machine as the README of that commit states it, (hardware threads, cores), tag)
CMB_RUNS = (
    ("1aef2f48d285a77f0a832ac318ed8807ba095c07",
     "AWS EC2 M7i.8xlarge (Sapphire Rapids 8488C) per README.md (32 vCPUs, 16 cores: AWS's instance table)",
     (32, 16), "m7i"),
    ("55d6852038d533eae7749b7221845be1b4155f2c",
     "AMD Ryzen 7 4800HS, 8 cores, HT enabled per README.md (16 hardware threads)", (16, 8), "r4800hs"),
)
# The std hasher's maps measured on both machines, all three workloads.
CMB_MAPS = ("CHashMap", "CrossbeamSkipMap", "DashMap", "Evmap", "Flurry")


def concmap(m: Path) -> None:
    for commit, machine, hw, tag in CMB_RUNS:
        for workload in ("ReadHeavy", "Exchange", "RapidGrow"):
            path = f"results/{workload}.std.csv"
            rows = [ln.split(",") for ln in git_show(m, CMB, commit, path).splitlines()[1:] if ln.strip()]
            for name in CMB_MAPS:
                curve = [(r[2], r[4]) for r in rows if r[0] == name]
                if len(curve) < 5:  # evmap's RapidGrow run on the Ryzen stops at 4 threads
                    continue
                write(f"concmap__{tag}_{workload.lower()}_{name.lower()}",
                      f"github {CMB} {path} @{commit} (rows {name}, column throughput)", "throughput", machine,
                      f"{name} under the {workload} workload with the std hasher, a fixed total of operations "
                      "(column total_ops) split across N threads; value=operations/s as stored",
                      curve, hw)


# -- kuszmaul/SuperMalloc: malloc-test (K producers, K consumers) under five allocators -------
SUPERMALLOC = ("kuszmaul/SuperMalloc", "709663fb81ba091b0a78058869a644a272f4163d")


def supermalloc(m: Path) -> None:
    # The count is K producer threads, each with a consumer thread: 2K threads on the 32
    # hardware threads, so the machine is not given as hardware threads per count.
    machine = ("16-core (2 sockets + hyperthreading) 2.4GHz E5-2665 (Sandy Bridge), 32 hardware threads, "
               "per paper/ismm15/supermalloc.tex")
    sizes = {"1K": "1 KiB objects (the paper's figure)",
             "vK": "variable-size objects (file name vK; not described in the paper)"}
    for size, what in sizes.items():
        path = f"paper/ismm15/new-malloc-test-{size}-tempo-aggregated.data"
        cols = columns(git_show(m, *SUPERMALLOC, path), "threads")
        for col in (c for c in cols if c.endswith("_avg")):
            alloc = col.removesuffix("_avg")
            write(f"supermalloc__e5_2665_malloctest_{size.lower()}_{alloc.split('_')[0]}",
                  f"github {SUPERMALLOC[0]} {path} @{SUPERMALLOC[1]} (column {col})", "throughput", machine,
                  f"malloc-test with K producer and K consumer threads (count = K), {what}, under {alloc}; "
                  "value=malloc()s per second, the average of 8 trials as stored", cols[col])


# -- urcs-sync/ralloc: persistent-memory and DRAM allocators (ISMM 2020 data) ----------------
RALLOC = ("urcs-sync/ralloc", "6b9d7a1af75ba75232107bfaeb6a034799d5b182")
RALLOC_ALLOCS = {"r": "Ralloc", "mak": "Makalu", "je": "jemalloc", "lr": "LRMalloc", "pmdk": "PMDK"}
# benchmark -> (metric, the unit of its value column; Larson's as data/genfigs.R labels it)
RALLOC_BENCHES = {"threadtest": ("time", "seconds"), "shbench": ("time", "seconds"),
                  "prod-con": ("time", "seconds"),
                  "larson": ("throughput", "operations per second, as data/genfigs.R labels it")}


def ralloc(m: Path) -> None:
    # The data commits name the machine (6cfdb91: "new data on 2x20a"); the benchmarks pin
    # threads by pinning_map_2x20a_1, a map of its 80 logical CPUs.
    machine = ("'2x20a' (data commit 6cfdb91 'new data on 2x20a'): 2 sockets x 20 cores with hyperthreads, "
               "80 logical CPUs in test/benchmark/AllocatorMacro.hpp's pinning_map_2x20a_1, which fills one "
               "socket's cores, then their hyperthreads, then the other socket")
    for bench, (metric, unit) in RALLOC_BENCHES.items():
        for tag, alloc in RALLOC_ALLOCS.items():
            path = f"data/{bench}/{bench}_{tag}.csv"
            header, *lines = git_show(m, *RALLOC, path).splitlines()
            column = header.split(",")[1]
            runs: dict[int, list[float]] = {}
            for ln in lines:
                n, v, _ = ln.split(",")
                runs.setdefault(int(n), []).append(float(v))
            (repeats,) = {len(v) for v in runs.values()}  # every count was run equally often
            write(f"ralloc__{bench.replace('-', '')}_{tag}",
                  f"github {RALLOC[0]} {path} @{RALLOC[1]} (column {column})", metric, machine,
                  f"{bench} under {alloc}; value={column} ({unit}), the mean of the {repeats} runs per count, "
                  "as data/genfigs.R plots it", [(n, sum(v) / len(v)) for n, v in sorted(runs.items())],
                  (80, 40, 2, "sockets"))


# -- urcs-sync/Interval-Based-Reclamation: memory reclamation under four lock-free maps ------
# (PPoPP 2018 paper's experiment program; the same Rochester group as ralloc, another
# machine, harness and pinning code)
IBR = ("urcs-sync/Interval-Based-Reclamation", "10c25f9af13cae8e8cce958ace674281a8a8c7b4")
IBR_FILES = ("list", "hashmap", "bonsai", "natarajan")


def ibr(m: Path) -> None:
    # Every row names the machine (column machine) and its PUs (column cores, which
    # ext/parharness/TestConfig.cpp fills with hwloc's count of PUs); the empty affinity
    # column is the harness's default, buildDefaultAffinity: one socket's cores, then their
    # further PUs, then the next socket.
    machine = ("'node2x18a.cs.rochester.edu' (the rows' machine column): 2 sockets x 18 cores per its name, "
               "72 PUs per the rows' cores column (hwloc's PU count in ext/parharness/TestConfig.cpp); the rows' "
               "empty affinity column is that file's default pinning, which fills one socket's cores, then "
               "their further PUs, then the next socket")
    for f in IBR_FILES:
        path = f"data/history_data/{f}_result.csv"
        header, *lines = git_show(m, *IBR, path).splitlines()
        cols = header.split(",")
        rows = [dict(zip(cols, ln.split(","))) for ln in lines if ln.strip()]
        assert {(r["machine"], r["cores"], r["affinity"]) for r in rows} == {("node2x18a.cs.rochester.edu", "72", "")}
        (interval,) = {r["interval"] for r in rows}
        for env in sorted({r["environment"] for r in rows}):
            runs: dict[int, list[int]] = {}
            for r in rows:
                if r["environment"] == env:
                    runs.setdefault(int(r["threads"]), []).append(int(r["ops"]))
            (rideable,) = {r["rideable"] for r in rows if r["environment"] == env}
            (repeats,) = {len(v) for v in runs.values()}  # every count was run equally often
            tracker = env.removeprefix("tracker=")
            write(f"ibr__node2x18a_{f}_{tracker.lower()}",
                  f"github {IBR[0]} {path} @{IBR[1]} (rows {env}, column ops)", "throughput", machine,
                  f"{rideable} (insert 50%, remove 50%, key range 100000) under the {tracker} tracker; "
                  f"value=operations/s, the largest ops of the {repeats} runs per count over the {interval} s "
                  "interval, as data/scripts/genfigs.R plots it (ops_max)",
                  [(n, max(v) / int(interval)) for n, v in sorted(runs.items())], (72, 36, 2, "sockets"))


SOURCES = (plsf, orcgc, ascylib, mariadb, folly, percona, perfbook, locks, lfca, concmap, supermalloc, ralloc, ibr)

INDEX_HEAD = """# Corpus of measured scalability curves (issue 15)

Curves from public sources that corecast was never tuned on, for `benchmarks/accuracy.py
--loso` (leave one source out). Same format as `../shared/datasets`: line 1 is `# source:
github OWNER/REPO PATH @COMMIT (column ...), metric: throughput|time, machine: ...,
[hardware threads: N, cores: C, [sockets: S, fill: F,]] notes: ...`, then `threads,value`. Values are copied from the named file at the named commit
(units resolved where the source prints them); nothing is interpolated. "threads" is what
the source swept: worker threads, or client connections for the database servers.
"hardware threads" (logical CPUs) and "cores" of the machine measured are given only where a
source states its hardware, and not for the database servers, whose count is client
connections, not threads on a CPU, nor for SuperMalloc's malloc-test, whose count K runs K
producer and K consumer threads, not all of them runnable at once.
"sockets" and "fill" are given where the source pins its threads in an order other than a
thread on every core first (`fill: sockets`: one socket's cores, then their hyperthreads,
then the next socket). `accuracy.py` passes them to `predict` (`--hw-threads`, `--cores`,
`--sockets`, `--fill`).
`extract.py` rebuilds every file from git clones of the sources and writes this index.

The source of a curve (its LOSO group) is the part of the file name before `__`.
`2plsf` and `orcgc` are separate repositories (different papers and machines) of the same
GitHub owner, pramalhe; `ralloc` and `ibr` are separate repositories (different papers,
machines and pinning code) of the same group, urcs-sync (University of Rochester); every other
source is independent of the rest. The last four (concmap, supermalloc, ralloc, ibr) were
added after auto's rule was chosen on the first nine; ibr (#41) because ralloc was the only
source whose threads cross a socket boundary in an order the source states, chosen for that
(2 or more sockets, sockets, cores, SMT and pinning order stated by the source, counts on both
sides of the boundary) before any method was run on it.

| source | repository | what | curves |
|---|---|---|---|
| 2plsf | pramalhe/2PLSF | sets under software TMs / 2PL, 100% updates (2PLSF paper, PPoPP 2023, per its README) | {2plsf} |
| orcgc | pramalhe/orcgc | lock-free sets and queues with memory reclamation (OrcGC), two machines | {orcgc} |
| ascylib | LPD-EPFL/ASCYLIB | lists, hash tables, skip lists, BSTs, queues (`scripts/ppopp` data of the OPTIK paper), two machines | {ascylib} |
| mariadbbench | hgxl64/mariadb-benchmarks | sysbench 0.5 OLTP ro/rw, MariaDB 5.5/10.0 and MySQL 5.5/5.6 (series15) | {mariadbbench} |
| folly | facebook/folly | SharedMutex benchmark results kept in `folly/test/SharedMutexTest.cpp` | {folly} |
| percona | Percona-Lab-results/2026-mariadb-threadpool | sysbench OLTP read-write, MariaDB 11.8/12.2 (+thread pool), MySQL 8.4/9.7 | {percona} |
| perfbook | paulmckrcu/perfbook | hash-table and route-table lookups (RCU, hazard pointers, locks) on host `hps` | {perfbook} |
| locksbench | ignasi35/locks-benchmark | JMH counter under synchronized, RW lock, atomics, LongAdder, StampedLock | {locksbench} |
| lfca | cmuparlay/flock | LFCA and MRLOCK search trees, fixed work over 1-32 / 1-8 threads on a 4-core, 8-thread laptop (`ds/lfca/performance-evaluation.txt`) | {lfca} |
| concmap | xacrimon/conc-map-bench | Rust concurrent maps (CHashMap, crossbeam SkipMap, DashMap, evmap, Flurry) under three workloads, on a 16-core, 32-thread AWS M7i and an 8-core, 16-thread Ryzen 7 4800HS | {concmap} |
| supermalloc | kuszmaul/SuperMalloc | malloc-test (K producers and K consumers) under dlmalloc, Hoard, jemalloc, tbbmalloc and SuperMalloc, 1-32 producers on a 2-socket, 16-core E5-2665 (ISMM 2015 paper's data) | {supermalloc} |
| ralloc | urcs-sync/ralloc | threadtest, shbench, prod-con and Larson under Ralloc, Makalu, jemalloc, LRMalloc and PMDK, 1-88 threads on a 2-socket, 40-core, 80-thread machine (ISMM 2020 paper's data) | {ralloc} |
| ibr | urcs-sync/Interval-Based-Reclamation | a linked list, a hash map, Bonsai and Natarajan trees (50% inserts, 50% removes) under eight memory-reclamation trackers (epochs, hazard pointers and eras, interval-based), 1-100 threads on a 2-socket, 36-core, 72-thread machine (PPoPP 2018 paper's experiment program, `data/history_data`) | {ibr} |

| file | source | metric | machine | hardware threads / cores | points | range | best at | notes |
|---|---|---|---|---|---|---|---|---|
"""


def index() -> None:
    rows, counts = [], {}
    for p in sorted(OUT.glob("*.csv")):
        first, _, *body = p.read_text().splitlines()
        # Values may hold ", " themselves: split only before the known keys.
        parts = re.split(r"(?:^# |, )(source|metric|machine|hardware threads|cores|sockets|fill|notes): ", first)[1:]
        items = dict(zip(parts[::2], parts[1::2]))
        pts = [(int(a), float(b)) for a, b in (ln.split(",") for ln in body)]
        perf = [v if items["metric"] == "throughput" else 1 / v for _, v in pts]
        best = pts[perf.index(max(perf))][0]
        top = pts[-1][0]
        where = "best at max count" if best == top else f"best at {best} of {top}"
        layout = f" ({items['sockets']} sockets, filled {items['fill']} first)" if "fill" in items else ""
        group = p.stem.split("__")[0]
        counts[group] = counts.get(group, 0) + 1
        rows.append(f"| {p.name} | {items['source'].removeprefix('github ')} | {items['metric']} | "
                    f"{items['machine']} | {items.get('hardware threads', '-')} / {items.get('cores', '-')}{layout} | {len(pts)} | {pts[0][0]}-{top} | {where} | {items['notes']} |")
    (OUT / "README.md").write_text(INDEX_HEAD.format(**counts) + "\n".join(rows) + "\n")


if __name__ == "__main__":
    mirrors = Path(sys.argv[1])
    for extract in SOURCES:
        extract(mirrors)
    index()
