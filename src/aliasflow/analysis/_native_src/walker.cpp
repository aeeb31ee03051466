// aliasflow.analysis._walker: the CPython boundary of the compiled dependency walk.
//
// Two entry points, both returning the edges as packed int32 pairs
// (src row, dst row * 4 + kind) in an EdgeBuffer (a read-only buffer; afw::Edge):
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
// and same_views(ops, old_ops, views, starts), run()'s check that a graph's ops still have
// the views they were analysed with (schedule.OpViews.mismatch's common case).
//
// Boundary rules as in the solver's module.cpp: exact types only, every value range-checked
// here and trusted in walk.hpp.  The walk runs without the GIL; it takes it back only for
// the callbacks (the rare layouts the compiled solver hands back, covers tests beyond the
// cheap rules, progress and signal checks).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <cstring>
#include <stdexcept>
#include <unordered_map>

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

PyObject* int32_bytes(const std::vector<int32_t>& v) {
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(v.data()),
                                     Py_ssize_t(v.size() * sizeof(int32_t)));
}

// Walk `rows` without the GIL; the edges (an EdgeBuffer), or nullptr with an error set.
// The rows are freed before the edges are packed (the two would add up at the peak); what
// the caller keeps of them (each row's view entry, the ops' first rows) is swapped out.
PyObject* run_walk(afw::Rows& rows, int64_t n_ops, int64_t n_groups, const afw::Params& p,
                   PyCallbacks& cb, std::vector<int32_t>* row_entry = nullptr,
                   std::vector<int32_t>* op_starts = nullptr) {
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
    if (row_entry) row_entry->swap(rows.view);
    if (op_starts) op_starts->swap(rows.op_starts);
    rows = afw::Rows();
    if (!ok) return nullptr;
    return pack_edges(edges);
}

// ---------------------------------------------------------------- walk_ops: lowering
struct Names {
    PyObject *input_views, *output_views, *tensor, *offset, *shape, *stride, *extent, *dtype;
};
Names names;

// Reading a view's fields. When the view type reads attributes the generic way and a field
// resolves to a slot (a member descriptor, as TensorView's fields do), the slot is read
// directly: what getattr would do, without the lookup (most of the lowering's time). Any
// other case goes through PyObject_GetAttr. Resolved again on every walk_ops call, so a
// patched class is seen.
struct FieldReader {
    Py_ssize_t offset[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    void resolve(PyTypeObject* type, PyObject* const* fields, int n) {
        for (int k = 0; k < n; ++k) {
            offset[k] = -1;
            if (type->tp_getattro != PyObject_GenericGetAttr) continue;
            PyObject* d = _PyType_Lookup(type, fields[k]);  // borrowed
            if (!d || !Py_IS_TYPE(d, &PyMemberDescr_Type)) continue;
            PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(d)->d_member;
            if (m->type == T_OBJECT_EX) offset[k] = m->offset;
        }
    }
    // a new reference to field k of v (an instance of exactly the resolved type)
    PyObject* get(PyObject* v, int k, PyObject* name) const {
        if (offset[k] >= 0) {
            PyObject* value = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(v) + offset[k]);
            if (value) {
                Py_INCREF(value);
                return value;
            }  // unset: getattr raises the AttributeError
        }
        return PyObject_GetAttr(v, name);
    }
};
enum { F_EXTENT, F_OFFSET, F_SHAPE, F_STRIDE, F_TENSOR, F_DTYPE };

