// aliasflow.analysis._walker: the CPython boundary of the compiled dependency walk.
//
// One entry point, integers in and integers out:
//
//   walk_table(n_ops, n_groups, op_starts, modes, entries, groups, offsets, dims_start,
//              shape, stride, intersects, covers, progress, params)
//
// walks the access table lowered in Python (aliasflow.analysis.lower.AccessTable): rows
// (each op's rows between op_starts, a mode and a view entry per row) and entries (a memory
// group and a cell layout per distinct view). It returns the edges as packed int32 pairs
// (src row, dst row * 4 + kind) in an EdgeBuffer (a read-only buffer; afw::Edge). The
// callbacks receive and return plain layouts (tuples of ints) and ints.
//
// Boundary rules as in the solver's module.cpp: exact types only, every value range-checked
// here and trusted in walk.hpp.  The walk runs without the GIL; it takes it back only for
// the callbacks (the rare layouts the compiled solver hands back, covers tests beyond the
// cheap rules, progress and signal checks).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstring>
#include <stdexcept>
#include <algorithm>

#include "../../_native_src/boundary.hpp"
#include "walk.hpp"

namespace {

constexpr int64_t LIM = afn::INPUT_LIMIT;

// 1 converted; 0 does not fit (or not an exact int): fall back; -1 error set
int get_int(PyObject* o, int64_t& out) {
    if (!PyLong_CheckExact(o)) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return 0;
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v > LIM || v < -LIM) return 0;
    out = v;
    return 1;
}

PyObject* layout_tuple(const afn::Layout& L) {
    PyObject* shape = PyTuple_New(L.ndim);
    PyObject* stride = PyTuple_New(L.ndim);
    if (!shape || !stride) {
        Py_XDECREF(shape);
        Py_XDECREF(stride);
        return nullptr;
    }
    for (int k = 0; k < L.ndim; ++k) {
        PyObject* n = PyLong_FromLongLong(L.shape[k]);
        PyObject* s = PyLong_FromLongLong(L.stride[k]);
        if (!n || !s) {
            Py_XDECREF(n);
            Py_XDECREF(s);
            Py_DECREF(shape);
            Py_DECREF(stride);
            return nullptr;
        }
        PyTuple_SET_ITEM(shape, k, n);
        PyTuple_SET_ITEM(stride, k, s);
    }
    PyObject* off = PyLong_FromLongLong(L.offset);
    if (!off) {
        Py_DECREF(shape);
        Py_DECREF(stride);
        return nullptr;
    }
    return Py_BuildValue("(NNN)", off, shape, stride);
}

// Python callbacks; the walk calls them without the GIL, so each takes it back.
struct PyCallbacks : afw::Callbacks {
    PyObject *fn_intersects, *fn_covers, *fn_progress;
    PyObject* covers_limit;
    PyThreadState* ts = nullptr;

    bool call_bool(PyObject* fn, const afn::Layout& a, const afn::Layout& b, PyObject* extra,
                   bool& out) {
        PyEval_RestoreThread(ts);
        bool ok = false;
        PyObject* ta = layout_tuple(a);
        PyObject* tb = ta ? layout_tuple(b) : nullptr;
        if (tb) {
            PyObject* r = extra ? PyObject_CallFunctionObjArgs(fn, ta, tb, extra, nullptr)
                                : PyObject_CallFunctionObjArgs(fn, ta, tb, nullptr);
            if (r) {
                int t = PyObject_IsTrue(r);
                Py_DECREF(r);
                if (t >= 0) {
                    out = t;
                    ok = true;
                }
            }
        }
        Py_XDECREF(ta);
        Py_XDECREF(tb);
        ts = PyEval_SaveThread();
        return ok;
    }
    bool intersects(const afn::Layout& a, const afn::Layout& b, bool& out) override {
        return call_bool(fn_intersects, a, b, nullptr, out);
    }
    bool covers(const afn::Layout& a, const afn::Layout& b, bool& out) override {
        return call_bool(fn_covers, a, b, covers_limit, out);
    }
    bool progress(int64_t n) override {
        PyEval_RestoreThread(ts);
        bool ok = PyErr_CheckSignals() == 0;
        if (ok && fn_progress != Py_None) {
            PyObject* r = PyObject_CallFunction(fn_progress, "L", (long long)n);
            ok = r != nullptr;
            Py_XDECREF(r);
        }
        ts = PyEval_SaveThread();
        return ok;
    }
};

