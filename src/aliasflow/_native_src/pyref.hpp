// A new Python reference owned by a scope: released on every return path (the compiled
// modules' boundaries read many attributes, any of which may fail).
#pragma once

#include <Python.h>

namespace afpy {

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

}  // namespace afpy