// Object -> int32 by identity: open addressing, linear probing, at most half full. The
// lowering asks it once per access (a std::unordered_map allocates a node per entry).
class PtrMap {
public:
    explicit PtrMap(size_t expected = 0) { grow_to(expected); }
    // the value of `key`, or nullptr
    const int32_t* find(PyObject* key) const {
        for (size_t i = slot(key);; i = (i + 1) & mask) {
            if (keys[i] == key) return &values[i];
            if (!keys[i]) return nullptr;
        }
    }
    void put(PyObject* key, int32_t value) {  // key not in the map
        if (2 * (used + 1) > keys.size()) grow_to(keys.size());
        size_t i = slot(key);
        while (keys[i]) i = (i + 1) & mask;
        keys[i] = key;
        values[i] = value;
        ++used;
    }
    void clear() {
        std::vector<PyObject*>().swap(keys);
        std::vector<int32_t>().swap(values);
        used = mask = 0;
    }

private:
    std::vector<PyObject*> keys;
    std::vector<int32_t> values;
    size_t used = 0, mask = 0;
    size_t slot(PyObject* key) const {
        uint64_t h = uint64_t(reinterpret_cast<uintptr_t>(key)) * 0x9E3779B97F4A7C15ULL;
        return size_t(h >> 20) & mask;
    }
    void grow_to(size_t n) {  // room for at least n entries
        size_t size = 16;
        while (size < 2 * n + 2) size *= 2;
        std::vector<PyObject*> old_keys(size, nullptr);
        std::vector<int32_t> old_values(size);
        old_keys.swap(keys);
        old_values.swap(values);
        mask = size - 1;
        used = 0;
        for (size_t i = 0; i < old_keys.size(); ++i)
            if (old_keys[i]) put(old_keys[i], old_values[i]);
    }
};

// A view read once: its entry in the rows' per-view arrays, or -1 when it is empty (extent
// None: no row). Its cells are its tensor's elements until the groups are placed.
constexpr int32_t EMPTY = -1;