// params: (retire: bool, prune: int 0..7, covers_limit: int >= 0, window: int 1..2^16,
// progress_step: int >= 0)
bool read_params(PyObject* o, afw::Params& p, PyObject*& covers_limit) {
    if (!PyTuple_CheckExact(o) || PyTuple_GET_SIZE(o) != 5) {
        PyErr_SetString(PyExc_TypeError, "params must be a tuple of 5 values");
        return false;
    }
    int64_t v[4];
    for (int k = 0; k < 4; ++k) {
        if (get_int(PyTuple_GET_ITEM(o, k + 1), v[k]) != 1) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "params[%d] must be an int in range", k + 1);
            return false;
        }
    }
    if (v[0] < 0 || v[0] > 7 || v[1] < 0 || v[2] < 1 || v[2] > 65536 || v[3] < 0) {
        PyErr_SetString(PyExc_ValueError, "params out of range");
        return false;
    }
    int t = PyObject_IsTrue(PyTuple_GET_ITEM(o, 0));
    if (t < 0) return false;
    p.retire = t;
    p.prune = int(v[0]);
    p.covers_limit = v[1];
    p.window = int(v[2]);
    p.progress_step = v[3];
    covers_limit = PyTuple_GET_ITEM(o, 2);
    return true;
}

bool check_callable(PyObject* o, const char* what, bool none_ok = false) {
    if ((none_ok && o == Py_None) || PyCallable_Check(o)) return true;
    PyErr_Format(PyExc_TypeError, "%s must be callable", what);
    return false;
}

// The edges as Python sees them: the walk's own array behind the buffer protocol (numpy
// reads it with frombuffer, read-only), freed with the object. No copy, so handing the edges
// over holds them once. Made only here: the type has no constructor.
struct EdgeBuffer {
    PyObject_HEAD
    afw::Edge* data;
    Py_ssize_t bytes;
    size_t capacity;  // bytes allocated (afw::edge_memory)
};

int edge_buffer_get(PyObject* self, Py_buffer* view, int flags) {
    auto* e = reinterpret_cast<EdgeBuffer*>(self);
    static char empty[1];
    return PyBuffer_FillInfo(view, self, e->data ? static_cast<void*>(e->data) : empty, e->bytes,
                             1, flags);
}

void edge_buffer_dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    auto* e = reinterpret_cast<EdgeBuffer*>(self);
    afw::edge_memory::free(e->data, e->capacity);
    type->tp_free(self);
    Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyType_Slot edge_buffer_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(edge_buffer_get)},
    {Py_tp_dealloc, reinterpret_cast<void*>(edge_buffer_dealloc)},
    {Py_tp_doc, const_cast<char*>("The compiled walk's edges as int32 rows (numpy.frombuffer reads them).")},
    {0, nullptr}};
PyType_Spec edge_buffer_spec = {"aliasflow.analysis._walker.EdgeBuffer", sizeof(EdgeBuffer), 0,
                                Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                edge_buffer_slots};
PyTypeObject* EdgeBufferType = nullptr;  // made at import (a heap type: no constructor)

PyObject* pack_edges(afw::EdgeList& edges) {
    static_assert(sizeof(afw::Edge) == 2 * sizeof(int32_t), "packed edges");
    EdgeBuffer* out = PyObject_New(EdgeBuffer, EdgeBufferType);
    if (!out) return nullptr;
    size_t n;
    out->data = edges.release(n, out->capacity);
    out->bytes = Py_ssize_t(n * sizeof(afw::Edge));
    return reinterpret_cast<PyObject*>(out);
}

