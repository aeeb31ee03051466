"""The differential probe behind the NumPy tracer's bug classes (not a test: run it by hand on
a new NumPy to see which operations compute overlapping or strided writes wrongly).

    python tests/interop/numpy_trace/probe_numpy_overlap.py [cases per family]

1. For every operation family of ``tests/np_overlap_cases.py``: random cases (overlapping
   views of one buffer, shifted sources), how many differ from copy semantics, and the
   smallest differing case written as a program over an explicit buffer.
2. Every one-input ufunc from strided inputs into strided outputs (no overlap), each dtype
   it takes: where the result differs from the same ufunc on contiguous copies by more than
   8 units in the last place (transcendental loops legitimately differ by a few).

Nothing here imports aliasflow.
"""
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import np_overlap_cases as cases  # noqa: E402


def _program(ns, buf):
    base = cases.address(buf)
    lines = [f"buf = np.zeros({buf.nbytes}, np.uint8); buf[:] = {buf.tolist()!r}"]
    for k, v in ns.items():
        if isinstance(v, np.ndarray) and v.base is not None and \
                0 <= cases.address(v) - base < buf.nbytes:
            lines.append(f"{k} = np.ndarray({v.shape}, {v.dtype.str!r}, buffer=buf, "
                         f"offset={cases.address(v) - base}, strides={v.strides})")
        elif isinstance(v, list):
            lines.append(f"{k} = [" + ", ".join(
                f"np.ndarray({x.shape}, {x.dtype.str!r}, buffer=buf, "
                f"offset={cases.address(x) - base}, strides={x.strides})" for x in v) + "]")
        else:
            lines.append(f"{k} = np.array({v.tolist()!r})" if isinstance(v, np.ndarray)
                         else f"{k} = {v!r}")
    return lines


def families(n):
    for fam in cases.FAMILIES:
        plain = compile(fam.code, "<probe>", "exec")
        hits, total, best = 0, 0, None
        for seed in range(n):
            case = fam.make(np.random.default_rng(seed))
            if case is None:
                continue
            buf, ns, written = case
            expected = cases.copy_semantics(plain, ns, written, buf)
            if expected is None:
                continue
            before = buf.copy()
            try:
                with np.errstate(all="ignore"):
                    exec(plain, {"np": np}, dict(ns))
            except Exception:  # noqa: BLE001 - NumPy refuses these operands
                continue
            total += 1
            if cases.differ(buf, expected, ns, written, buf, fam.exact):
                hits += 1
                size = sum(v.size for v in ns.values() if isinstance(v, np.ndarray))
                if best is None or size < best[0]:
                    buf_before = before.copy()
                    best = (size, _program(ns, buf_before))
        print(f"{fam.name}: {hits} of {total} cases differ from copy semantics")
        if best is not None:
            print("    " + "\n    ".join(best[1] + [fam.code]))


def close(a, b):
    if a.dtype.kind == "c":
        return close(a.real, b.real) and close(a.imag, b.imag)
    if a.dtype.kind == "f":
        tol = 8 * np.finfo(a.dtype).eps * np.maximum(np.abs(a), np.abs(b))
        return bool(((a == b) | (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= tol)).all())
    return np.array_equal(a, b)


def strided_ufuncs():
    found = {}
    for name in sorted(dir(np)):
        u = getattr(np, name)
        if not isinstance(u, np.ufunc) or u.nin != 1 or u.nout != 1:
            continue
        for dt in ["f4", "i4", "u4", "f8", "i8", "u8", "i2", "u2", "i1", "u1", "f2", "c8",
                   "c16", "?"]:
            x = (np.arange(1, 2000) % 50 + 1).astype(dt)
            try:
                r = u(x[:3])
            except Exception:  # noqa: BLE001 - the ufunc has no loop for this dtype
                continue
            for si in (1, 2, 3, 4, 5, 8, 16, -1, -2, -4, -8):
                for so in (1, 2, 3, 4, -1, -2, -3):
                    for n in (3, 8, 17, 33, 65):
                        xin = (x[::si] if si > 0 else x[::-1][::-si])[:n]
                        o = np.zeros(2000, r.dtype)
                        out = (o[::so] if so > 0 else o[::-1][::-so])[:n]
                        with np.errstate(all="ignore"):
                            u(xin, out=out)
                            expected = u(xin.copy())
                        if not close(out, expected):
                            found.setdefault((name, dt), []).append((n, si, so))
    for (name, dt), where in found.items():
        print(f"np.{name} {dt}: {len(where)} layouts differ, e.g. (n, input step, output "
              f"step) {where[0]}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    print(f"NumPy {np.__version__}")
    families(int(sys.argv[1]) if len(sys.argv) > 1 else 600)
    strided_ufuncs()
