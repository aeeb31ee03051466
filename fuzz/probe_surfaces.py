"""Hostile inputs against the surfaces added after the first hardening round (issue 28):
safetensors data files, program files, DLPack import and export, the block runner, ``te``,
``tf`` (graph, TensorProto, seed-002 memory model) and ``mge``.

Every input runs in a child process with a memory cap (``RLIMIT_AS``) and a time limit, and
is counted in one column:

- ``ok``: refused with a clean error (an :class:`aliasflow.AliasflowError`; ``BufferError``
  where DLPack's protocol asks for it) and nothing changed, or accepted with the right value;
- ``traceback``: any other exception (``OverflowError``, ``MemoryError``, ``RecursionError``...);
- ``crash``: the child died of a signal (SIGSEGV, SIGBUS, SIGABRT...);
- ``hang``: the child did not answer within the time limit;
- ``modified``: refused, but something (a storage, a recording, a file) changed first;
- ``wrong``: accepted where it must be refused, or a value differing from an independent
  oracle (NumPy, the file's own bytes, the program-order run).

Cases are the named examples of issue 28 plus seeded structured mutations per surface
(``--per-family`` each). A child runs many cases in a row and reports each; when it dies or
stops answering, the case in progress is counted and a new child goes on with the next.

    python fuzz/probe_surfaces.py                      # every case, a table of counts
    python fuzz/probe_surfaces.py --per-family 200 -v  # more mutations, list every finding
    python fuzz/probe_surfaces.py --only safetensors   # case names containing a word

Under AddressSanitizer and UBSan (see fuzz/README.md for the build and the options), without
the address-space cap, which ASan's shadow memory would exceed (ASan's own
``max_allocation_size_mb`` bounds allocations instead):

    LD_PRELOAD=... ASAN_OPTIONS=... python fuzz/probe_surfaces.py --memory-gib 0 --per-family 200
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
sys.path.insert(0, HERE)
sys.path.insert(0, SRC)

COLUMNS = ("ok", "traceback", "crash", "hang", "modified", "wrong")
MARK = "@@probe "


def _limit(memory_bytes: int, cpu_seconds: int):
    def apply():
        if memory_bytes:  # 0: no cap (AddressSanitizer reserves terabytes of address space)
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


class _Child:
    def __init__(self, args):
        env = dict(os.environ, PYTHONPATH=SRC, TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONFAULTHANDLER="")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, preexec_fn=_limit(args.memory_gib << 30, args.cpu_seconds), text=True,
            bufsize=1)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = ""

    def ask(self, name: str, timeout: float):
        """``(column, detail)`` for case ``name``; None when the child is gone or hung."""
        try:
            self.proc.stdin.write(name + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "hang", f"no answer in {timeout:.0f} s"
            if not self.sel.select(left):
                continue
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.wait()
                if code < 0:
                    return "crash", f"signal {-code}"
                return "crash", f"child exited with {code}"
            if line.startswith(MARK):
                got = json.loads(line[len(MARK):])
                return got["column"], got["detail"]

    def close(self):
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()


def _cases():
    import probe_lib
    import probe_cases_core  # noqa: F401 - each registers its cases in probe_lib
    import probe_cases_files  # noqa: F401
    import probe_cases_frontends  # noqa: F401
    return probe_lib


CPU_LIMIT = 5.0  # seconds of CPU one input may take before it counts as a hang


def run_one(name: str) -> tuple[str, str]:
    import tempfile
    import traceback
    lib = _cases()
    fam, _, seed = name.partition("#")
    fn = lib._FAMILIES[fam] if seed else lib._NAMED[name]
    warmup = getattr(fn, "warmup", None)
    if warmup is not None:  # an oracle's import (real TensorFlow) is not the input's work
        warmup()
    cpu = time.process_time()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            old = os.getcwd()
            os.chdir(tmp)
            try:
                fn(int(seed)) if seed else fn()
            finally:
                os.chdir(old)
    except lib.Wrong as exc:
        return "wrong", str(exc)
    except lib.Modified as exc:
        return "modified", str(exc)
    except BaseException as exc:  # noqa: BLE001 - everything else is a traceback
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return "traceback", (f"{type(exc).__name__}: {str(exc)[:200]} "
                             f"(at {os.path.basename(where.filename)}:{where.lineno})")
    used = time.process_time() - cpu
    if used > CPU_LIMIT:
        return "hang", f"took {used:.1f} s of CPU (the limit is {CPU_LIMIT:.0f})"
    return "ok", ""


def child() -> None:
    """Case names on stdin, one verdict per case on the original stdout (fd 1 itself goes to
    /dev/null, so libraries printing there do not disturb the verdicts)."""
    import io
    import warnings
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb"), write_through=True)
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        name = line.strip()
        if name:
            column, detail = run_one(name)
            out.write(MARK + json.dumps({"column": column, "detail": detail}) + "\n")
            out.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-family", type=int, default=40,
                        help="seeded mutations per fuzz family (default 40)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="run case names containing this word")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per case before it counts as a hang (default 30)")
    parser.add_argument("--cpu-seconds", type=int, default=600, help="CPU limit per child")
    parser.add_argument("--memory-gib", type=int, default=3,
                        help="address-space cap per child (0: none, for sanitizer runs)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every finding")
    parser.add_argument("--json", help="write every case's column and detail to this file")
    args = parser.parse_args(argv)

    names = [n for n in _cases().case_names(args.per_family, args.seed) if args.only in n]
    counts: Counter = Counter()
    by_family: dict[str, Counter] = {}
    findings = []
    child = None
    started = time.monotonic()
    for name in names:
        if child is None:
            child = _Child(args)
        got = child.ask(name, args.timeout)
        if got is None:
            child.close()
            child = _Child(args)
            got = child.ask(name, args.timeout)
        column, detail = got
        if column in ("crash", "hang"):
            child.close()
            child = None
        counts[column] += 1
        family = name.split("#")[0].split(":")[0]
        by_family.setdefault(family, Counter())[column] += 1
        if column != "ok":
            findings.append((name, column, detail))
            if args.verbose:
                print(f"{column:9} {name}: {detail}", flush=True)
    if child is not None:
        child.close()
    width = max(len(f) for f in by_family) if by_family else 6
    print(f"{'surface':{width}} " + " ".join(f"{c:>9}" for c in COLUMNS))
    for family in sorted(by_family):
        print(f"{family:{width}} " + " ".join(f"{by_family[family][c]:9}" for c in COLUMNS))
    print(f"{'total':{width}} " + " ".join(f"{counts[c]:9}" for c in COLUMNS))
    print(f"{len(names)} inputs in {time.monotonic() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"case": n, "column": c, "detail": d} for n, c, d in findings], f,
                      indent=1)
    return 1 if any(counts[c] for c in COLUMNS[1:]) else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        child()
    else:
        sys.exit(main())
