// What the PyTorch reader (reader.cpp, built against PyTorch's headers where they are found
// at install time) hands the tracer's per-call path (hot.cpp, built against Python's alone):
// a tensor's memory facts as plain integers, read from the tensor itself instead of through
// its Python accessors. Only C types cross: hot.cpp never sees a PyTorch type.
#pragma once

#include <Python.h>
#include <stdint.h>

#define AF_READER_API_VERSION 1
#define AF_READER_CAPSULE "aliasflow.interop.torch_trace._reader.API"

typedef struct {
    uintptr_t storage_impl;    // the StorageImpl's address (torch._C._storage_address)
    uintptr_t data_ptr;        // t.data_ptr()
    uintptr_t storage_data;    // t.untyped_storage().data_ptr()
    int64_t storage_nbytes;    // t.untyped_storage().nbytes()
    uintptr_t tensor_impl;     // t._cdata
    int64_t ndim;
    const int64_t* sizes;      // ndim of each, valid while the tensor lives and is unchanged
    const int64_t* strides;
    PyObject* dtype;           // t.dtype, borrowed
} AfTensorFacts;

typedef struct {
    int version;   // AF_READER_API_VERSION
    // 1: *out filled, for a dense CPU tensor with memory; 0: not read (anything else, or
    // PyTorch refused; the caller asks the tensor's accessors, which say why). Never raises.
    int (*read)(PyObject* tensor, AfTensorFacts* out);
    // torch.Size(sizes): a new reference, or nullptr with an exception
    PyObject* (*size)(int64_t ndim, const int64_t* sizes);
    // the weak reference UntypedStorage._weak_ref() takes (its StorageImpl object pinned, not
    // its bytes), for a storage alive now; freed by UntypedStorage._free_weak_ref
    void (*pin)(uintptr_t storage_impl);
    // autograd now: 1 with *node_seq the sequence number of the node a backward pass is
    // running (torch._C._current_autograd_node()._sequence_nr()), else 0 with *seq the next
    // sequence number (torch._C._autograd._get_sequence_nr())
    int (*autograd)(uint64_t* seq, uint64_t* node_seq);
} AfReaderApi;
