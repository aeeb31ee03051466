"""Issue 28: hostile data files and paths. Headers with huge, non-finite or duplicate numbers,
70,000 entries, structured mutations of a saved file's header and bytes (loaded exactly as
the header describes, read independently, or refused), FIFOs, devices and directories as
program or data files (refused without waiting), and saves that fail leaving no file."""
import json
import os
import struct
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.io import ProgramFileError, load_program, save_program

safetensors = pytest.importorskip("safetensors")


def write_data(path, header, data: bytes, length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text) if length is None else length) + text + data)


def write_program(path, entries, data_file="d.safetensors"):
    tensors = [{"name": n, "shape": s, "dtype": d, "init": "data_file"} for n, s, d in entries]
    path.write_text(json.dumps({"format": "aliasflow-program", "version": 1,
                                "data_file": data_file, "tensors": tensors, "ops": []}))


@pytest.mark.parametrize("shape, offsets, match", [
    ("[1e400]", "[0, 4]", "shape"), ("[NaN]", "[0, 4]", "NaN is not a number"),
    ("[Infinity]", "[0, 4]", "Infinity"), ("[-Infinity]", "[0, 4]", "-Infinity"),
    ("[1.5]", "[0, 4]", "shape"), ("[" + "9" * 40 + "]", "[0, 4]", "40 digits"),
    ("[1]", "[0, 1e400]", "data_offsets"), ("[1]", "[-1, 3]", "data offsets"),
    ("[1]", "[0, " + "1" * 31 + "]", "31 digits"), ("[1, -1]", "[0, 4]", "non-negative"),
    ("[" + ", ".join(["2"] * 65) + "]", "[0, 4]", "at most 64"),
    ("[1]", "[0, 4, 8]", "pair of ints"), ("[true]", "[0, 4]", "shape"),
])
def test_headers_with_hostile_numbers_are_refused(tmp_path, shape, offsets, match):
    header = ('{"tensor:A": {"dtype": "F32", "shape": %s, "data_offsets": %s}}'
              % (shape, offsets)).encode()
    write_data(tmp_path / "d.safetensors", header, b"\0" * 4)
    write_program(tmp_path / "p.json", [("A", [1], "float32")])
    with pytest.raises(ProgramFileError, match=match):
        load_program(tmp_path / "p.json")


def test_duplicate_keys_and_bad_metadata_are_refused(tmp_path):
    entry = '{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'
    write_data(tmp_path / "d.safetensors", f'{{"tensor:A": {entry}, "tensor:A": {entry}}}'
               .encode(), b"\0" * 4)
    write_program(tmp_path / "p.json", [("A", [1], "float32")])
    with pytest.raises(ProgramFileError, match="given more than once"):
        load_program(tmp_path / "p.json")
    write_data(tmp_path / "d.safetensors", {"__metadata__": {"a": 1}, "tensor:A": json.loads(
        entry)}, b"\0" * 4)
    with pytest.raises(ProgramFileError, match="__metadata__ must map strings to strings"):
        load_program(tmp_path / "p.json")


def test_a_header_of_70000_entries_costs_one_file_handle(tmp_path):
    # every entry used to be memory-mapped, used or not: 70,000 mappings exhausted the
    # process; now only the entries the program names are read, through one open file
    n = 70_000
    header = {f"tensor:T{k}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * k, 4 * k + 4]}
              for k in range(n)}
    write_data(tmp_path / "d.safetensors", header, np.arange(n, dtype=np.float32).tobytes())
    write_program(tmp_path / "p.json", [("T5", [1], "float32"), ("T69999", [1], "float32")])
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    p = load_program(tmp_path / "p.json")
    assert p.tensors["T69999"].data.tolist() == [69999.0]
    assert p.tensors["T5"].data.tolist() == [5.0]
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before  # closed again


def _fifo(path):
    os.mkfifo(path)
    return path


