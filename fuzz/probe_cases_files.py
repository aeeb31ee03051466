"""Probe cases: program files and their safetensors data files, FIFOs and other files that
are not regular files, saving."""
from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys

import numpy as np

import aliasflow as af
from aliasflow import render
from aliasflow.io import (ProgramFileError, dumps_program, load_program, loads_program,
                          save_program)
from probe_lib import Modified, Wrong, either, family, named, refused, same_array

HERE = os.path.dirname(os.path.abspath(__file__))


def _saved(name="prog.json", n=4096, dtype="float32"):
    a = af.Tensor("A", (n,), dtype, data=np.arange(n) % 100 + 1)
    b = af.Tensor("B", (n,), dtype)
    ops = [af.TransformOperation("copy", "copy").set_inputs(a[:]).set_outputs(b[:])]
    save_program(ops, name, data="safetensors")
    return a.data.copy()


def _tensor(program, name):
    return program.tensors[name]


@named
def st_truncated_after_load():
    expect = _saved()
    p = load_program("prog.json")
    os.truncate("prog.safetensors", 8)
    got = _tensor(p, "A").data.copy()        # a SIGBUS here if the file's pages are mapped
    same_array(got, expect, "A after the data file was truncated")
    af.run(p.ops)
    same_array(_tensor(p, "B").data, expect, "B after running")


@named
def st_rewritten_after_load():
    expect = _saved()
    p = load_program("prog.json")
    size = os.path.getsize("prog.safetensors")
    with open("prog.safetensors", "r+b") as f:  # in place: the same inode, new bytes
        (n,) = struct.unpack("<Q", f.read(8))
        f.seek(8 + n)
        f.write(b"\x7f" * (size - 8 - n))
    same_array(_tensor(p, "A").data, expect, "A after the data file was rewritten in place")


def _header_file(header: dict, data: bytes, name="data.safetensors"):
    text = json.dumps(header).encode()
    with open(name, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def _program_using(entries, name="prog.json", data_file="data.safetensors"):
    tensors = [{"name": n, "shape": s, "dtype": d, "init": "data_file"} for n, s, d in entries]
    with open(name, "w") as f:
        json.dump({"format": "aliasflow-program", "version": 1, "data_file": data_file,
                   "tensors": tensors, "ops": []}, f)


@named
def st_header_huge_numbers():
    for shape, offsets in [("[1e400]", "[0, 4]"), ("[NaN]", "[0, 4]"), ("[Infinity]", "[0, 4]"),
                           ("[100000000000000000000000000000]", "[0, 4]"),
                           ("[1]", "[0, 1e400]"), ("[1]", "[-1, 3]"), ("[1.5]", "[0, 4]"),
                           ("[1]", "[0, 100000000000000000000000000000000000000000]")]:
        text = ('{"tensor:A": {"dtype": "F32", "shape": %s, "data_offsets": %s}}'
                % (shape, offsets)).encode()
        with open("data.safetensors", "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"\0" * 4)
        _program_using([("A", [1], "float32")])
        refused(lambda: load_program("prog.json"), what=f"shape {shape}, offsets {offsets}")


@named
def st_70000_entries():
    n = 70_000
    header = {f"tensor:T{k}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * k, 4 * k + 4]}
              for k in range(n)}
    _header_file(header, np.arange(n, dtype=np.float32).tobytes())
    _program_using([("T5", [1], "float32"), ("T69999", [1], "float32")])
    p = load_program("prog.json")
    same_array(_tensor(p, "T69999").data, np.array([69999], np.float32), "T69999")


def _fifo(name):
    os.mkfifo(name)
    return name


@named
def fifo_data_file():
    _saved()
    os.remove("prog.safetensors")
    _fifo("prog.safetensors")
    refused(lambda: load_program("prog.json"), what="a FIFO as the data file")


@named
def fifo_program_file():
    _fifo("prog.json")
    refused(lambda: load_program("prog.json"), what="a FIFO as the program file")


@named
def dev_zero_program_file():
    refused(lambda: load_program("/dev/zero"), what="/dev/zero as the program file")


@named
def directory_as_program_file():
    os.mkdir("d.json")
    refused(lambda: load_program("d.json"), what="a directory as the program file")


@named
def fifo_cli_show():
    _fifo("p.json")
    proc = subprocess.run([sys.executable, "-m", "aliasflow.cli", "show", "p.json"],
                          capture_output=True, text=True, timeout=20,
                          env=dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "src")))
    lines = proc.stderr.strip().splitlines()
    if proc.returncode == 0 or "Traceback" in proc.stderr or len(lines) != 1:
        raise Wrong(f"aliasflow show FIFO: exit {proc.returncode}, stderr {proc.stderr!r:.200}")


