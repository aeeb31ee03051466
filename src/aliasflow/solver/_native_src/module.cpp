// aliasflow.solver._native: the CPython boundary of the compiled overlap solver.
//
// Why a hand-written C-API module built by setuptools: it is the cheapest route both to
// build (one g++ call, no build-time dependency beyond setuptools) and to call (a
// METH_FASTCALL function costs ~30 ns; the answer to a realistic pair takes well under a
// microsecond, so binding overhead matters).  Cython would call as cheaply but adds a
// build dependency; nanobind/pybind11 add 100+ ns per call and several times the build time.
//
// Boundary rules: every argument is validated here and trusted inside overlap.hpp.
// Only exact Python ints and exact tuples of exact ints are accepted (a list could be
// mutated while an element's conversion runs Python code; exact ints convert without
// running any); anything else is a TypeError.  Values beyond 2^62 in magnitude, negative
// sizes, and anything the checked 128-bit arithmetic cannot hold return None, which means
// "not decided here": the caller (solver/api.py) then takes the Python big-integer path.
// NotImplemented means the exact search ran past its work budget: the caller asks isl.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../_native_src/boundary.hpp"
#include "overlap.hpp"
#include "radix.hpp"

namespace {

using afpy::Ref;

// 1: converted; 0: does not fit (hand back); -1: TypeError set.
int read_int(PyObject* o, int64_t& out, const char* what) {
    if (!PyLong_CheckExact(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, got %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return 0;
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v > afn::INPUT_LIMIT || v < -afn::INPUT_LIMIT) return 0;
    out = v;
    return 1;
}

// Reads a layout triple (offset, shape, stride) into `buf` (shape at buf[0..n), stride at
// buf[64..64+n)).
int read_layout(PyObject* triple, int64_t* buf, afn::Layout& L) {
    if (!PyTuple_CheckExact(triple) || PyTuple_GET_SIZE(triple) != 3) {
        PyErr_Format(PyExc_TypeError, "a layout must be a tuple (offset, shape, stride), got %.100s",
                     Py_TYPE(triple)->tp_name);
        return -1;
    }
    PyObject* off = PyTuple_GET_ITEM(triple, 0);
    PyObject* shape = PyTuple_GET_ITEM(triple, 1);
    PyObject* stride = PyTuple_GET_ITEM(triple, 2);
    if (!PyTuple_CheckExact(shape)) {
        PyErr_Format(PyExc_TypeError, "shape must be a tuple, got %.100s", Py_TYPE(shape)->tp_name);
        return -1;
    }
    if (!PyTuple_CheckExact(stride)) {
        PyErr_Format(PyExc_TypeError, "stride must be a tuple, got %.100s",
                     Py_TYPE(stride)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    if (PyTuple_GET_SIZE(stride) != n) {
        PyErr_Format(PyExc_TypeError, "shape and stride have different lengths (%zd != %zd)", n,
                     PyTuple_GET_SIZE(stride));
        return -1;
    }
    if (n > afn::MAX_NDIM) {
        PyErr_Format(PyExc_TypeError, "at most %d dimensions, got %zd", afn::MAX_NDIM, n);
        return -1;
    }
    int ok = 1, r;
    r = read_int(off, L.offset, "offset");
    if (r < 0) return -1;
    ok &= r;
    for (Py_ssize_t j = 0; j < n; ++j) {
        r = read_int(PyTuple_GET_ITEM(shape, j), buf[j], "shape entry");
        if (r < 0) return -1;
        ok &= r;
        r = read_int(PyTuple_GET_ITEM(stride, j), buf[afn::MAX_NDIM + j], "stride entry");
        if (r < 0) return -1;
        ok &= r;
    }
    if (ok)
        for (Py_ssize_t j = 0; j < n; ++j)
            if (buf[j] < 0) ok = 0;  // negative size: the Python path raises its own error
    L.ndim = int(n);
    L.shape = buf;
    L.stride = buf + afn::MAX_NDIM;
    return ok;
}

PyObject* answer(int r) {
    if (r == afn::YES) Py_RETURN_TRUE;
    if (r == afn::NO) Py_RETURN_FALSE;
    if (r == afn::EXHAUSTED) Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

bool read_budget(PyObject* o, long& budget) {
    int64_t b;
    if (read_int(o, b, "budget") != 1 || b < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "budget must be an int in 0..2^62");
        return false;
    }
    budget = long(b);
    return true;
}

// False with a TypeError unless lo <= nargs <= hi; `call` names the function and its
// arguments, as "intersects(a, b[, budget])"
bool check_nargs(const char* call, Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi) {
    if (lo <= nargs && nargs <= hi) return true;
    if (lo == hi)
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", call, lo, nargs);
    else
        PyErr_Format(PyExc_TypeError, "%s takes %zd or %zd arguments, got %zd", call, lo, hi,
                     nargs);
    return false;
}

// Layouts args[0] and args[1]: -1 with an error set, 0 when a value does not fit, 1 read.
struct TwoLayouts {
    int64_t buf_a[2 * afn::MAX_NDIM], buf_b[2 * afn::MAX_NDIM];
    afn::Layout a, b;
    int read(PyObject* const* args) {
        int ra = read_layout(args[0], buf_a, a);
        if (ra < 0) return -1;
        int rb = read_layout(args[1], buf_b, b);
        if (rb < 0) return -1;
        return ra && rb;
    }
};

PyObject* py_intersects(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("intersects(a, b[, budget])", nargs, 2, 3)) return nullptr;
    TwoLayouts t;
    int fits = t.read(args);
    if (fits < 0) return nullptr;
    long budget = afn::DEFAULT_BUDGET;
    if (nargs == 3 && !read_budget(args[2], budget)) return nullptr;
    if (!fits) Py_RETURN_NONE;
    return answer(afn::intersects(t.a, t.b, budget));
}

PyObject* py_internal(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("has_internal_overlap(a[, budget])", nargs, 1, 2)) return nullptr;
    int64_t buf[2 * afn::MAX_NDIM];
    afn::Layout a;
    int ra = read_layout(args[0], buf, a);
    if (ra < 0) return nullptr;
    long budget = afn::DEFAULT_BUDGET;
    if (nargs == 2 && !read_budget(args[1], budget)) return nullptr;
    if (!ra) Py_RETURN_NONE;
    return answer(afn::internal_overlap(a, budget));
}

// covers(a, b): api.covers' rules but the last (radix.hpp); NotImplemented when only that
// one (enumerating b's cells) can answer, None when a value does not fit.
PyObject* covers_impl(PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("covers(a, b)", nargs, 2, 2)) return nullptr;
    TwoLayouts t;
    int fits = t.read(args);
    if (fits < 0) return nullptr;
    if (!fits) Py_RETURN_NONE;
    int r;
    try {
        afn::Normal na, nb;
        afn::normalise(t.a, na);
        afn::normalise(t.b, nb);
        r = afn::covers(na, nb);
    } catch (afn::Overflow&) {
        Py_RETURN_NONE;
    }
    if (r == afn::UNDECIDED) Py_RETURN_NOTIMPLEMENTED;
    return answer(r);
}

PyObject* int128(afn::i128 v) {  // values here are below 2^127 in magnitude
    if (afn::fits64(v)) return PyLong_FromLongLong((long long)v);
    char digits[48], *p = digits + sizeof digits;
    *--p = 0;
    bool negative = v < 0;
    unsigned __int128 u = negative ? -(unsigned __int128)v : (unsigned __int128)v;
    do { *--p = char('0' + int(u % 10)); u /= 10; } while (u);
    if (negative) *--p = '-';
    return PyLong_FromString(p, nullptr, 10);
}

// a tuple of the n new references item(0), ..., item(n - 1); nullptr with an error set
template <class F>
PyObject* tuple_of(size_t n, F item) {
    Ref t(PyTuple_New(Py_ssize_t(n)));
    if (!t.p) return nullptr;
    for (size_t k = 0; k < n; ++k) {
        PyObject* v = item(k);
        if (!v) return nullptr;
        PyTuple_SET_ITEM(t.p, Py_ssize_t(k), v);
    }
    return t.release();
}

// (start, step, count) of each level
PyObject* progressions(const std::vector<afn::radix::AP>& aps) {
    return tuple_of(aps.size(), [&aps](size_t k) -> PyObject* {
        Ref start(int128(aps[k].start));
        Ref step(start.p ? int128(aps[k].step) : nullptr);
        Ref count(step.p ? int128(aps[k].count) : nullptr);
        return count.p ? PyTuple_Pack(3, start.p, step.p, count.p) : nullptr;
    });
}

// _product_form(a, b): radix.hpp's product form of two layouts' normal forms, for the tests
// (they compare it with radix.product_form): (chain, aps of a, aps of b), each a tuple of
// ints or of (start, step, count); None when there is none (or a layout is empty);
// OverflowError when a value does not fit.
PyObject* product_form_impl(PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("_product_form(a, b)", nargs, 2, 2)) return nullptr;
    TwoLayouts t;
    int fits = t.read(args);
    if (fits < 0) return nullptr;
    afn::radix::Chain chain;
    std::vector<afn::radix::AP> pa, pb;
    try {
        if (!fits) throw afn::Overflow();
        afn::Normal na, nb;
        afn::normalise(t.a, na);
        afn::normalise(t.b, nb);
        if (na.empty || nb.empty) Py_RETURN_NONE;
        if (!afn::radix::product_form(afn::radix::view_of(na), afn::radix::view_of(nb), pa, pb,
                                      &chain))
            Py_RETURN_NONE;
    } catch (afn::Overflow&) {
        PyErr_SetString(PyExc_OverflowError, "_product_form: a value does not fit");
        return nullptr;
    }
    Ref c(tuple_of(chain.size(), [&chain](size_t k) { return int128(chain[k]); }));
    Ref x(c.p ? progressions(pa) : nullptr);
    Ref y(x.p ? progressions(pb) : nullptr);
    return y.p ? PyTuple_Pack(3, c.p, x.p, y.p) : nullptr;
}

