"""Program files with shared memory and safetensors data files: bit-exact round trips."""
import json
import os

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


def test_safetensors_data_is_copied_so_the_file_can_change_afterwards(tmp_path):
    # issue 28: memory-mapped pages died with SIGBUS when the file was truncated and changed
    # the loaded values when it was rewritten in place; loading now copies what it uses
    t = af.Tensor("T", (1024,), "float64", data=np.arange(1024.0))
    ops = [af.FillOperation("w", 9).set_outputs(t[1:3])]
    path = tmp_path / "p.json"
    save_program(ops, path, data="safetensors")
    data = tmp_path / "p.safetensors"
    file_bytes = data.read_bytes()
    loaded = load_program(path)
    with open(data, "r+b") as f:  # rewritten in place: the same file, other bytes
        f.seek(len(file_bytes) - 4096)
        f.write(b"\x7f" * 4096)
    assert loaded.tensors["T"].data.tolist() == list(range(1024))
    os.truncate(data, 8)
    assert loaded.tensors["T"].data.tolist() == list(range(1024))
    data.unlink()
    af.run(loaded.ops)
    assert loaded.tensors["T"].data[:4].tolist() == [0.0, 9.0, 9.0, 3.0]
    save_program(ops, path, data="safetensors")
    load_program(path)
    af.run(load_program(path).ops)
    assert data.read_bytes() == file_bytes  # running a loaded program never writes the file


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