// Reads one view's fields into a new per-view entry of `rows` (`id`, or EMPTY).  1 ok,
// 0 fall back, -1 error.
int read_view(PyObject* v, const FieldReader& view_fields, afw::Rows& rows, int32_t& id) {
    PyObject* ext = view_fields.get(v, F_EXTENT, names.extent);
    if (!ext) return -1;
    if (ext == Py_None) {
        Py_DECREF(ext);
        id = EMPTY;
        return 1;
    }
    PyObject* off = view_fields.get(v, F_OFFSET, names.offset);
    PyObject* shape = off ? view_fields.get(v, F_SHAPE, names.shape) : nullptr;
    PyObject* stride = shape ? view_fields.get(v, F_STRIDE, names.stride) : nullptr;
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
                    id = int32_t(rows.v_low.size());
                    rows.v_low.push_back(lo);
                    rows.v_high.push_back(hi);
                    rows.v_offset.push_back(o);
                    rows.v_dense.push_back(dense);
                    rows.v_dims_start.push_back(int64_t(base));
                    rows.v_ndim.push_back(int8_t(n));
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

using afpy::Ref;

PyObject* walk_ops_impl(PyObject* const* args, Py_ssize_t nargs) {
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
    FieldReader view_fields;  // this call's own: another thread may call with another type
    {
        PyObject* fields[] = {names.extent, names.offset, names.shape, names.stride,
                              names.tensor, names.dtype};
        view_fields.resolve(reinterpret_cast<PyTypeObject*>(view_type), fields, 6);
    }

    // What the graph keeps of the ops as walked: every view in order (inputs, then outputs,
    // op by op) with where each op's lists start (run() checks the ops still have them), and
    // each row's view entry with the view object of each entry (Dependency records).
    Ref snapshot(PyList_New(0)), by_entry(PyList_New(0)), tlist(PyList_New(0));
    if (!snapshot.p || !by_entry.p || !tlist.p) return nullptr;
    std::vector<int32_t> vstart;  // 2 n_ops + 1 positions in the snapshot
    vstart.reserve(size_t(2 * n_ops + 1));
    afw::Rows rows;
    // about three accesses per op: little slack, and no doubling on the way for most programs
    rows.view.reserve(size_t(3 * n_ops));
    rows.mode.reserve(size_t(3 * n_ops));
    rows.op_starts.reserve(size_t(n_ops + 1));
    std::vector<int32_t> view_tensor;  // view entry -> its tensor (until placed)
    // view -> its entry or EMPTY (views stay alive: the snapshot holds them)
    PtrMap view_cache(size_t(n_ops) / 8);
    std::vector<PyObject*> tensor_of;  // owned by `tlist`
    PtrMap tensor_index;
    auto push_row = [&](int32_t id, int8_t mode) {
        if (id == EMPTY) return;
        rows.mode.push_back(mode);
        rows.view.push_back(id);
    };
    int status = 1;  // 1 ok, 0 fall back, -1 error
    PyObject* seen[16];
    for (Py_ssize_t j = 0; j < n_ops && status == 1; ++j) {
        PyObject* op = PyTuple_GET_ITEM(ops, j);
        rows.op_starts.push_back(int32_t(rows.size()));
        Ref lists[2] = {Ref(PyObject_GetAttr(op, names.input_views)),
                        Ref(PyObject_GetAttr(op, names.output_views))};
        if (!lists[0].p || !lists[1].p) return nullptr;
        Ref tup[2] = {Ref(as_tuple(lists[0].p)), Ref(nullptr)};
        if (tup[0].p) tup[1].p = as_tuple(lists[1].p);
        if (!tup[0].p || !tup[1].p) {
            if (PyErr_Occurred()) return nullptr;
            Py_RETURN_NONE;
        }
        for (int m = 0; m < 2; ++m) {
            vstart.push_back(int32_t(PyList_GET_SIZE(snapshot.p)));
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tup[m].p); ++k)
                if (PyList_Append(snapshot.p, PyTuple_GET_ITEM(tup[m].p, k)) < 0) return nullptr;
            if (PyList_GET_SIZE(snapshot.p) >= INT32_MAX / 2) Py_RETURN_NONE;
        }
        for (int m = 0; m < 2 && status == 1; ++m) {
            Py_ssize_t nv = PyTuple_GET_SIZE(tup[m].p);
            std::unordered_map<PyObject*, int> many;  // only for long lists
            for (Py_ssize_t k = 0; k < nv && status == 1; ++k) {
                PyObject* v = PyTuple_GET_ITEM(tup[m].p, k);
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
                if (const int32_t* cached = view_cache.find(v)) {
                    push_row(*cached, int8_t(m));
                    continue;
                }
                if (Py_TYPE(v) != (PyTypeObject*)view_type) {
                    status = 0;
                    break;
                }
                Ref t(view_fields.get(v, F_TENSOR, names.tensor));
                Ref vd(t.p ? view_fields.get(v, F_DTYPE, names.dtype) : nullptr);
                Ref td(vd.p ? PyObject_GetAttr(t.p, names.dtype) : nullptr);
                if (!td.p) return nullptr;
                if (vd.p != td.p) {  // a reinterpreting view: Python lowers
                    status = 0;
                    break;
                }
                int32_t ti;
                const int32_t* known = tensor_index.find(t.p);
                if (!known) {
                    ti = int32_t(tensor_of.size());
                    if (PyList_Append(tlist.p, t.p) < 0) return nullptr;
                    tensor_index.put(t.p, ti);
                    tensor_of.push_back(t.p);
                } else {
                    ti = *known;
                }
                int32_t id = EMPTY;
                status = read_view(v, view_fields, rows, id);
                if (status != 1) break;
                if (id != EMPTY) {
                    view_tensor.push_back(ti);
                    if (PyList_Append(by_entry.p, v) < 0) return nullptr;
                }
                view_cache.put(v, id);
                push_row(id, int8_t(m));
            }
        }
    }
    if (status < 0) return nullptr;
    if (status == 0 || rows.size() >= INT32_MAX / 4) Py_RETURN_NONE;
    rows.op_starts.push_back(int32_t(rows.size()));
    vstart.push_back(int32_t(PyList_GET_SIZE(snapshot.p)));
    // place(tensors) -> (groups, shifts) or None
    Ref placed(PyObject_CallOneArg(place, tlist.p));
    if (!placed.p) return nullptr;
    std::vector<int64_t> group(tensor_of.size()), shift(tensor_of.size());
    int64_t n_groups = 0;
    status = 0;
    if (PyTuple_CheckExact(placed.p) && PyTuple_GET_SIZE(placed.p) == 2) {
        PyObject *g = PyTuple_GET_ITEM(placed.p, 0), *s = PyTuple_GET_ITEM(placed.p, 1);
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
    if (status < 0) return nullptr;
    if (status == 0) Py_RETURN_NONE;
    // shift views into their group's cells; every value stays within 2^62
    size_t n_views = rows.v_low.size();
    rows.v_group.resize(n_views);
    for (size_t v = 0; v < n_views; ++v) {
        int64_t d = shift[size_t(view_tensor[v])];
        rows.v_group[v] = int32_t(group[size_t(view_tensor[v])]);
        rows.v_low[v] += d;
        rows.v_high[v] += d;
        rows.v_offset[v] += d;
        if (rows.v_low[v] > LIM || rows.v_high[v] > LIM || rows.v_offset[v] > LIM)
            Py_RETURN_NONE;
    }
    Ref starts(int32_bytes(vstart));
    if (!starts.p) return nullptr;
    // what only the lowering needed goes before the walk
    std::vector<int32_t>().swap(vstart);
    std::vector<int32_t>().swap(view_tensor);
    view_cache.clear();
    tensor_index.clear();
    std::vector<PyObject*>().swap(tensor_of);
    rows.shrink();
    // the walk frees the rows; their view entries and the ops' first rows are kept
    std::vector<int32_t> row_entry, op_starts;
    Ref edges(run_walk(rows, n_ops, n_groups, p, cb, &row_entry, &op_starts));
    if (!edges.p) return nullptr;
    Ref entries(int32_bytes(row_entry));
    if (!entries.p) return nullptr;
    Ref firsts(int32_bytes(op_starts));
    if (!firsts.p) return nullptr;
    return PyTuple_Pack(6, edges.p, entries.p, by_entry.p, snapshot.p, starts.p, firsts.p);
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

PyObject* walk_table_impl(PyObject* const* args, Py_ssize_t nargs) {
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
    // every row is its own view here (a table lowered in Python)
    rows.v_dims_start.assign(ds.begin(), ds.end() - 1);
    rows.shape = shape;
    rows.stride = stride;
    if (ds[0] != 0 || ds[size_t(n)] != int64_t(shape.size())) return bad("dims_start", 0);
    int64_t prev = 0;
    rows.op_starts.push_back(0);
    for (Py_ssize_t r = 0; r < n; ++r) {
        if (op[r] < prev || op[r] >= n_ops) return bad("op (not in order or out of range)", r);
        while (prev < op[r]) {
            rows.op_starts.push_back(int32_t(r));
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
        rows.mode.push_back(int8_t(mode[r]));
        rows.view.push_back(int32_t(r));
        rows.v_group.push_back(int32_t(group[r]));
        rows.v_dense.push_back(uint8_t(dense[r]));
        rows.v_ndim.push_back(int8_t(ds[r + 1] - ds[r]));
    }
    while (prev < n_ops) {
        rows.op_starts.push_back(int32_t(n));
        ++prev;
    }
    rows.v_low = low;
    rows.v_high = high;
    rows.v_offset = offset;
    return run_walk(rows, n_ops, n_groups, p, cb);
}

// ---------------------------------------------------------------- same_views
// same_views(ops, old_ops, views, starts) -> bool: True when ops is old_ops item by item
// (identity) and every op k's input_views, then output_views, are item by item (identity)
// views[starts[2k]:starts[2k+1]] and views[starts[2k+1]:starts[2k+2]] (OpViews.mismatch's
// common case; False sends it to the Python loop that says what differs). starts: 2 len(ops)
// + 1 ints, as afpy::read_int64_array reads them (a tuple or a contiguous int64 array).
PyObject* same_views_impl(PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "same_views takes 4 arguments, got %zd", nargs);
        return nullptr;
    }
    PyObject *ops = args[0], *old_ops = args[1];
    if (!PyTuple_CheckExact(ops) || !PyTuple_CheckExact(old_ops)) {
        PyErr_SetString(PyExc_TypeError, "ops and old_ops must be tuples");
        return nullptr;
    }
    // a tuple of our own: attribute reads below run Python code, which cannot change it
    Ref views(PySequence_Tuple(args[2]));
    if (!views.p) return nullptr;
    std::vector<int64_t> starts;
    if (!afpy::read_int64_array(args[3], starts, "starts")) return nullptr;
    Py_ssize_t n = PyTuple_GET_SIZE(ops);
    if (starts.size() != size_t(2 * n + 1)) {
        PyErr_SetString(PyExc_ValueError, "starts must be 2 len(ops) + 1 int64s");
        return nullptr;
    }
    Py_ssize_t n_views = PyTuple_GET_SIZE(views.p);
    bool same = PyTuple_GET_SIZE(old_ops) == n && starts[0] == 0 &&
                starts[size_t(2 * n)] == n_views;
    for (Py_ssize_t k = 0; k < n && same; ++k) {
        PyObject* op = PyTuple_GET_ITEM(ops, k);
        same = op == PyTuple_GET_ITEM(old_ops, k);
        for (int m = 0; m < 2 && same; ++m) {
            Ref list(PyObject_GetAttr(op, m ? names.output_views : names.input_views));
            if (!list.p) return nullptr;
            if (!PyList_CheckExact(list.p) && !PyTuple_CheckExact(list.p)) {
                same = false;
                break;
            }
            int64_t a = starts[size_t(2 * k + m)], b = starts[size_t(2 * k + m + 1)];
            Py_ssize_t len = PySequence_Fast_GET_SIZE(list.p);
            if (a < 0 || b < a || b > n_views || b - a != len) {
                same = false;
                break;
            }
            PyObject** items = PySequence_Fast_ITEMS(list.p);  // no Python code runs below
            for (Py_ssize_t i = 0; i < len; ++i)
                if (items[i] != PyTuple_GET_ITEM(views.p, a + i)) {
                    same = false;
                    break;
                }
        }
    }
    return PyBool_FromLong(same);
}

