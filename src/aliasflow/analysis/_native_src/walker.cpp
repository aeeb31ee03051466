// aliasflow.analysis._walker: the CPython boundary of the compiled dependency walk.
//
// Two entry points, both returning the edges as packed int32 rows
// (src op, dst op, kind, src row, dst row):
//
//   walk_ops(ops, view_type, place, intersects, covers, progress, params)
//       lowers the ops itself (reading each view's offset/shape/stride/extent once), asks
//       `place(tensors)` for each tensor's memory group and element shift, then walks.
//       Returns None whenever the program is outside what this fast path handles (a view
//       not of exactly `view_type`, a view whose dtype is not its tensor's, cells that are
//       not the tensors' elements, values beyond 2^62, lists that are not lists): the caller
//       then lowers in Python and calls walk_table.
//   walk_table(n_ops, n_groups, columns, intersects, covers, progress, params)
//       walks an access table lowered in Python (AccessTable.columns() as bytes).
//
// Boundary rules as in the solver's module.cpp: exact types only, every value range-checked
// here and trusted in walk.hpp.  The walk runs without the GIL; it takes it back only for
// the callbacks (the rare layouts the compiled solver hands back, covers tests beyond the
// cheap rules, progress and signal checks).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <unordered_map>

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

PyObject* pack_edges(const std::vector<afw::Edge>& edges) {
    static_assert(sizeof(afw::Edge) == 5 * sizeof(int32_t), "packed edges");
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(edges.data()),
                                     Py_ssize_t(edges.size() * sizeof(afw::Edge)));
}

