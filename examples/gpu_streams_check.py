"""Stream races on a real GPU: aliasflow's verdicts next to PyTorch's CUDA sanitizer's.

Each program below is a small CUDA program on two streams. It is run twice, each time in a
fresh Python process: traced by aliasflow (``af.trace()``, ``t.races()``), and under CSAN
(``TORCH_CUDA_SANITIZER=1``, which raises ``CUDASanitizerErrors`` when it sees a race). The
table shows both verdicts and what is true of the program.

    python examples/gpu_streams_check.py            # prints a Markdown table
    python examples/gpu_streams_check.py --json     # the same as JSON

Without CUDA it says so and exits 0. The exit code is 1 if aliasflow's verdict differs from
the truth on any program, 0 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

N = 1 << 20


def correct_prefetch(torch):
    """Side stream computes what the default stream then consumes, after wait_stream."""
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    x = torch.randn(N, device="cuda")
    side.wait_stream(main)
    with torch.cuda.stream(side):
        y = x * 2
    main.wait_stream(side)
    z = y + 1
    y.record_stream(main)           # y was made on side, is used (and dropped) on main
    torch.cuda.synchronize()
    return {"result_ok": bool(torch.allclose(z, x * 2 + 1))}


def prefetch_without_wait(torch):
    """The same without main.wait_stream(side): z may read y before it is written."""
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    x = torch.randn(N, device="cuda")
    side.wait_stream(main)
    with torch.cuda.stream(side):
        y = x * 2
    z = y + 1
    torch.cuda.synchronize()
    return {"result_ok": bool(torch.allclose(z, x * 2 + 1))}


def side_write_slice_read(torch):
    """Side writes x[:N/2 + 1024]; main reads x[N/2:] (another first element) unsynced."""
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    x = torch.zeros(N, device="cuda")
    side.wait_stream(main)
    with torch.cuda.stream(side):
        x[:N // 2 + 1024].add_(1)
    s = x[N // 2:].sum()
    torch.cuda.synchronize()
    return {"sum": float(s)}


def side_write_same_start_read(torch):
    """The same race where both views start at x[0] (the case CSAN can see)."""
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    x = torch.zeros(N, device="cuda")
    side.wait_stream(main)
    with torch.cuda.stream(side):
        x.add_(1)
    s = x[:1024].sum()
    torch.cuda.synchronize()
    return {"sum": float(s)}


def reuse_after_free(torch, record_stream=False):
    """x (made on main) is read on side; x is dropped without record_stream and its block
    handed to y on main, which overwrites it while side's read may still be pending."""
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    x = torch.empty(N, device="cuda")
    x.fill_(1)
    side.wait_stream(main)
    with torch.cuda.stream(side):
        s = x.sum()
    if record_stream:
        x.record_stream(side)
    ptr = x.data_ptr()
    del x
    y = torch.empty(N, device="cuda")
    reused = y.data_ptr() == ptr
    y.fill_(2)
    torch.cuda.synchronize()
    return {"block_reused": reused, "sum": float(s)}


def reuse_with_record_stream(torch):
    return reuse_after_free(torch, record_stream=True)


PROGRAMS = {
    "correct prefetch (wait_stream)": (correct_prefetch, False),
    "prefetch without wait_stream": (prefetch_without_wait, True),
    "side write, default read of a later slice": (side_write_slice_read, True),
    "side write, default read from element 0": (side_write_same_start_read, True),
    "freed block reused without record_stream": (reuse_after_free, "if reused"),
    "freed block with record_stream": (reuse_with_record_stream, False),
}


def child(name: str, mode: str) -> dict:
    """Run one program in this process (``mode`` "af" or "csan") and describe the outcome."""
    import torch
    fn = PROGRAMS[name][0]
    if mode == "af":
        import aliasflow as af
        with af.trace(values=False) as t:
            facts = fn(torch)
        races = t.races()
        return {"races": len(races), "facts": facts,
                "found": [f"{r.conflict} {r.ops[0].aten} on {r.streams[0]} / "
                          f"{r.ops[1].aten} on {r.streams[1]}, {r.count} elements"
                          f"{' (memory reuse)' if r.reuse else ''}" for r in races[:4]]}
    try:
        facts = fn(torch)
    except Exception as exc:   # CSAN raises CUDASanitizerErrors from the racing kernel
        if type(exc).__name__ == "CUDASanitizerErrors":
            return {"races": len(exc.errors), "facts": {}, "found": [str(exc)]}
        raise
    return {"races": 0, "facts": facts, "found": []}


def run_child(name: str, mode: str) -> dict:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TORCH_CUDA_SANITIZER", None)
    if mode == "csan":
        env["TORCH_CUDA_SANITIZER"] = "1"
    proc = subprocess.run([sys.executable, __file__, "--child", name, mode], env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", nargs=2, metavar=("PROGRAM", "MODE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    import torch
    if not torch.cuda.is_available():
        print("CUDA is not available here: nothing to check (run this on a GPU machine).")
        return 0
    rows, wrong = [], 0
    for name, (_, truth) in PROGRAMS.items():
        got_af, got_csan = run_child(name, "af"), run_child(name, "csan")
        if truth == "if reused":
            truth = bool(got_af.get("facts", {}).get("block_reused"))
        verdict = lambda r: ("error: " + r["error"]) if "error" in r else \
            (f"race ({r['races']})" if r["races"] else "no race")  # noqa: E731
        ok = "error" not in got_af and bool(got_af["races"]) == truth
        wrong += not ok
        rows.append({"program": name, "truth": "race" if truth else "no race",
                     "aliasflow": verdict(got_af), "csan": verdict(got_csan),
                     "aliasflow_right": ok, "facts": got_af.get("facts"),
                     "aliasflow_found": got_af.get("found"),
                     "csan_found": [s[:400] for s in got_csan.get("found", [])]})
    if args.json:
        print(json.dumps({"torch": torch.__version__,
                          "device": torch.cuda.get_device_name(), "rows": rows}, indent=2))
    else:
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}\n")
        print("| program | truth | aliasflow | CSAN | aliasflow right |")
        print("| --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['program']} | {r['truth']} | {r['aliasflow']} | {r['csan']} | "
                  f"{'yes' if r['aliasflow_right'] else 'NO'} |")
        for r in rows:
            print(f"\n{r['program']}: facts {r['facts']}")
            for line in r["aliasflow_found"] or []:
                print(f"  aliasflow: {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
