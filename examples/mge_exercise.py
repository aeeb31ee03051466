"""Seed 001's third exercise in both semantics: what the three layers do, and why the answers
differ (the implicit edge from the in-place write to the read of `a`).

Run: python examples/mge_exercise.py
"""
import aliasflow as af
from aliasflow import mge

for semantics in ("megengine", "alias"):
    with mge.config(semantics=semantics):
        mge.reset()
        a = mge.tensor([1, 2])
        b = a[0]                                  # 1.9: a new C++ tensor on a's storage
        shared = mge.layers(b).storage.uid == mge.layers(a).storage.uid
        refs = mge.layers(a).storage.refcount
        b += 1                                    # copy-on-write, or a write through
        print(f"{semantics}: b shared a's storage: {shared} (refcount {refs}); "
              f"after b += 1 still shared: "
              f"{mge.layers(b).storage.uid == mge.layers(a).storage.uid}")
        print(f"  print(a) -> {a}")
        ops = mge.recorded_ops()
        graph = af.analyze(ops)
        for d in graph.dependencies:
            print(f"  {d.src} -> {d.dst} {d.kind} {'implicit' if d.implicit else 'explicit'}")
