// What the compiled modules share at their Python boundary: a scoped reference, the one
// reader of int64 arrays handed in from Python, and the guard that turns running out of
// memory into a MemoryError. Only integers (and the callbacks' integer layouts) cross.
#pragma once

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

namespace afpy {

// A new reference owned by a scope: released on every return path (the boundaries read
// many attributes, any of which may fail).
struct Ref {
    PyObject* p;
    explicit Ref(PyObject* o = nullptr) : p(o) {}
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Py_XDECREF(p); }
    PyObject* release() {
        PyObject* o = p;
        p = nullptr;
        return o;
    }
};

// An exact tuple of exact ints, or a contiguous 1-d buffer of 8-byte signed ints; copied.
inline bool read_int64_array(PyObject* o, std::vector<int64_t>& out, const char* what) {
    if (PyTuple_CheckExact(o)) {
        Py_ssize_t len = PyTuple_GET_SIZE(o);
        out.resize(size_t(len));
        for (Py_ssize_t j = 0; j < len; ++j) {
            PyObject* item = PyTuple_GET_ITEM(o, j);
            if (!PyLong_CheckExact(item)) {
                PyErr_Format(PyExc_TypeError, "%s[%zd] must be an int, got %.100s", what, j,
                             Py_TYPE(item)->tp_name);
                return false;
            }
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "%s[%zd] does not fit in 64 bits", what, j);
                return false;
            }
            out[size_t(j)] = int64_t(v);
        }
        return true;
    }
    if (!PyObject_CheckBuffer(o)) {
        PyErr_Format(PyExc_TypeError,
                     "%s must be a tuple of ints or a contiguous int64 array, got %.100s", what,
                     Py_TYPE(o)->tp_name);
        return false;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous int64 array (%.100s is not "
                     "C-contiguous)", what, Py_TYPE(o)->tp_name);
        return false;
    }
    const char* f = view.format ? view.format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') ++f;  // native order only (no '>' or '!')
    bool ok = view.itemsize == 8 && view.ndim == 1 && (f[0] == 'q' || f[0] == 'l') && f[1] == 0;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be a 1-d int64 array, got format '%.20s' with "
                     "itemsize %zd and %d dimension(s)", what, view.format ? view.format : "B",
                     view.itemsize, view.ndim);
        PyBuffer_Release(&view);
        return false;
    }
    size_t len = size_t(view.len / 8);
    try {
        out.resize(len);
    } catch (const std::bad_alloc&) {
        PyBuffer_Release(&view);
        PyErr_NoMemory();
        return false;
    }
    if (len) std::memcpy(out.data(), view.buf, len * 8);
    PyBuffer_Release(&view);
    return true;
}

// A METH_FASTCALL function around impl: running out of memory anywhere in it (C++
// containers) is a MemoryError, never an exception crossing into C. Objects held at that
// moment may leak; the process lives on.
template <PyObject* (*impl)(PyObject* const*, Py_ssize_t)>
PyObject* guarded(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    try {
        return impl(args, nargs);
    } catch (std::bad_alloc&) {
        return PyErr_NoMemory();
    } catch (std::length_error&) {
        return PyErr_NoMemory();
    }
}

}  // namespace afpy