// _count3(c1, u1, c2, u2, c3, s, step, count, d): afn::count3, for the tests only (they
// compare it with a brute force and with search._count3); None when a value does not fit.
PyObject* py_count3(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("_count3", nargs, 9, 9)) return nullptr;
    int64_t v[9];
    for (int k = 0; k < 9; ++k) {
        int r = read_int(args[k], v[k], "argument");
        if (r < 0) return nullptr;
        if (r == 0) Py_RETURN_NONE;
    }
    // count3's preconditions that keep its divisions defined
    if (v[0] <= 0 || v[2] <= 0 || v[4] <= 0 || v[1] < 0 || v[3] < 0 || v[6] <= 0 || v[7] < 0) {
        PyErr_SetString(PyExc_TypeError, "_count3: coefficients and step must be positive");
        return nullptr;
    }
    try {
        afn::i128 n = afn::count3(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
        if (n > afn::i128(INT64_MAX) || n < afn::i128(INT64_MIN)) Py_RETURN_NONE;
        return PyLong_FromLongLong((long long)n);
    } catch (afn::Overflow&) {
        Py_RETURN_NONE;
    }
}

// data_address(obj) -> the address of obj's first element as its buffer (PEP 3118) gives
// it, or None when obj exports no strided buffer (the error is cleared: the caller asks
// NumPy's __array_interface__ instead, which costs about 2 us for the dict it builds).
PyObject* py_data_address(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("data_address(obj)", nargs, 1, 1)) return nullptr;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_STRIDES) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject* out = PyLong_FromVoidPtr(view.buf);
    PyBuffer_Release(&view);
    return out;
}

