"""TensorFlow 1 graph mode on aliasflow: the seed's ``7.0``, a variable updated through slices,
the control dependency TensorFlow 1 users forget, found by ``tf.races``, and a TensorProto.

Run: ``python examples/tf_graph_races.py`` (no TensorFlow needed).
"""
import numpy as np

from aliasflow import tf

# The seed's example: op names made unique, tensors named op:index.
g = tf.Graph()
with g.as_default():
    a = tf.constant(3.0)
    b = tf.constant(4.0)
    total = a + b
print(a, b, total, sep="\n")
with tf.Session(graph=g) as sess:
    print("total =", sess.run(total))

# A variable, a slice write, and a read that forgot to wait for it.
g = tf.Graph()
with g.as_default():
    v = tf.Variable(np.arange(6, dtype=np.float32), name="v")
    bump = v[2:4].assign([10.0, 20.0])          # writes v[2:4]
    head = tf.reduce_sum(v[0:3])                # reads v[0:3]: overlaps element 2
    tail = tf.reduce_sum(v[4:6])                # reads v[4:6]: never overlaps the write
    init = tf.global_variables_initializer()

print("\nunordered accesses TensorFlow may run either way round:")
for race in tf.races(g, fetches=[bump, head, tail]):
    print(f"  {race.src} -> {race.dst}: {race.kind} on {race.dst_view}, elements {race.elements}")

# The fix: make the read wait for the write.
with g.as_default():
    with tf.control_dependencies([bump]):
        head_after = tf.reduce_sum(v[0:3])
print("after tf.control_dependencies([bump]):", tf.races(g, fetches=[bump, head_after, tail]))
with tf.Session(graph=g, workers=2) as sess:   # aliasflow orders and runs the ops
    sess.run(init)
    print("bump, head_after, tail =", sess.run([bump, head_after, tail]))

# TensorProto: the bytes TensorFlow writes, and back.
proto = tf.make_tensor_proto(np.array([[1, 2], [3, 4]], dtype=np.int32))
data = proto.SerializeToString()
print("\nTensorProto bytes:", data.hex())
print(tf.make_ndarray(data))
