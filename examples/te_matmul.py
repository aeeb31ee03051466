"""TVM's tensor expressions in aliasflow: seed 004's matmul on PyTorch tensors, seed 003's
graph lowered to an aliasflow program with the exact views each op reads, and a graph lowered
over aliasing caller arrays, where aliasflow finds a dependency no te edge shows.

Run: PYTHONPATH=src python examples/te_matmul.py   (needs torch)
"""
import numpy as np
import torch

import aliasflow as af
from aliasflow import te

# Seed 004, as written there (tvm.* is te.* here): a matmul built with te.compute and te.sum
# over a reduce axis, called on PyTorch tensors through DLPack (no copies; z2 written in place).
x = torch.rand(56, 56)
y = torch.rand(56, 56)
z = x.mm(y)

n = te.convert(56)
X = te.placeholder((n, n), name="X")
Y = te.placeholder((n, n), name="Y")
k = te.reduce_axis((0, n), name="k")
Z = te.compute((n, n), lambda i, j: te.sum(X[i, k] * Y[k, j], axis=k))
s = te.create_schedule(Z.op)
fmm = te.build(s, [X, Y, Z], target_host="llvm", name="fmm")
z2 = torch.empty(56, 56)
fmm(x, y, z2)
np.testing.assert_allclose(z.numpy(), z2.numpy(), rtol=1e-5)
print(f"{Z!r} reads {Z.op.input_tensors}; fmm(x, y, z2) equals x.mm(y)")

# Seed 003: C = A + B + E, then D reads C forwards and backwards. Lowered with n = 8, every
# load becomes the exact strided view it touches over its op's loop nest.
nv = te.var("n")
A = te.placeholder((nv,), name="A")
B = te.placeholder((nv,), name="B")
E = te.placeholder((nv,), name="E")
C = te.compute(A.shape, lambda i: A[i] + B[i] + E[i], name="C")
D = te.compute((nv - 1,), lambda i: C[i + 1] - C[nv - 2 - i], name="D")
print("C.op.input_tensors:", [t.name for t in C.op.input_tensors])
program = te.lower([D], binds={"n": 8})
for op in program:
    for v in op.input_views:
        print(f"  {op.name} reads {v.name:16s} offset={v.offset} shape={v.shape} "
              f"stride={v.stride} -> elements {v.footprint().tolist()}")
graph = af.analyze(program)
for d in graph.dependencies:
    print(f"  {d.src} -> {d.dst} {d.kind} on elements {d.elements}")

# The caller's memory: C reads A backwards, B writes constants. No te edge joins them, but the
# arrays given to lower() alias (B's memory is the upper half of A's), so aliasflow finds the
# write-after-read that keeps B from running before C has read A.
A = te.placeholder((4,), name="A")
C = te.compute((4,), lambda i: A[3 - i] * 10, name="C")
B = te.compute((4,), lambda i: te.const(1.0, "float32") + i, name="B")
buf = np.arange(8, dtype="float32")
out = np.zeros(4, "float32")
program = te.lower([C, B], arrays={A: buf[2:6], B: buf[4:8], C: out})
print("aliasing arrays:", [(d.src, d.dst, d.kind) for d in af.analyze(program).dependencies])
af.run(list(program), workers=2)
print("C =", out.tolist(), "buf =", buf.tolist())