// Walk `rows` without the GIL; edges into a bytes object, or nullptr with an error set.
// The rows are freed before the edges are packed (the two would add up at the peak).
PyObject* run_walk(afw::Rows& rows, int64_t n_ops, int64_t n_groups, const afw::Params& p,
                   PyCallbacks& cb) {
    std::vector<afw::Edge> edges;
    bool ok;
    {
        afw::Walker w(rows, n_ops, n_groups, p, cb);
        cb.ts = PyEval_SaveThread();
        try {
            ok = w.run();
        } catch (std::bad_alloc&) {
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

// ---------------------------------------------------------------- walk_ops: lowering
struct Names {
    PyObject *input_views, *output_views, *tensor, *offset, *shape, *stride, *extent, *dtype;
};
Names names;

struct ViewRef { int32_t op, tensor; int8_t mode; int32_t pos; PyObject* view; };

// One view as lowered (in its tensor's elements; shifted into its group's cells later). Its
// dims are appended to the rows' shape/stride once, and every row of the view points there.
struct ViewInfo {
    int32_t tensor;
    bool empty, dense;
    int64_t low, high, offset, dims_start;
    int8_t ndim;
};

// Reads one view's fields.  1 ok, 0 fall back, -1 error.  Empty views (extent None) make
// no row.
int read_view(PyObject* v, afw::Rows& rows, ViewInfo& info) {
    PyObject* ext = PyObject_GetAttr(v, names.extent);
    if (!ext) return -1;
    if (ext == Py_None) {
        Py_DECREF(ext);
        info.empty = true;
        return 1;
    }
    info.empty = false;
    PyObject* off = PyObject_GetAttr(v, names.offset);
    PyObject* shape = PyObject_GetAttr(v, names.shape);
    PyObject* stride = PyObject_GetAttr(v, names.stride);
    int res = -1;
    if (off && shape && stride) {
        res = 0;
        int64_t lo, hi, o;
        Py_ssize_t n;
        if (PyTuple_CheckExact(ext) && PyTuple_GET_SIZE(ext) == 2 && PyTuple_CheckExact(shape) &&
            PyTuple_CheckExact(stride) && (n = PyTuple_GET_SIZE(shape)) == PyTuple_GET_SIZE(stride) &&
            n <= afn::MAX_NDIM) {
            int a = get_int(PyTuple_GET_ITEM(ext, 0), lo);
            int b = a == 1 ? get_int(PyTuple_GET_ITEM(ext, 1), hi) : a;
            int c = b == 1 ? get_int(off, o) : b;
            res = c;
            if (c == 1) {
                size_t base = rows.shape.size();
                for (Py_ssize_t k = 0; k < n && res == 1; ++k) {
                    int64_t sn, ss;
                    res = get_int(PyTuple_GET_ITEM(shape, k), sn);
                    if (res == 1) res = get_int(PyTuple_GET_ITEM(stride, k), ss);
                    if (res == 1 && sn < 0) res = 0;
                    if (res == 1) {
                        rows.shape.push_back(sn);
                        rows.stride.push_back(ss);
                    }
                }
                if (res == 1) {
                    // density (view.is_dense): sorted |stride| of dims of size != 1 step
                    // through 1, n0, n0*n1, ... exactly
                    struct D { int64_t s, n; };
                    D dims[afn::MAX_NDIM];
                    int k2 = 0;
                    for (Py_ssize_t k = 0; k < n; ++k) {
                        int64_t sn = rows.shape[base + k], ss = rows.stride[base + k];
                        if (sn != 1) dims[k2++] = D{ss < 0 ? -ss : ss, sn};
                    }
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
                    info.low = lo;
                    info.high = hi;
                    info.offset = o;
                    info.dense = dense;
                    info.dims_start = int64_t(base);
                    info.ndim = int8_t(n);
                } else {
                    rows.shape.resize(base);
                    rows.stride.resize(base);
                }
            }
        }
    }
    Py_DECREF(ext);
    Py_XDECREF(off);
    Py_XDECREF(shape);
    Py_XDECREF(stride);
    return res;
}

// The ops' view lists as tuples (reused when they are tuples already).
PyObject* as_tuple(PyObject* o) {
    if (PyTuple_CheckExact(o)) {
        Py_INCREF(o);
        return o;
    }
    if (PyList_CheckExact(o)) return PyList_AsTuple(o);
    return nullptr;  // not a list: fall back (no error set)
}

PyObject* py_walk_ops(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "walk_ops takes 7 arguments, got %zd", nargs);
        return nullptr;
    }
    PyObject *ops = args[0], *view_type = args[1], *place = args[2];
    PyCallbacks cb;
    cb.fn_intersects = args[3];
    cb.fn_covers = args[4];
    cb.fn_progress = args[5];
    afw::Params p;
    // a tuple: Python code run by an attribute lookup below cannot change it under us
    if (!PyTuple_CheckExact(ops)) {
        PyErr_SetString(PyExc_TypeError, "ops must be a tuple");
        return nullptr;
    }
    if (!PyType_Check(view_type)) {
        PyErr_SetString(PyExc_TypeError, "view_type must be a type");
        return nullptr;
    }
    if (!check_callable(place, "place") || !check_callable(cb.fn_intersects, "intersects") ||
        !check_callable(cb.fn_covers, "covers") ||
        !check_callable(cb.fn_progress, "progress", true) ||
        !read_params(args[6], p, cb.covers_limit))
        return nullptr;
    Py_ssize_t n_ops = PyTuple_GET_SIZE(ops);
    if (n_ops >= INT32_MAX / 2) Py_RETURN_NONE;

    afw::Rows rows;
    std::vector<int32_t> row_tensor, row_pos;
    std::vector<ViewInfo> views;                       // each distinct view, read once
    std::unordered_map<PyObject*, int32_t> view_cache;  // view -> its entry (views alive:
                                                        // the snapshot holds them)
    auto push_row = [&](const ViewInfo& info, int32_t op, int8_t mode, int32_t pos) {
        if (info.empty) return;
        rows.op.push_back(op);
        rows.mode.push_back(mode);
        rows.low.push_back(info.low);
        rows.high.push_back(info.high);
        rows.offset.push_back(info.offset);
        rows.dense.push_back(info.dense);
        rows.dims_start.push_back(info.dims_start);
        rows.ndim.push_back(info.ndim);
        row_tensor.push_back(info.tensor);
        row_pos.push_back(pos);
    };
    std::vector<PyObject*> tensor_of;  // owned by `tlist`
    std::unordered_map<PyObject*, int32_t> tensor_index;
    // what the graph keeps of the ops as walked: every view in order (inputs, then outputs,
    // op by op) and where each op's lists start; Dependency records find their views here
    PyObject* snapshot = PyList_New(0);
    if (!snapshot) return nullptr;
    std::vector<int32_t> vstart;
    vstart.reserve(size_t(2 * n_ops + 1));
    PyObject* tlist = PyList_New(0);
    if (!tlist) {
        Py_DECREF(snapshot);
        return nullptr;
    }
    view_cache.reserve(size_t(n_ops));  // about a view per op: no rehash on the way
    int status = 1;  // 1 ok, 0 fall back, -1 error
    PyObject* seen[16];
    for (Py_ssize_t j = 0; j < n_ops && status == 1; ++j) {
        PyObject* op = PyTuple_GET_ITEM(ops, j);
        rows.op_starts.push_back(rows.size());
        PyObject* lists[2] = {PyObject_GetAttr(op, names.input_views),
                              PyObject_GetAttr(op, names.output_views)};
        PyObject* tup[2] = {nullptr, nullptr};
        if (!lists[0] || !lists[1]) status = -1;
        for (int m = 0; m < 2 && status == 1; ++m) {
            tup[m] = as_tuple(lists[m]);
            if (!tup[m]) status = PyErr_Occurred() ? -1 : 0;
        }
        Py_XDECREF(lists[0]);
        Py_XDECREF(lists[1]);
        for (int m = 0; m < 2 && status == 1; ++m) {
            vstart.push_back(int32_t(PyList_GET_SIZE(snapshot)));
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tup[m]) && status == 1; ++k)
                if (PyList_Append(snapshot, PyTuple_GET_ITEM(tup[m], k)) < 0) status = -1;
            if (PyList_GET_SIZE(snapshot) >= INT32_MAX / 2) status = 0;
        }
        for (int m = 0; m < 2 && status == 1; ++m) {
            Py_ssize_t nv = PyTuple_GET_SIZE(tup[m]);
            std::unordered_map<PyObject*, int> many;  // only for long lists
            for (Py_ssize_t k = 0; k < nv && status == 1; ++k) {
                PyObject* v = PyTuple_GET_ITEM(tup[m], k);
                // an op reading one view object twice reads it once (lower.unique_views)
                bool dup = false;
                if (nv <= 16) {
                    for (Py_ssize_t t = 0; t < k; ++t)
                        if (seen[t] == v) dup = true;
                    seen[k] = v;
                } else {
                    dup = !many.emplace(v, 1).second;
                }
                if (dup) continue;
                // a view seen before (programs reuse views a lot) is read once
                auto cached = view_cache.find(v);
                if (cached != view_cache.end()) {
                    push_row(views[size_t(cached->second)], int32_t(j), int8_t(m), int32_t(k));
                    continue;
                }
                if (Py_TYPE(v) != (PyTypeObject*)view_type) {
                    status = 0;
                    break;
                }
                PyObject* t = PyObject_GetAttr(v, names.tensor);
                PyObject* vd = t ? PyObject_GetAttr(v, names.dtype) : nullptr;
                PyObject* td = vd ? PyObject_GetAttr(t, names.dtype) : nullptr;
                if (!td) status = -1;
                else if (vd != td) status = 0;  // a reinterpreting view: Python lowers
                int32_t ti = -1;
                if (status == 1) {
                    auto it = tensor_index.find(t);
                    if (it == tensor_index.end()) {
                        ti = int32_t(tensor_of.size());
                        if (PyList_Append(tlist, t) < 0) {
                            status = -1;
                        } else {
                            tensor_index.emplace(t, ti);
                            tensor_of.push_back(t);
                        }
                    } else {
                        ti = it->second;
                    }
                }
                Py_XDECREF(t);
                Py_XDECREF(vd);
                Py_XDECREF(td);
                if (status != 1) break;
                ViewInfo info;
                info.tensor = ti;
                status = read_view(v, rows, info);
                if (status != 1) break;
                view_cache.emplace(v, int32_t(views.size()));
                views.push_back(info);
                push_row(info, int32_t(j), int8_t(m), int32_t(k));
            }
        }
        Py_XDECREF(tup[0]);
        Py_XDECREF(tup[1]);
    }
    if (status == 1 && rows.size() >= INT32_MAX / 4) status = 0;
    if (status != 1) {
        Py_DECREF(snapshot);
        Py_DECREF(tlist);
        if (status < 0) return nullptr;
        Py_RETURN_NONE;
    }
    rows.op_starts.push_back(rows.size());
    // place(tensors) -> (groups, shifts) or None
    PyObject* placed = PyObject_CallOneArg(place, tlist);
    Py_DECREF(tlist);
    if (!placed) {
        Py_DECREF(snapshot);
        return nullptr;
    }
    std::vector<int64_t> group(tensor_of.size()), shift(tensor_of.size());
    int64_t n_groups = 0;
    status = 0;
    if (PyTuple_CheckExact(placed) && PyTuple_GET_SIZE(placed) == 2) {
        PyObject *g = PyTuple_GET_ITEM(placed, 0), *s = PyTuple_GET_ITEM(placed, 1);
        Py_ssize_t nt = Py_ssize_t(tensor_of.size());
        if (PyTuple_CheckExact(g) && PyTuple_CheckExact(s) && PyTuple_GET_SIZE(g) == nt &&
            PyTuple_GET_SIZE(s) == nt) {
            status = 1;
            for (Py_ssize_t k = 0; k < nt && status == 1; ++k) {
                status = get_int(PyTuple_GET_ITEM(g, k), group[k]);
                if (status == 1) status = get_int(PyTuple_GET_ITEM(s, k), shift[k]);
                if (status == 1 && (group[k] < 0 || group[k] >= nt || shift[k] < 0 ||
                                    shift[k] > LIM / 2))
                    status = 0;
                if (status == 1) n_groups = std::max(n_groups, group[k] + 1);
            }
        }
    }
    Py_DECREF(placed);
    if (status != 1) {
        Py_DECREF(snapshot);
        if (status < 0) return nullptr;
        Py_RETURN_NONE;
    }
    // shift rows into their group's cells; every value stays within 2^62
    rows.group.resize(rows.op.size());
    for (size_t r = 0; r < rows.op.size(); ++r) {
        int64_t d = shift[size_t(row_tensor[r])];
        rows.group[r] = int32_t(group[size_t(row_tensor[r])]);
        rows.low[r] += d;
        rows.high[r] += d;
        rows.offset[r] += d;
        if (rows.low[r] > LIM || rows.high[r] > LIM || rows.offset[r] > LIM) {
            Py_DECREF(snapshot);
            Py_RETURN_NONE;
        }
    }
    // row -> position of its view in the snapshot; then where each op's lists start
    Py_ssize_t n_rows = Py_ssize_t(rows.op.size());
    vstart.push_back(int32_t(PyList_GET_SIZE(snapshot)));
    PyObject* meta_b = PyBytes_FromStringAndSize(
        nullptr, Py_ssize_t((size_t(n_rows) + vstart.size()) * sizeof(int32_t)));
    if (!meta_b) {
        Py_DECREF(snapshot);
        return nullptr;
    }
    int32_t* meta = reinterpret_cast<int32_t*>(PyBytes_AS_STRING(meta_b));
    for (Py_ssize_t r = 0; r < n_rows; ++r)
        meta[r] = vstart[size_t(2 * rows.op[size_t(r)] + rows.mode[size_t(r)])] + row_pos[size_t(r)];
    std::copy(vstart.begin(), vstart.end(), meta + n_rows);
    // what only the lowering needed goes before the walk; the rows go before the packing
    std::vector<int32_t>().swap(row_pos);
    std::vector<int32_t>().swap(row_tensor);
    std::vector<int32_t>().swap(vstart);
    rows.shrink();
    PyObject* edges = run_walk(rows, n_ops, n_groups, p, cb);
    if (!edges) {
        Py_DECREF(meta_b);
        Py_DECREF(snapshot);
        return nullptr;
    }
    return Py_BuildValue("(NNNn)", edges, meta_b, snapshot, n_rows);
}

