// The PyTorch reader: a tensor's memory facts read from the tensor (its TensorImpl and
// StorageImpl) in one call, for the tracer's per-call path (hot.cpp, through the capsule
// reader_api.h describes), where reading them through the tensor's Python accessors costs a
// Python call each (with PyTorch's argument parsing and __torch_function__ checks).
// Built only against the PyTorch whose headers the install finds (setup.py), and used only
// with that version (tracer.py compares TORCH_VERSION with torch.__version__); everything it
// does not read the same way as the accessors, it leaves to them (read() answers 0).
#include <Python.h>

#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Size.h>
#include <torch/csrc/autograd/node.h>
#include <torch/csrc/autograd/python_variable.h>

#include <ATen/SequenceNumber.h>

#include <c10/core/Layout.h>
#include <c10/core/impl/COW.h>
#include <c10/util/intrusive_ptr.h>

#include "reader_api.h"

namespace {

int read(PyObject* t, AfTensorFacts* out) {
    if (!THPVariable_Check(t)) return 0;
    try {
        const at::Tensor& x = THPVariable_Unpack(t);
        if (!x.defined()) return 0;
        c10::TensorImpl* impl = x.unsafeGetTensorImpl();
        if (impl->layout() != c10::kStrided || !impl->device().is_cpu() ||
            impl->has_symbolic_sizes_strides() || !impl->has_storage() ||
            impl->is_python_dispatch())
            return 0;
        const c10::Storage& st = impl->storage();
        c10::StorageImpl* si = st.unsafeGetStorageImpl();
        if (!si) return 0;
        // A copy-on-write storage is left to the accessors: Tensor.data_ptr() and
        // UntypedStorage.data_ptr() ask for the mutable pointers, which gives it its own
        // memory. Any other's are the same read as const (which also leaves out the warning
        // and the refusal PyTorch gives for the mutable pointer of a fake or functional
        // tensor's storage: those tensors are subclasses, which the tracer never reads here).
        if (c10::impl::cow::is_cow_data_ptr(st.data_ptr())) return 0;
        out->data_ptr = reinterpret_cast<uintptr_t>(x.const_data_ptr());
        out->storage_data = reinterpret_cast<uintptr_t>(st.data());
        out->storage_nbytes = static_cast<int64_t>(st.nbytes());
        out->storage_impl = reinterpret_cast<uintptr_t>(si);
        out->tensor_impl = reinterpret_cast<uintptr_t>(impl);
        out->ndim = impl->dim();
        out->sizes = impl->sizes().data();
        out->strides = impl->strides().data();
        out->dtype = reinterpret_cast<PyObject*>(torch::getTHPDtype(x.scalar_type()));
        return out->dtype != nullptr;
    } catch (...) {   // (PyTorch refuses something: the accessors raise it for the caller)
        return 0;
    }
}

// (as PyTorch's THPSize_NewFromSizes makes one, which libtorch_python does not export)
PyObject* size(int64_t ndim, const int64_t* sizes) {
    PyObject* s = THPSizeType.tp_alloc(&THPSizeType, ndim);
    if (!s) return nullptr;
    for (int64_t i = 0; i < ndim; ++i) {
        PyObject* n = PyLong_FromLongLong(sizes[i]);
        if (!n) {
            Py_DECREF(s);
            return nullptr;
        }
        PyTuple_SET_ITEM(s, i, n);
    }
    return s;
}

void pin(uintptr_t storage_impl) {
    c10::raw::intrusive_ptr::make_weak(reinterpret_cast<c10::StorageImpl*>(storage_impl));
}

int autograd(uint64_t* seq, uint64_t* node_seq) {
    c10::intrusive_ptr<torch::autograd::Node> node = torch::autograd::get_current_node();
    if (node) {
        *node_seq = node->sequence_nr();
        return 1;
    }
    *seq = at::sequence_number::peek();
    return 0;
}

AfReaderApi api = {AF_READER_API_VERSION, read, size, pin, autograd};

// facts(t): the facts read() reads, as a tuple (storage_address, data_ptr, storage data_ptr,
// storage nbytes, _cdata, shape, stride, dtype), or None where read() leaves the tensor to
// its accessors: for the tests, which compare them with the accessors'.
PyObject* facts(PyObject*, PyObject* t) {
    AfTensorFacts f;
    if (!read(t, &f)) Py_RETURN_NONE;
    PyObject* shape = size(f.ndim, f.sizes);
    if (!shape) return nullptr;
    PyObject* stride = PyTuple_New(f.ndim);
    if (!stride) {
        Py_DECREF(shape);
        return nullptr;
    }
    for (int64_t i = 0; i < f.ndim; ++i) {
        PyObject* s = PyLong_FromLongLong(f.strides[i]);
        if (!s) {
            Py_DECREF(shape);
            Py_DECREF(stride);
            return nullptr;
        }
        PyTuple_SET_ITEM(stride, i, s);
    }
    return Py_BuildValue("(NNNLNNNO)", PyLong_FromVoidPtr(reinterpret_cast<void*>(f.storage_impl)),
                         PyLong_FromVoidPtr(reinterpret_cast<void*>(f.data_ptr)),
                         PyLong_FromVoidPtr(reinterpret_cast<void*>(f.storage_data)),
                         static_cast<long long>(f.storage_nbytes),
                         PyLong_FromVoidPtr(reinterpret_cast<void*>(f.tensor_impl)), shape,
                         stride, f.dtype);
}

PyMethodDef methods[] = {
    {"facts", facts, METH_O,
     "facts(t): (storage_address, data_ptr, storage data_ptr, storage nbytes, _cdata, shape, "
     "stride, dtype) as the reader reads them, or None where it leaves t to its accessors."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.interop.torch_trace._reader",
                      "The PyTorch tracer's reader of tensor facts, compiled against PyTorch's "
                      "headers (see _native_src/reader.cpp).",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

#ifndef AF_TORCH_VERSION
#define AF_TORCH_VERSION "unknown"
#endif

PyMODINIT_FUNC PyInit__reader(void) {
    PyObject* m = PyModule_Create(&module);
    if (!m) return nullptr;
    PyObject* capsule = PyCapsule_New(&api, AF_READER_CAPSULE, nullptr);
    if (!capsule || PyModule_AddObject(m, "API", capsule) < 0 ||
        PyModule_AddStringConstant(m, "TORCH_VERSION", AF_TORCH_VERSION) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
