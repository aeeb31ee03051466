"""Program files with shared memory and safetensors data files: bit-exact round trips."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.io import ProgramFileError, load_program, loads_program, save_program


def aliasing_program():
    buf = np.arange(16, dtype=np.float32) * np.float32(1.5)
    buf[3] = np.float32(-0.0)
    buf[4] = np.nan
    rows = af.from_numpy(buf.reshape(4, 4), "rows")
    tail = af.from_numpy(buf[6:], "tail")
    raw = af.from_numpy(buf.view(np.uint8)[8:16], "raw")
    other = af.Tensor("other", (3,), "int16", data=[1, -2, 300])
    ops = [
        af.TransformOperation("neg", "negative").set_inputs(rows[1]).set_outputs(tail[:4]),
        af.FillOperation("zap", 7).set_outputs(raw),
        af.TransformOperation("read", "copy").set_inputs(rows.tensor.view()[:8]),
        af.FillOperation("w", 3).set_outputs(other.view()),
    ]
    return buf, ops


def edges(ops):
    return sorted((d.src, d.dst, d.kind, d.implicit, d.src_view, d.dst_view)
                  for d in af.analyze(ops, complete=True).dependencies)


@pytest.mark.parametrize("data", ["json", "safetensors"])
def test_round_trip_keeps_bits_and_aliasing(tmp_path, data):
    buf, ops = aliasing_program()
    path = tmp_path / "prog.json"
    save_program(ops, path, data=data)
    assert (tmp_path / "prog.safetensors").exists() == (data == "safetensors")
    loaded = load_program(path)
    assert edges(loaded.ops) == edges(ops)
    # the bytes of every storage are the same, NaN payloads and -0.0 included
    for name, t in loaded.tensors.items():
        original = next(v.tensor for op in ops for v in op.input_views + op.output_views
                        if v.tensor.name == name)
        assert t.data.tobytes() == original.data.tobytes()
    # running both gives the same bytes
    af.run(ops)
    af.run(loaded.ops)
    rows = loaded.tensors["rows"]
    assert rows.storage.bytes.tobytes() == buf.tobytes()


def test_safetensors_data_is_memory_mapped_copy_on_write(tmp_path):
    t = af.Tensor("T", (4,), "float64", data=[1.0, 2.0, 3.0, 4.0])
    ops = [af.FillOperation("w", 9).set_outputs(t[1:3])]
    path = tmp_path / "p.json"
    save_program(ops, path, data="safetensors")
    file_bytes = (tmp_path / "p.safetensors").read_bytes()
    loaded = load_program(path)
    arr = loaded.tensors["T"].data
    base = arr
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)  # no copy: the pages of the file
    af.run(loaded.ops)
    assert arr.tolist() == [1.0, 9.0, 9.0, 4.0]
    assert (tmp_path / "p.safetensors").read_bytes() == file_bytes  # the file is untouched


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_shared_buffers_round_trip(tmp_path_factory, data):
    dtype = data.draw(st.sampled_from([np.int8, np.uint16, np.float32, np.float64]))
    n = data.draw(st.integers(1, 12))
    raw = np.frombuffer(data.draw(st.binary(min_size=n * np.dtype(dtype).itemsize,
                                            max_size=n * np.dtype(dtype).itemsize)),
                        dtype).copy()
    views = []
    for k in range(data.draw(st.integers(1, 4))):
        a = data.draw(st.integers(0, n - 1))
        b = data.draw(st.integers(a + 1, n))
        step = data.draw(st.sampled_from([1, 2, -1]))
        views.append(af.from_numpy(raw[a:b][::step], f"v{k}"))
    ops = [af.TransformOperation(f"r{k}").set_inputs(v) for k, v in enumerate(views)]
    ops.append(af.FillOperation("w", 1).set_outputs(views[0]))
    fmt = data.draw(st.sampled_from(["json", "safetensors"]))
    path = tmp_path_factory.mktemp("rt") / "p.json"
    save_program(ops, path, data=fmt)
    loaded = load_program(path)
    assert edges(loaded.ops) == edges(ops)
    for k, v in enumerate(views):
        assert loaded.views[v.name].numpy().tobytes() == v.numpy().tobytes()


def base_doc():
    return {"format": "aliasflow-program", "version": 1,
            "tensors": [{"name": "A", "shape": [4], "init": "data_file"}], "ops": []}


def test_bad_data_files_are_refused(tmp_path):
    doc = base_doc()
    doc["data_file"] = "../elsewhere.safetensors"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProgramFileError, match="not a plain file name"):
        load_program(tmp_path / "p.json")
    doc["data_file"] = "missing.safetensors"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProgramFileError, match="cannot read it"):
        load_program(tmp_path / "p.json")
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    doc["data_file"] = "bad.safetensors"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProgramFileError, match="header length"):
        load_program(tmp_path / "p.json")
    from safetensors.numpy import save_file
    save_file({"tensor:A": np.zeros(5, np.float32)}, str(tmp_path / "wrong.safetensors"))
    doc["data_file"] = "wrong.safetensors"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProgramFileError, match=r"is float32 \(5,\), expected float32 \(4,\)"):
        load_program(tmp_path / "p.json")
    with pytest.raises(ProgramFileError, match="no folder"):
        loads_program(json.dumps(doc))


def test_storage_entries_are_checked():
    doc = base_doc()
    doc["tensors"] = [{"name": "A", "shape": [4], "storage": "m", "byte_offset": 8}]
    doc["storages"] = [{"name": "m", "nbytes": 16}]
    with pytest.raises(ProgramFileError, match=r"bytes \[8, 24\) are outside its 16 bytes"):
        loads_program(json.dumps(doc))
    doc["storages"] = [{"name": "m", "nbytes": 24, "init": {"base64": "AAA"}}]
    with pytest.raises(ProgramFileError, match="base64"):
        loads_program(json.dumps(doc))
    doc["storages"] = [{"name": "m", "nbytes": 24}]
    doc["tensors"].append({"name": "B", "shape": [2], "dtype": "float64", "storage": "m"})
    p = loads_program(json.dumps(doc))
    assert af.check_memory_overlap(p.tensors["A"].view(), p.tensors["B"].view()[1])
    assert not af.check_memory_overlap(p.tensors["A"].view(), p.tensors["B"].view()[0])
