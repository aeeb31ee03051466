"""Seed 002: the walk from a TF_Tensor* to the data pointer, on the model in real memory, and
why overwriting that pointer is dangerous (aliasflow sees the aliasing it creates).

Run: python examples/tf_memory_walk.py
"""
import numpy as np

import aliasflow as af
from aliasflow import tf

t = tf.memory.Tensor.allocate("float32", [2, 3])
print("shape bytes:", t.shape.to_bytes(t.dtype).hex(" "))
for step in tf.memory_walk(t):
    how = "read at" if step.read else "address"
    print(f"step {step.step}: {step.what:50s} {how} {step.base:#x} + {step.offset:2d} "
          f"-> {step.value:#x}")
print("data pointer equals the buffer's:", tf.memory_walk(t)[-1].value == t.buffer.data)

x = np.zeros((2, 3), np.float32)
x_view = af.from_numpy(x, "x")               # x's memory as aliasflow sees it (no copy)
old = tf.swap_data_pointer(t, x)             # the dangerous part: t now reads x's memory
write = af.FillOperation("write_x_row", 1.0).set_outputs(x_view[1])
read = af.TransformOperation("read_tensor").set_inputs(t.af_view("t"))
for d in af.analyze([write, read]).dependencies:
    print(f"after the swap: {d.src} -> {d.dst} {d.kind} "
          f"{'implicit' if d.implicit else 'explicit'}")