// Walk `rows` without the GIL; the edges (an EdgeBuffer), or nullptr with an error set.
// The rows are freed before the edges are packed (the two would add up at the peak).
PyObject* run_walk(afw::Rows& rows, int64_t n_ops, int64_t n_groups, const afw::Params& p,
                   PyCallbacks& cb) {
    afw::EdgeList edges;
    bool ok;
    {
        afw::Walker w(rows, n_ops, n_groups, p, cb);
        cb.ts = PyEval_SaveThread();
        try {
            ok = w.run();
        } catch (std::bad_alloc&) {
            PyEval_RestoreThread(cb.ts);
            return PyErr_NoMemory();
        } catch (std::length_error&) {
            PyEval_RestoreThread(cb.ts);
            return PyErr_NoMemory();
        }
        PyEval_RestoreThread(cb.ts);
        edges.swap(w.edges);
    }
    rows = afw::Rows();
    if (!ok) return nullptr;
    return pack_edges(edges);
}

// ---------------------------------------------------------------- walk_table
PyObject* bad(const char* what, int64_t k) {
    PyErr_Format(PyExc_ValueError, "access table: bad %s at %lld", what, (long long)k);
    return nullptr;
}

// The extent and density of entry e's cell layout (every value already within LIM): what
// the Python table's extent_dense computes. False when the extent leaves [-LIM, LIM].
bool extent_of(afw::Rows& rows, size_t e) {
    int64_t n = rows.v_ndim[e];
    const int64_t* shape = rows.shape.data() + rows.v_dims_start[e];
    const int64_t* stride = rows.stride.data() + rows.v_dims_start[e];
    __int128 lo = rows.v_offset[e], hi = lo;
    struct D { int64_t s, n; };
    D dims[afn::MAX_NDIM];
    int k2 = 0;
    for (int64_t k = 0; k < n; ++k) {
        __int128 span = __int128(stride[k]) * (shape[k] - 1);
        if (span < 0) lo += span; else hi += span;
        if (shape[k] != 1) dims[k2++] = D{stride[k] < 0 ? -stride[k] : stride[k], shape[k]};
    }
    if (lo < -LIM || hi > LIM) return false;
    // density: sorted |stride| of dims of size != 1 step through 1, n0, n0*n1, ... exactly
    std::sort(dims, dims + k2, [](const D& x, const D& y) {
        return x.s < y.s || (x.s == y.s && x.n < y.n);
    });
    __int128 expected = 1;
    bool dense = true;
    for (int t = 0; t < k2; ++t) {
        if (dims[t].s != expected) {
            dense = false;
            break;
        }
        expected *= dims[t].n;
    }
    rows.v_low[e] = int64_t(lo);
    rows.v_high[e] = int64_t(hi);
    rows.v_dense[e] = dense;
    return true;
}