def _load_within(path, seconds=10):
    """load_program(path) in a thread that must finish within ``seconds`` (a FIFO with no
    writer used to block it forever)."""
    out = {}

    def go():
        try:
            load_program(path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():  # unblock it: a writer arrives and leaves at once
        with open(path, "wb"):
            pass
        pytest.fail(f"load_program({path}) waited on a FIFO")
    return out.get("error")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_devices_and_directories_are_refused_without_waiting(tmp_path):
    a = af.Tensor("A", (4,), data=[1, 2, 3, 4])
    save_program([af.FillOperation("f").set_outputs(a[:])], tmp_path / "p.json",
                 data="safetensors")
    os.remove(tmp_path / "p.safetensors")
    _fifo(tmp_path / "p.safetensors")
    err = _load_within(tmp_path / "p.json")
    assert isinstance(err, ProgramFileError) and "not a regular file (a FIFO)" in str(err)
    err = _load_within(_fifo(tmp_path / "q.json"))
    assert isinstance(err, ProgramFileError) and "a FIFO" in str(err)
    (tmp_path / "d.json").mkdir()
    with pytest.raises(ProgramFileError, match="a directory"):
        load_program(tmp_path / "d.json")
    if os.path.exists("/dev/zero"):
        with pytest.raises(ProgramFileError, match="a character device"):
            load_program("/dev/zero")
    with pytest.raises(FileNotFoundError):
        load_program(tmp_path / "missing.json")


def test_a_failed_save_leaves_no_file(tmp_path, monkeypatch):
    a = af.Tensor("A", (4,), data=[1, 2, 3, 4])
    ops = [af.FillOperation("f").set_outputs(a[:])]
    (tmp_path / "existing_dir").mkdir()
    with pytest.raises(ProgramFileError, match="is a directory; nothing was written"):
        save_program(ops, tmp_path / "existing_dir", data="safetensors")
    (tmp_path / "p.safetensors").mkdir()
    with pytest.raises(ProgramFileError, match="is a directory"):
        save_program(ops, tmp_path / "p.json", data="safetensors")
    assert sorted(os.listdir(tmp_path)) == ["existing_dir", "p.safetensors"]
    os.rmdir(tmp_path / "p.safetensors")
    save_program(ops, tmp_path / "p.json", data="safetensors")
    old = {n: (tmp_path / n).read_bytes() for n in ("p.json", "p.safetensors")}
    import aliasflow.io._saver as saver

    def broken(path, arrays):
        path.write_bytes(b"half")
        raise OSError("disk full")
    monkeypatch.setattr(saver, "write_data_file", broken)
    a.data[:] = 7
    with pytest.raises(OSError, match="disk full"):
        save_program(ops, tmp_path / "p.json", data="safetensors")
    assert sorted(os.listdir(tmp_path)) == ["existing_dir", "p.json", "p.safetensors"]
    assert {n: (tmp_path / n).read_bytes() for n in old} == old


# ---- structured mutation of a saved data file ---------------------------------------------
NUMBERS = st.one_of(st.integers(-2, 70), st.sampled_from([2**31, 2**63, 2**64, 10**30]),
                    st.floats(allow_nan=True, allow_infinity=True), st.none(), st.booleans(),
                    st.text(max_size=2))
DTYPES = {"F32": "<f4", "F64": "<f8", "I8": "i1", "U8": "u1", "I32": "<i4", "I64": "<i8",
          "F16": "<f2", "BOOL": "?", "U16": "<u2", "I16": "<i2", "U32": "<u4", "U64": "<u8"}


def independent_read(raw: bytes, key: str):
    """Entry ``key`` as the safetensors format describes it, read with nothing of ours."""
    (n,) = struct.unpack("<Q", raw[:8])
    info = json.loads(raw[8:8 + n])[key]
    b, e = info["data_offsets"]
    return np.frombuffer(raw[8 + n + b:8 + n + e], DTYPES[info["dtype"]]).reshape(info["shape"])


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_mutated_data_files_load_as_their_header_says_or_are_refused(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("st")
    n = data.draw(st.integers(1, 9))
    dtype = data.draw(st.sampled_from(["float32", "int8", "uint16", "float64"]))
    a = af.Tensor("A", (n,), dtype, data=np.arange(n) + 1)
    save_program([af.FillOperation("f").set_outputs(a[:])], tmp / "p.json", data="safetensors")
    raw = (tmp / "p.safetensors").read_bytes()
    (hn,) = struct.unpack("<Q", raw[:8])
    header, body = json.loads(raw[8:8 + hn]), raw[8 + hn:]
    entry = header["tensor:A"]
    how = data.draw(st.sampled_from(["shape", "offsets", "dtype", "entry", "extra", "meta",
                                     "cut", "grow", "length"]))
    length = None
    if how == "shape":
        entry["shape"] = data.draw(st.lists(NUMBERS, max_size=3))
    elif how == "offsets":
        entry["data_offsets"] = data.draw(st.lists(NUMBERS, min_size=1, max_size=3))
    elif how == "dtype":
        entry["dtype"] = data.draw(st.sampled_from(list(DTYPES) + ["BF16", "", 3, None]))
    elif how == "entry":
        header["tensor:A"] = data.draw(st.one_of(NUMBERS, st.just({"dtype": "F32"})))
    elif how == "extra":
        for k in range(data.draw(st.integers(1, 50))):
            header[f"x{k}"] = {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}
    elif how == "meta":
        header["__metadata__"] = data.draw(st.one_of(NUMBERS, st.just({"k": "v"})))
    elif how == "cut":
        body = body[:data.draw(st.integers(0, len(body)))]
    elif how == "grow":
        body += data.draw(st.binary(min_size=1, max_size=9))
    else:
        length = data.draw(st.sampled_from([0, 1, hn - 1, hn + 1, 2**63, 2**64 - 1]))
    text = json.dumps(header, allow_nan=True).encode()
    (tmp / "p.safetensors").write_bytes(
        struct.pack("<Q", len(text) if length is None else length) + text + body)
    try:
        p = load_program(tmp / "p.json")
    except ProgramFileError:
        return
    expect = independent_read((tmp / "p.safetensors").read_bytes(), "tensor:A")
    got = p.tensors["A"].data
    assert got.shape == expect.shape and got.tobytes() == expect.tobytes()