using afpy::guarded;

PyMethodDef methods[] = {
    {"walk_ops", (PyCFunction)(void (*)(void))guarded<walk_ops_impl>, METH_FASTCALL,
     "walk_ops(ops, view_type, place, intersects, covers, progress, params) -> "
     "(edges, row_entries, entry_views, views, starts, op_rows) or None (use walk_table): "
     "row_entries (int32 bytes) gives each row's view as a position in entry_views; views "
     "lists every op's inputs then outputs, op by op, and starts (int32 bytes, 2 n + 1) "
     "where each op's lists start there; op_rows (int32 bytes, n + 1): op k's rows are "
     "op_rows[k]:op_rows[k + 1]."},
    {"walk_table", (PyCFunction)(void (*)(void))guarded<walk_table_impl>, METH_FASTCALL,
     "walk_table(n_ops, n_groups, columns, intersects, covers, progress, params) -> edges."},
    {"same_views", (PyCFunction)(void (*)(void))guarded<same_views_impl>, METH_FASTCALL,
     "same_views(ops, old_ops, views, starts) -> whether ops are old_ops with the same view "
     "objects in their lists (aliasflow.analysis.schedule.OpViews)."},
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
    if (!afpy::intern_all(keys, slots, 8)) return nullptr;
    EdgeBufferType = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&edge_buffer_spec));
    if (!EdgeBufferType) return nullptr;
    return PyModule_Create(&module);
}