PyObject* walk_table_impl(PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 14) {
        PyErr_Format(PyExc_TypeError, "walk_table takes 14 arguments, got %zd", nargs);
        return nullptr;
    }
    int64_t n_ops, n_groups;
    if (get_int(args[0], n_ops) != 1 || get_int(args[1], n_groups) != 1 || n_ops < 0 ||
        n_groups < 0 || n_ops >= INT32_MAX / 2 || n_groups >= INT32_MAX) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "n_ops/n_groups out of range");
        return nullptr;
    }
    PyCallbacks cb;
    cb.fn_intersects = args[10];
    cb.fn_covers = args[11];
    cb.fn_progress = args[12];
    afw::Params p;
    if (!check_callable(cb.fn_intersects, "intersects") || !check_callable(cb.fn_covers, "covers") ||
        !check_callable(cb.fn_progress, "progress", true) || !read_params(args[13], p, cb.covers_limit))
        return nullptr;
    std::vector<int64_t> op_starts, modes, entries, groups, offsets, ds, shape, stride;
    const char* names[] = {"op_starts", "modes", "entries", "groups", "offsets", "dims_start",
                           "shape", "stride"};
    std::vector<int64_t>* cols[] = {&op_starts, &modes, &entries, &groups, &offsets, &ds,
                                    &shape, &stride};
    for (int k = 0; k < 8; ++k)
        if (!afpy::read_int64_array(args[2 + k], *cols[k], names[k])) return nullptr;
    size_t n = modes.size(), n_views = groups.size();
    if (n >= size_t(INT32_MAX / 4) || n_views >= size_t(INT32_MAX / 4)) {
        PyErr_SetString(PyExc_ValueError, "access table too large");
        return nullptr;
    }
    if (op_starts.size() != size_t(n_ops + 1) || op_starts[0] != 0 ||
        op_starts.back() != int64_t(n))
        return bad("op_starts (n_ops + 1 positions from 0 to the row count)", 0);
    for (int64_t j = 0; j < n_ops; ++j)
        if (op_starts[size_t(j + 1)] < op_starts[size_t(j)]) return bad("op_starts order", j);
    if (entries.size() != n) return bad("entries (one per row)", 0);
    if (offsets.size() != n_views || ds.size() != n_views + 1 || ds[0] != 0 ||
        ds[n_views] != int64_t(shape.size()) || stride.size() != shape.size())
        return bad("entry columns (lengths)", 0);
    afw::Rows rows;
    rows.op_starts.assign(op_starts.begin(), op_starts.end());
    rows.mode.resize(n);
    rows.view.resize(n);
    for (size_t r = 0; r < n; ++r) {
        if (modes[r] != 0 && modes[r] != 1) return bad("mode", int64_t(r));
        if (entries[r] < 0 || entries[r] >= int64_t(n_views)) return bad("entry", int64_t(r));
        rows.mode[r] = int8_t(modes[r]);
        rows.view[r] = int32_t(entries[r]);
    }
    for (int64_t v : shape)
        if (v < 1 || v > LIM) return bad("shape (sizes 1..2^62: empty views make no row)", v);
    for (int64_t v : stride)
        if (v < -LIM || v > LIM) return bad("stride (beyond 2^62)", v);
    rows.v_group.resize(n_views);
    rows.v_ndim.resize(n_views);
    rows.v_dims_start.assign(ds.begin(), ds.end() - 1);
    rows.v_offset = offsets;
    rows.v_low.resize(n_views);
    rows.v_high.resize(n_views);
    rows.v_dense.resize(n_views);
    rows.shape.swap(shape);
    rows.stride.swap(stride);
    // every entry's dims within shape/stride before any is read (dims_start starts at 0,
    // ends at their length, and never decreases: checked whole, first)
    for (size_t e = 0; e < n_views; ++e)
        if (ds[e + 1] < ds[e] || ds[e + 1] - ds[e] > afn::MAX_NDIM) return bad("dims_start", int64_t(e));
    for (size_t e = 0; e < n_views; ++e) {
        if (groups[e] < 0 || groups[e] >= n_groups) return bad("group", int64_t(e));
        if (offsets[e] < -LIM || offsets[e] > LIM) return bad("offset (beyond 2^62)", int64_t(e));
        rows.v_group[e] = int32_t(groups[e]);
        rows.v_ndim[e] = int8_t(ds[e + 1] - ds[e]);
        if (!extent_of(rows, e)) return bad("extent (beyond 2^62)", int64_t(e));
    }
    return run_walk(rows, n_ops, n_groups, p, cb);
}

using afpy::guarded;

PyMethodDef methods[] = {
    {"walk_table", (PyCFunction)(void (*)(void))guarded<walk_table_impl>, METH_FASTCALL,
     "walk_table(n_ops, n_groups, op_starts, modes, entries, groups, offsets, dims_start, "
     "shape, stride, intersects, covers, progress, params) -> edges (an EdgeBuffer of int32 "
     "pairs: src row, dst row * 4 + kind)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.analysis._walker",
                      "Compiled dependency walk (see aliasflow/analysis/_native_src/walk.hpp).",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__walker(void) {
    EdgeBufferType = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&edge_buffer_spec));
    if (!EdgeBufferType) return nullptr;
    return PyModule_Create(&module);
}