@named
def save_into_existing_directory():
    a = af.Tensor("A", (4,), data=[1, 2, 3, 4])
    os.mkdir("existing_dir")
    before = sorted(os.listdir("."))
    refused(lambda: save_program([af.FillOperation("f").set_outputs(a[:])], "existing_dir",
                                 data="safetensors"),
            state=lambda: sorted(os.listdir(".")), what="save_program to a directory")
    if sorted(os.listdir(".")) != before:
        raise Modified("save_program left files behind")


# ---- mutations of safetensors files ----------------------------------------------------------
_HOSTILE_NUMBERS = [0, 1, -1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, 10**30, 1.5, -0.0,
                    float("inf"), float("nan"), "3", None, True, [], {}, 1e300]


def _oracle(path: str, key: str):
    """The array a safetensors header says entry ``key`` holds, read independently."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    info = header[key]
    dtype = {"F32": "<f4", "F64": "<f8", "I8": "i1", "U8": "u1", "I32": "<i4", "I64": "<i8",
             "F16": "<f2", "BOOL": "?", "U16": "<u2", "I16": "<i2", "U32": "<u4",
             "U64": "<u8"}[info["dtype"]]
    b, e = info["data_offsets"]
    return np.frombuffer(raw[8 + n + b:8 + n + e], dtype).reshape(info["shape"])


@family
def st_mutate(seed):
    """A saved program's data file with one header field, the header length, or the data
    changed: refused cleanly, or loaded with exactly the values the header describes."""
    rng = random.Random(seed)
    n = rng.choice([1, 3, 64])
    _saved(n=n, dtype=rng.choice(["float32", "int8", "uint16", "float64"]))
    raw = open("prog.safetensors", "rb").read()
    (hn,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hn])
    data = raw[8 + hn:]
    key = rng.choice([k for k in header if k != "__metadata__"])
    pick = rng.randrange(10)
    if pick == 0:
        header[key]["shape"] = [rng.choice(_HOSTILE_NUMBERS)
                                for _ in range(rng.randrange(0, 4))]
    elif pick == 1:
        header[key]["data_offsets"] = [rng.choice(_HOSTILE_NUMBERS),
                                       rng.choice(_HOSTILE_NUMBERS)]
    elif pick == 2:
        header[key]["dtype"] = rng.choice(["F32", "I8", "U64", "BF16", "F8_E4M3", "", 3,
                                           None, "f32", "BOOL", "C64"])
    elif pick == 3:
        header[key] = rng.choice([None, 1, [], "x", {}, {"dtype": "F32"}])
    elif pick == 4:
        for k in range(rng.choice([1, 100, 5000])):
            header[f"extra{k}"] = {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}
    elif pick == 5:
        header["__metadata__"] = rng.choice([None, 1, {"a": 1}, {"a": "b"}, []])
    elif pick == 6:
        data = data[:rng.randrange(len(data) + 1)]
    elif pick == 7:
        data = data + os.urandom(rng.randrange(1, 64))
    elif pick == 8:
        data = bytes(rng.randrange(256) for _ in range(len(data)))
    text = json.dumps(header, allow_nan=True).encode()
    length = len(text)
    if pick == 9:
        length = rng.choice([0, 1, len(text) - 1, len(text) + 1, 2**63, 2**64 - 1, 100 * 2**20])
    with open("prog.safetensors", "wb") as f:
        f.write(struct.pack("<Q", length) + text + data)

    def check(p):
        for name in ("A",):
            k = f"tensor:{name}"
            try:
                expect = _oracle("prog.safetensors", k)
            except Exception as exc:
                raise Wrong(f"loaded a data file whose entry {k} the oracle cannot read "
                            f"({type(exc).__name__}: {exc})") from None
            same_array(_tensor(p, name).data.reshape(-1), expect.reshape(-1).astype(
                _tensor(p, name).dtype), f"{k} (mutation {pick})")
    either(lambda: load_program("prog.json"), check, what=f"mutation {pick}")


# ---- program files with hostile shapes -------------------------------------------------------
_DIMS = [0, 1, 2, 3, 7, 2**20, 2**31, 2**40, 2**62, 2**63 - 1]
_STRIDES = [0, 1, -1, 2, 4, -4, 2**31, 2**62, -(2**62), 2**63 - 1, -(2**63)]


def _hostile_program(rng):
    tensors, views, ops = [], [], []
    for k in range(rng.randrange(1, 3)):
        shape = [rng.choice([1, 2, 4, 8, 16]) for _ in range(rng.randrange(1, 3))]
        tensors.append({"name": f"T{k}", "shape": shape,
                        "dtype": rng.choice(["float32", "int8", "float64"])})
    for k in range(rng.randrange(1, 5)):
        base = rng.choice([t["name"] for t in tensors] + [v["name"] for v in views])
        nd = rng.randrange(0, 8)
        how = rng.randrange(4)
        name = f"V{k}"
        if how == 0:
            entry = {"name": name, "of": base, "as_strided": {
                "shape": [rng.choice(_DIMS) for _ in range(nd)],
                "stride": [rng.choice(_STRIDES) for _ in range(nd)],
                "offset": rng.choice([0, 0, 1, 2**62])}}
        elif how == 1:
            entry = {"name": name, "of": base,
                     "broadcast_to": [rng.choice(_DIMS) for _ in range(nd)]}
        elif how == 2:
            entry = {"name": name, "of": base, "reshape": [rng.choice(_DIMS + [-1])
                                                           for _ in range(nd)]}
        else:
            entry = {"name": name, "tensor": rng.choice(tensors)["name"],
                     "offset": rng.choice([0, 1, 3]),
                     "shape": [rng.choice(_DIMS) for _ in range(nd)],
                     "stride": [rng.choice(_STRIDES) for _ in range(nd)]}
        views.append(entry)
    names = [t["name"] for t in tensors] + [v["name"] for v in views]
    for k in range(rng.randrange(1, 5)):
        kind = rng.choice(["fill", "transform", "reduce", "binary"])
        entry = {"name": f"op{k}", "kind": kind}
        if kind == "fill":
            entry["outputs"] = [rng.choice(names)]
        elif kind == "transform":
            entry["inputs"], entry["outputs"] = [rng.choice(names)], [rng.choice(names)]
        elif kind == "reduce":
            entry["inputs"] = [rng.choice(names)]
            entry["axis"] = rng.choice([-1, 0, 1])
            if rng.random() < 0.5:
                entry["outputs"] = [rng.choice(names)]
        else:
            entry["inputs"] = [rng.choice(names), rng.choice(names)]
            entry["outputs"] = [rng.choice(names)]
        ops.append(entry)
    return {"format": "aliasflow-program", "version": 1, "tensors": tensors, "views": views,
            "ops": ops}


@family
def program_hostile_shapes(seed):
    """A valid-JSON program with hostile shapes and strides: loaded, shown, analysed, its
    flows found and run, each refused cleanly or done within the CPU limit."""
    rng = random.Random(seed)
    doc = _hostile_program(rng)
    with open("p.json", "w") as f:
        json.dump(doc, f)
    got, p = either(lambda: load_program("p.json"), what="load")
    if got == "refused":
        return
    for name in p.tensors:
        either(lambda: render.grid(p, name), what=f"grid of {name}")
    either(lambda: render.footprint_table(p), what="footprint table")
    either(lambda: af.analyze(p.ops), what="analyze")
    either(lambda: af.analyze(p.ops, complete=True), what="analyze complete")
    for op in p.ops:
        either(lambda: af.value_flow(p.ops, op), what=f"flow into {op.name}")
    got, text = either(lambda: dumps_program(p.ops), what="save")
    if got == "accepted":
        try:
            loads_program(text)
        except ProgramFileError as exc:
            raise Wrong(f"a program saved from a loaded one does not load back: {exc}") \
                from None
    snapshot = lambda: [t.data.copy() for t in p.tensors.values()]  # noqa: E731
    try:
        either(lambda: af.run(p.ops), state=snapshot, what="run")
    except af.ExecutionError:
        pass  # an op failed while running (a shape that cannot broadcast): fine


def _valid_hostile_program(rng):
    """Programs that load: small tensors, views that repeat them enormously (zero strides,
    broadcasts, windows), ops over those views."""
    tensors = [{"name": "T", "shape": [rng.choice([1, 2, 4, 16])],
                "dtype": rng.choice(["float32", "int8", "float64"])},
               {"name": "U", "shape": [rng.choice([1, 4])], "dtype": "float32"}]
    views = []
    for k in range(rng.randrange(1, 4)):
        nd = rng.randrange(1, 6)
        shape = [rng.choice([1, 2, 3, 2**10, 2**20, 2**31, 2**40]) for _ in range(nd)]
        how = rng.randrange(3)
        if how == 0:
            views.append({"name": f"V{k}", "of": "T[0:1]" if False else "T",
                          "as_strided": {"shape": shape, "stride": [0] * nd, "offset": 0}})
        elif how == 1:
            views.append({"name": f"V{k}", "of": "U", "as_strided": {
                "shape": shape, "stride": [0] * (nd - 1) + [rng.choice([0, 1])], "offset": 0}})
            if shape[-1] > 1 and views[-1]["as_strided"]["stride"][-1] == 1:
                views[-1]["as_strided"]["shape"][-1] = 1
        else:
            views.append({"name": f"V{k}", "of": "T", "broadcast_to": shape[:-1] + [1]})
            views[-1]["of"] = "T1"
    tensors.append({"name": "T1", "shape": [1], "dtype": "float32"})
    names = [v["name"] for v in views] + ["T", "U", "T1"]
    ops = []
    for k in range(rng.randrange(1, 5)):
        kind = rng.choice(["fill", "reduce", "transform", "binary"])
        entry = {"name": f"op{k}", "kind": kind}
        if kind == "fill":
            entry["outputs"] = [rng.choice(names)]
        elif kind == "reduce":
            entry["inputs"] = [rng.choice(names)]
            entry["axis"] = rng.choice([-1, 0])
        elif kind == "transform":
            entry["inputs"] = [rng.choice(names)]
            entry["outputs"] = [rng.choice(names)]
        else:
            entry["inputs"] = [rng.choice(names), rng.choice(names)]
            entry["outputs"] = [rng.choice(names)]
        ops.append(entry)
    return {"format": "aliasflow-program", "version": 1, "tensors": tensors, "views": views,
            "ops": ops}


@family
def program_repeating_views(seed):
    """Programs whose views repeat a few elements 2**40 times and more: every step (show,
    analyze, flow, run, save) refused cleanly or done within the CPU limit."""
    rng = random.Random(seed)
    with open("p.json", "w") as f:
        json.dump(_valid_hostile_program(rng), f)
    got, p = either(lambda: load_program("p.json"), what="load")
    if got == "refused":
        return
    for name in p.tensors:
        either(lambda: render.grid(p, name), what=f"grid of {name}")
    either(lambda: render.footprint_table(p), what="footprint table")
    either(lambda: af.analyze(p.ops), what="analyze")
    either(lambda: af.analyze(p.ops, complete=True), what="analyze complete")
    for op in p.ops:
        either(lambda: af.value_flow(p.ops, op), what=f"flow into {op.name}")
    try:
        either(lambda: af.run(p.ops), state=lambda: [t.data.copy() for t in p.tensors.values()],
               what="run")
    except af.ExecutionError:
        pass