// ---------------------------------------------------------------- walk_table
// columns: (op, mode, group, low, high, dense, offset, dims_start, shape, stride) as bytes
// of int64 each (dims_start with n + 1 entries).
bool column(PyObject* cols, int k, const char* name, Py_ssize_t n, std::vector<int64_t>& out) {
    PyObject* b = PyTuple_GET_ITEM(cols, k);
    if (!PyBytes_CheckExact(b)) {
        PyErr_Format(PyExc_TypeError, "column %s must be bytes", name);
        return false;
    }
    if (n >= 0 && PyBytes_GET_SIZE(b) != n * Py_ssize_t(sizeof(int64_t))) {
        PyErr_Format(PyExc_ValueError, "column %s has %zd bytes, expected %zd", name,
                     PyBytes_GET_SIZE(b), n * Py_ssize_t(sizeof(int64_t)));
        return false;
    }
    if (PyBytes_GET_SIZE(b) % sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "column %s is not whole int64s", name);
        return false;
    }
    out.resize(size_t(PyBytes_GET_SIZE(b)) / sizeof(int64_t));
    if (!out.empty()) std::memcpy(out.data(), PyBytes_AS_STRING(b), out.size() * sizeof(int64_t));
    return true;
}

PyObject* bad(const char* what, int64_t r) {
    PyErr_Format(PyExc_ValueError, "access table row %lld: bad %s", (long long)r, what);
    return nullptr;
}