PyMethodDef methods[] = {
    {"intersects", (PyCFunction)(void (*)(void))py_intersects, METH_FASTCALL,
     "intersects(a, b[, budget]) with layouts (offset, shape, stride) as exact tuples of "
     "ints -> True/False; None when not decided here (values too large); NotImplemented when "
     "the search ran past its work budget."},
    {"has_internal_overlap", (PyCFunction)(void (*)(void))py_internal, METH_FASTCALL,
     "has_internal_overlap(a[, budget]) -> True/False, None or NotImplemented as for "
     "intersects."},
    {"covers", (PyCFunction)(void (*)(void))afpy::guarded<covers_impl>, METH_FASTCALL,
     "covers(a, b) -> True/False by api.covers' rules up to its last; NotImplemented when "
     "only enumerating b's cells can answer; None when values are too large."},
    {"_product_form", (PyCFunction)(void (*)(void))afpy::guarded<product_form_impl>, METH_FASTCALL,
     "_product_form(a, b) -> (chain, aps of a, aps of b) or None: the compiled "
     "radix.product_form of two layouts' normal forms (for tests)."},
    {"data_address", (PyCFunction)(void (*)(void))py_data_address, METH_FASTCALL,
     "data_address(obj) -> the address of obj's first element from its buffer (PEP 3118), "
     "or None when it exports no strided buffer."},
    {"_count3", (PyCFunction)(void (*)(void))py_count3, METH_FASTCALL,
     "_count3(c1, u1, c2, u2, c3, s, step, count, d): the three-term solution count of the "
     "compiled search (for tests)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.solver._native",
                      "Compiled exact overlap checks (see aliasflow/solver/_native_src/overlap.hpp).",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__native(void) {
    PyObject* m = PyModule_Create(&module);
    if (!m) return nullptr;
    if (PyModule_AddIntConstant(m, "MAX_NDIM", afn::MAX_NDIM) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_BUDGET", afn::DEFAULT_BUDGET) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
