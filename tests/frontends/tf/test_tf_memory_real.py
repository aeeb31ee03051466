"""aliasflow.tf's memory model against real TensorFlow: DataType numbers and num_elements
from its Python API, and the article's walk done on real TF_Tensors made through the C API
(TF_AllocateTensor in libtensorflow_framework), compared with TF_TensorData and our bytes."""
import ctypes
from pathlib import Path

import numpy as np
import pytest

realtf = pytest.importorskip("tensorflow")

from aliasflow import tf  # noqa: E402

memory = tf.memory
MAX16, MAX32 = 0xFFFF - 1, 0xFFFFFFFF - 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int16,
                                   np.int8, np.complex64, np.int64, np.bool_, np.uint16,
                                   np.complex128, np.float16, np.uint32, np.uint64])
def test_datatype_numbers_match_tensorflow(dtype):
    real = realtf.dtypes.as_dtype(dtype)
    ours = memory.TensorShapeRep([1]).to_bytes(dtype)[13]
    assert ours == real.as_datatype_enum
    assert memory.DataType(ours).name == "DT_" + {
        "float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF"}.get(real.name,
                                                                       real.name.upper())


def test_every_enum_number_names_the_same_type():
    for dt in memory.DataType:
        if dt in (memory.DataType.DT_INVALID,):
            continue
        try:
            real = realtf.dtypes.DType(int(dt))
        except (TypeError, ValueError):
            continue   # a number this TensorFlow build has no Python DType for
        assert real.as_datatype_enum == int(dt)


@pytest.mark.parametrize("dims", [[], [3], [2, 3], [0, 70000], [-1, 4], [5, -1, 2 ** 33],
                                  [1, 2, 3, 4, 5, 6, 7], [2 ** 31, 2 ** 31]])
def test_num_elements_matches_tensorflow(dims):
    real = realtf.TensorShape([None if d == -1 else d for d in dims]).num_elements()
    ours = memory.TensorShapeRep(dims, partial=-1 in dims).num_elements
    assert ours == (-1 if real is None else real)


def _capi():
    lib_path = Path(realtf.__file__).parent / "libtensorflow_framework.so.2"
    if not lib_path.exists():
        pytest.skip("libtensorflow_framework.so.2 not found")
    lib = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_GLOBAL)
    lib.TF_AllocateTensor.restype = ctypes.c_void_p
    lib.TF_AllocateTensor.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                      ctypes.c_int, ctypes.c_size_t]
    lib.TF_TensorData.restype = ctypes.c_void_p
    lib.TF_TensorData.argtypes = [ctypes.c_void_p]
    lib.TF_DeleteTensor.argtypes = [ctypes.c_void_p]
    return lib


def read_ptr(address):
    return ctypes.c_void_p.from_address(address).value or 0


# zeros keep the big shapes allocation-free
@pytest.mark.parametrize("dims", [[], [4], [2, 3], [1, 2, 3, 4, 5, 6], [0, MAX16 - 1],
                                  [0, MAX16], [0, 70000], [70000, 0, 1], [0, MAX32 - 1],
                                  [0, MAX32], [0, 1, 1, 70000], [0, 2, 3, 4, 5, 6, 7]])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_the_walk_on_real_tensorflow_tensors(dims, dtype):
    lib = _capi()
    enum = realtf.dtypes.as_dtype(dtype).as_datatype_enum
    n = int(np.prod(dims)) if dims else 1
    c_dims = (ctypes.c_int64 * max(len(dims), 1))(*dims)
    tt = lib.TF_AllocateTensor(enum, c_dims, len(dims), n * np.dtype(dtype).itemsize)
    try:
        ai = read_ptr(tt)                  # steps 1-2: TF_Tensor -> TensorInterface
        tensor = ai + 8                    # step 3: past the vtable pointer
        shape = ctypes.string_at(tensor, 16)
        num_elements = ctypes.c_int64.from_address(tensor + 16).value
        tb = read_ptr(tensor + 24)         # step 4: past the 24-byte shape
        data = read_ptr(tb + 16)           # step 5: past vtable pointer and refcount
        assert data == lib.TF_TensorData(tt)
        if n:   # the model aligns its buffers as TensorFlow's allocator does
            assert data % memory.ALIGNMENT == 0 == memory.TensorBuffer(n).data % memory.ALIGNMENT
        assert ctypes.c_int32.from_address(tb + 8).value == 1
        ours = memory.TensorShapeRep(dims)
        mine = ours.to_bytes(dtype)
        assert num_elements == ours.num_elements
        assert shape[13:] == mine[13:]     # dtype, rank, tag
        used = {0: 2 * len(dims), 1: 4 * len(dims), 2: 0}[ours.tag]
        assert shape[:used] == mine[:used]  # TF leaves the other bytes as they were
    finally:
        lib.TF_DeleteTensor(tt)