PyObject* py_walk_table(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "walk_table takes 7 arguments, got %zd", nargs);
        return nullptr;
    }
    int64_t n_ops, n_groups;
    if (get_int(args[0], n_ops) != 1 || get_int(args[1], n_groups) != 1 || n_ops < 0 ||
        n_groups < 0 || n_ops >= INT32_MAX / 2 || n_groups >= INT32_MAX) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "n_ops/n_groups out of range");
        return nullptr;
    }
    PyObject* cols = args[2];
    PyCallbacks cb;
    cb.fn_intersects = args[3];
    cb.fn_covers = args[4];
    cb.fn_progress = args[5];
    afw::Params p;
    if (!check_callable(cb.fn_intersects, "intersects") || !check_callable(cb.fn_covers, "covers") ||
        !check_callable(cb.fn_progress, "progress", true) || !read_params(args[6], p, cb.covers_limit))
        return nullptr;
    if (!PyTuple_CheckExact(cols) || PyTuple_GET_SIZE(cols) != 10) {
        PyErr_SetString(PyExc_TypeError, "columns must be a tuple of 10 bytes objects");
        return nullptr;
    }
    std::vector<int64_t> op, mode, group, low, high, dense, offset, ds, shape, stride;
    if (!column(cols, 0, "op", -1, op)) return nullptr;
    Py_ssize_t n = Py_ssize_t(op.size());
    if (n >= INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "access table too large");
        return nullptr;
    }
    if (!column(cols, 1, "mode", n, mode) || !column(cols, 2, "group", n, group) ||
        !column(cols, 3, "low", n, low) || !column(cols, 4, "high", n, high) ||
        !column(cols, 5, "dense", n, dense) || !column(cols, 6, "offset", n, offset) ||
        !column(cols, 7, "dims_start", n + 1, ds) || !column(cols, 8, "shape", -1, shape) ||
        !column(cols, 9, "stride", Py_ssize_t(shape.size()), stride))
        return nullptr;
    afw::Rows rows;
    rows.dims_start.assign(ds.begin(), ds.end() - 1);
    rows.shape = shape;
    rows.stride = stride;
    if (ds[0] != 0 || ds[size_t(n)] != int64_t(shape.size())) return bad("dims_start", 0);
    int64_t prev = 0;
    rows.op_starts.push_back(0);
    for (Py_ssize_t r = 0; r < n; ++r) {
        if (op[r] < prev || op[r] >= n_ops) return bad("op (not in order or out of range)", r);
        while (prev < op[r]) {
            rows.op_starts.push_back(r);
            ++prev;
        }
        if (mode[r] != 0 && mode[r] != 1) return bad("mode", r);
        if (group[r] < 0 || group[r] >= n_groups) return bad("group", r);
        if (dense[r] != 0 && dense[r] != 1) return bad("dense", r);
        if (ds[r + 1] < ds[r] || ds[r + 1] - ds[r] > afn::MAX_NDIM) return bad("dims_start", r);
        for (int64_t v : {low[r], high[r], offset[r]})
            if (v > LIM || v < -LIM) return bad("cell (beyond 2^62)", r);
        if (low[r] > high[r]) return bad("extent", r);
        for (int64_t k = ds[r]; k < ds[r + 1]; ++k)
            if (shape[k] < 0 || shape[k] > LIM || stride[k] > LIM || stride[k] < -LIM)
                return bad("shape or stride", r);
        rows.op.push_back(int32_t(op[r]));
        rows.mode.push_back(int8_t(mode[r]));
        rows.group.push_back(int32_t(group[r]));
        rows.dense.push_back(uint8_t(dense[r]));
        rows.ndim.push_back(int8_t(ds[r + 1] - ds[r]));
    }
    while (prev < n_ops) {
        rows.op_starts.push_back(n);
        ++prev;
    }
    rows.low = low;
    rows.high = high;
    rows.offset = offset;
    return run_walk(rows, n_ops, n_groups, p, cb);
}

PyMethodDef methods[] = {
    {"walk_ops", (PyCFunction)(void (*)(void))py_walk_ops, METH_FASTCALL,
     "walk_ops(ops, view_type, place, intersects, covers, progress, params) -> "
     "(edges, meta, views, n_rows) or None (use walk_table): meta holds each row's "
     "position in views, then where each op's inputs and outputs start there."},
    {"walk_table", (PyCFunction)(void (*)(void))py_walk_table, METH_FASTCALL,
     "walk_table(n_ops, n_groups, columns, intersects, covers, progress, params) -> edges."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.analysis._walker",
                      "Compiled dependency walk (see aliasflow/analysis/_native_src/walk.hpp).",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__walker(void) {
    const char* keys[] = {"input_views", "output_views", "tensor", "offset",
                          "shape", "stride", "extent", "dtype"};
    PyObject** slots[] = {&names.input_views, &names.output_views, &names.tensor, &names.offset,
                          &names.shape, &names.stride, &names.extent, &names.dtype};
    for (int k = 0; k < 8; ++k) {
        *slots[k] = PyUnicode_InternFromString(keys[k]);
        if (!*slots[k]) return nullptr;
    }
    return PyModule_Create(&module);
}
