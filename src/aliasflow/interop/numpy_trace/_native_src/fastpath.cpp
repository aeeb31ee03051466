// aliasflow.interop.numpy_trace._fastpath: the runtime that rewritten code calls, compiled.
// Its pure-Python reference is ../fastpath.py; the tests compare the notes both record.
//
// Each watched operation is one call here: it records the operation, performs it, and
// (only when the recorder asked for it) confirms it afterwards. Being C, it adds no Python
// frame: exceptions, tracebacks and warnings of the operation point at the user's line as
// they would without the tracer.
//
//   setitem(v, a, k, site)         a[k] = v          (v, a, k evaluated in Python's order)
//   setattr(v, a, name, site)      a.name = v
//   aug_load(a, k, site) -> h      a[k] op= v, first half: reads a[k]
//   aug_load_attr(a, name, site)   a.name op= v, first half
//   aug_store(h, v, op)            second half: x op= v, then a[k] = x
//   aug_name(x, v, op, site)       x op= v for a plain name (returns the new x)
//   call(f, site, *args, **kw)     f(*args, **kw)
//
// The common cases are recorded here into a compact table (no Python objects per
// operation): a[basic index] = array or number, elementwise ufunc calls with out=, in-place
// operators. Everything else goes to the Python recorder's methods (the "hooks": the same
// methods the pure-Python runtime calls for every operation), which return an entry: the
// op's index, or an object to confirm after the operation (hooks.complete(entry)).
//
// Layouts: (address, shape, strides, dtype, gen), gen the lifetime of the memory: the
// number the owners table gives the array's base-most ndarray (hooks.owner(o) registers a
// new one).
#include <Python.h>

#include <cstdint>
#include <vector>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#include "../../../_native_src/boundary.hpp"

namespace {

using afpy::Ref;

// ---- the table ---------------------------------------------------------------------------------
// label codes: TARGET, VALUE, or a call argument: ARG + i (positional i), OUT (out=),
// OUT_J + j (out=(..., j-th, ...))
constexpr int64_t TARGET = 0, VALUE = 1, ARG = 1000, OUT = 2000, OUT_J = 3000;
constexpr int64_t MODE_R = 0, MODE_W = 1, MODE_RW = 2;

struct Acc {
    int64_t label, mode, addr, gen, itemsize, dtype, ndim, dims;   // dims: index into g_dims
};
struct Op {
    int64_t site, what, first, count;   // count < 0: a note the Python recorder keeps
};

struct Table {
    std::vector<Op> ops;
    std::vector<Acc> acc;
    std::vector<int64_t> dims;   // per access: shape..., strides...
};
Table g_table;   // the trace recording now (detach() hands it over when it ends)
std::vector<Op>& g_ops = g_table.ops;
std::vector<Acc>& g_acc = g_table.acc;
std::vector<int64_t>& g_dims = g_table.dims;
const char* TABLE = "aliasflow.numpy_trace.table";

// the recorder's functions in fastpath.HOOKS order (called by position), or all nullptr when
// nothing records
enum Hook { H_STORE_ITEM, H_STORE_ATTR, H_AUG_TARGET, H_AUG_COMMIT, H_AUG_VALUE, H_CALL,
            H_COMPLETE, H_REFUSED, H_OWNER, N_HOOKS };
PyObject* g_hooks[N_HOOKS] = {};
PyObject* g_owners = nullptr;   // id(owner) -> (weakref, gen)
PyObject* g_views = nullptr;    // id(view) -> ...: reads through these go to the hooks
PyObject* g_codes = nullptr;    // dtype / ufunc / str -> code (shared with Python)
PyObject* g_objects = nullptr;  // code -> dtype / ufunc / str
PyObject* g_unwrapped = nullptr;  // id(a trace's wrapper of a NumPy function) -> the function

// operation names (codes of the table) and the keyword "out"
PyObject *s_setitem, *s_aug_setitem, *s_aug_name, *s_out;

bool recording() { return g_hooks[0] != nullptr; }

// *slots[k] = the interned string keys[k]; false with an error set
bool intern_all(const char* const* keys, PyObject** const* slots, int n) {
    for (int k = 0; k < n; ++k) {
        *slots[k] = PyUnicode_InternFromString(keys[k]);
        if (!*slots[k]) return false;
    }
    return true;
}

// the code of a dtype, ufunc or operation name (registered on first sight)
int64_t code_of(PyObject* obj) {
    PyObject* c = PyDict_GetItemWithError(g_codes, obj);
    if (c) return PyLong_AsLongLong(c);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyList_GET_SIZE(g_objects);
    Ref code(PyLong_FromSsize_t(n));
    if (!code.p || PyDict_SetItem(g_codes, obj, code.p) < 0 || PyList_Append(g_objects, obj) < 0)
        return -1;
    return n;
}

// ---- layouts -----------------------------------------------------------------------------------
struct Lay {
    int64_t addr = 0, gen = 0, itemsize = 0, dtype = 0;
    int nd = 0;
    npy_intp shape[NPY_MAXDIMS];
    npy_intp strides[NPY_MAXDIMS];
};

// false with an error set; fills lay from an ndarray
bool capture(PyObject* x, Lay& lay) {
    PyArrayObject* arr = (PyArrayObject*)x;
    PyObject* owner = x;
    for (PyObject* base = PyArray_BASE(arr); base && PyArray_Check(base);
         base = PyArray_BASE((PyArrayObject*)base))
        owner = base;
    Ref key(PyLong_FromVoidPtr(owner));
    if (!key.p) return false;
    PyObject* entry = PyDict_GetItemWithError(g_owners, key.p);   // borrowed
    PyObject* gen = nullptr;
    if (entry && PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2 &&
        PyWeakref_Check(PyTuple_GET_ITEM(entry, 0)) &&
        PyWeakref_GetObject(PyTuple_GET_ITEM(entry, 0)) == owner) {
        gen = PyTuple_GET_ITEM(entry, 1);
        lay.gen = PyLong_AsLongLong(gen);
    } else {
        if (PyErr_Occurred()) return false;
        Ref g(PyObject_CallOneArg(g_hooks[H_OWNER], owner));
        if (!g.p) return false;
        lay.gen = PyLong_AsLongLong(g.p);
    }
    if (lay.gen == -1 && PyErr_Occurred()) return false;
    PyArray_Descr* descr = PyArray_DESCR(arr);
    lay.dtype = code_of((PyObject*)descr);
    if (lay.dtype < 0) return false;
    lay.addr = (int64_t)(intptr_t)PyArray_DATA(arr);
    lay.itemsize = PyDataType_ELSIZE(descr);
    lay.nd = PyArray_NDIM(arr);
    for (int k = 0; k < lay.nd; ++k) {
        lay.shape[k] = PyArray_DIMS(arr)[k];
        lay.strides[k] = PyArray_STRIDES(arr)[k];
    }
    return true;
}

void push_access(const Lay& lay, int64_t label, int64_t mode) {
    g_acc.push_back(Acc{label, mode, lay.addr, lay.gen, lay.itemsize, lay.dtype, lay.nd,
                        (int64_t)g_dims.size()});
    for (int k = 0; k < lay.nd; ++k) g_dims.push_back(lay.shape[k]);
    for (int k = 0; k < lay.nd; ++k) g_dims.push_back(lay.strides[k]);
}

// [lo, hi) of the bytes a layout touches; empty -> lo == hi
void bounds(const Lay& l, int64_t& lo, int64_t& hi) {
    lo = hi = l.addr;
    for (int k = 0; k < l.nd; ++k) {
        if (l.shape[k] == 0) {
            hi = lo;
            return;
        }
        int64_t span = (int64_t)l.strides[k] * (l.shape[k] - 1);
        if (span > 0)
            hi += span;
        else
            lo += span;
    }
    hi += l.itemsize;
}

bool meet(const Lay& a, const Lay& b) {
    int64_t alo, ahi, blo, bhi;
    bounds(a, alo, ahi);
    bounds(b, blo, bhi);
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

bool same_elements(const Lay& a, const Lay& b) {
    if (a.addr != b.addr || a.nd != b.nd || a.dtype != b.dtype) return false;
    for (int k = 0; k < a.nd; ++k)
        if (a.shape[k] != b.shape[k] || a.strides[k] != b.strides[k]) return false;
    return true;
}

// recorder.assignment_is_safe: NumPy's assignment gives copy semantics whatever the overlap
bool assignment_safe(const Lay& d, const Lay& v) {
    if (d.nd != 1 || d.shape[0] <= 1) return true;
    if (v.nd == 0) return false;
    npy_intp ds = d.strides[0], vs = v.strides[v.nd - 1];
    if ((ds < 0) != (vs < 0) && ds != 0 && vs != 0) return true;
    return v.nd == 1 && ds == vs && d.dtype == v.dtype;
}

// recorder._may_repeat for two dimensions; more dimensions: "maybe"
bool may_repeat(const Lay& l) {
    if (l.nd < 2) return false;
    if (l.nd > 2) return true;
    npy_intp n0 = l.shape[0], n1 = l.shape[1];
    npy_intp a0 = l.strides[0] < 0 ? -l.strides[0] : l.strides[0];
    npy_intp a1 = l.strides[1] < 0 ? -l.strides[1] : l.strides[1];
    if (n0 <= 1 || n1 <= 1) return (n0 <= 1 ? a1 : a0) < l.itemsize && n0 * n1 > 1;
    npy_intp small = a1 <= a0 ? a1 : a0, n_small = a1 <= a0 ? n1 : n0, big = a1 <= a0 ? a0 : a1;
    return small < l.itemsize || big < small * (n_small - 1) + l.itemsize;
}

bool one_value(const Lay& l) {
    for (int k = 0; k < l.nd; ++k)
        if (l.shape[k] > 1 && l.strides[k] != 0) return false;
    return true;
}

bool registered_view(PyObject* x) {
    if (!g_views || PyDict_GET_SIZE(g_views) == 0) return false;
    Ref key(PyLong_FromVoidPtr(x));
    return key.p && PyDict_Contains(g_views, key.p) == 1;
}

// a number or numpy scalar: reads no array memory
bool plain_scalar(PyObject* v) {
    return PyFloat_CheckExact(v) || PyLong_CheckExact(v) || PyBool_Check(v) ||
           PyComplex_CheckExact(v) || PyArray_IsScalar(v, Generic);
}

bool plain_index(PyObject* e) {
    return PySlice_Check(e) || (PyLong_Check(e) && !PyBool_Check(e)) || e == Py_None ||
           e == Py_Ellipsis || PyArray_IsScalar(e, Integer);
}

// k a basic index (slices, integers, None, ...): the index giving a[k] as a view, new ref;
// nullptr with no error set when k is not basic
PyObject* view_key(PyObject* k) {
    if (PySlice_Check(k) || k == Py_Ellipsis) return Py_NewRef(k);
    if (PyTuple_CheckExact(k)) {
        Py_ssize_t n = PyTuple_GET_SIZE(k);
        bool ellipsis = false;
        for (Py_ssize_t j = 0; j < n; ++j) {
            PyObject* e = PyTuple_GET_ITEM(k, j);
            if (!plain_index(e)) return nullptr;
            ellipsis |= e == Py_Ellipsis;
        }
        if (ellipsis) return Py_NewRef(k);
        PyObject* t = PyTuple_New(n + 1);
        if (!t) return nullptr;
        for (Py_ssize_t j = 0; j < n; ++j)
            PyTuple_SET_ITEM(t, j, Py_NewRef(PyTuple_GET_ITEM(k, j)));
        PyTuple_SET_ITEM(t, n, Py_NewRef(Py_Ellipsis));
        return t;
    }
    if (plain_index(k) && k != Py_Ellipsis && k != Py_None)
        return PyTuple_Pack(2, k, Py_Ellipsis);
    return nullptr;
}

int64_t new_op(int64_t site, int64_t what) {
    g_ops.push_back(Op{site, what, (int64_t)g_acc.size(), 0});
    return (int64_t)g_ops.size() - 1;
}

void close_op() { g_ops.back().count = (int64_t)g_acc.size() - g_ops.back().first; }

// ---- entries: after the operation ------------------------------------------------------------
// the operation ran (ok) or raised (the error is set): complete or refuse the entry
PyObject* finish(PyObject* entry, PyObject* result) {
    if (!entry || entry == Py_None || !recording()) return result;
    if (result) {
        if (!PyLong_CheckExact(entry)) {
            Ref r(PyObject_CallOneArg(g_hooks[H_COMPLETE], entry));
            if (!r.p) PyErr_Clear();   // never the program's failure
        }
        return result;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) PyException_SetTraceback(value, tb);
    Ref r(PyObject_CallFunctionObjArgs(g_hooks[H_REFUSED], entry, value ? value : Py_None,
                                       nullptr));
    if (!r.p) PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return nullptr;
}

// an entry of the hooks (a new reference; None when they fail: never the program's failure)
PyObject* hook(Hook which, std::initializer_list<PyObject*> args) {
    PyObject* argv[8];
    size_t n = 0;
    for (PyObject* a : args) argv[n++] = a;
    PyObject* r = PyObject_Vectorcall(g_hooks[which], argv, n, nullptr);
    if (!r) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return r;
}

// ---- a[k] = v ----------------------------------------------------------------------------------
// the fast record of a[k] = v; 1 recorded, 0 not handled here (nothing recorded), -1 error
int fast_setitem(PyObject* v, PyObject* a, PyObject* k, PyObject* site, int64_t& index) {
    if (!PyArray_CheckExact(a)) return 0;
    Ref key(view_key(k));
    if (!key.p) return PyErr_Occurred() ? -1 : 0;
    bool value_array = PyArray_Check(v);
    if (!value_array && !plain_scalar(v)) return 0;
    if (value_array && registered_view(v)) return 0;
    Ref d(PyObject_GetItem(a, key.p));
    if (!d.p) {
        PyErr_Clear();   // the store itself will raise
        return 0;
    }
    if (!PyArray_Check(d.p)) return 0;
    Lay dl, vl;
    if (!capture(d.p, dl)) return -1;
    if (value_array) {
        if (!capture(v, vl)) return -1;
        if (!assignment_safe(dl, vl) && !same_elements(dl, vl) && meet(dl, vl)) return 0;
        if (dl.nd >= 2 && vl.nd && may_repeat(dl) && !one_value(vl)) return 0;
    }
    int64_t what = code_of(s_setitem);
    if (what < 0) return -1;
    index = new_op(PyLong_AsLongLong(site), what);
    push_access(dl, TARGET, MODE_W);
    if (value_array) push_access(vl, VALUE, MODE_R);
    close_op();
    return 1;
}

PyObject* py_setitem(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "setitem(v, a, k, site)");
        return nullptr;
    }
    PyObject *v = args[0], *a = args[1], *k = args[2], *site = args[3];
    Ref entry;
    if (recording()) {
        int64_t index = -1;
        int r = fast_setitem(v, a, k, site, index);
        if (r < 0) {
            PyErr_Clear();
            r = 0;
        }
        if (r == 1)
            entry.p = PyLong_FromLongLong(index);
        else
            entry.p = hook(H_STORE_ITEM, {a, k, v, site});
    }
    int ok = PyObject_SetItem(a, k, v);
    return finish(entry.p, ok < 0 ? nullptr : Py_NewRef(Py_None));
}

PyObject* py_setattr(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "setattr(v, a, name, site)");
        return nullptr;
    }
    PyObject *v = args[0], *a = args[1], *name = args[2], *site = args[3];
    Ref entry(recording() ? hook(H_STORE_ATTR, {a, name, v, site}) : nullptr);
    int ok = PyObject_SetAttr(a, name, v);
    return finish(entry.p, ok < 0 ? nullptr : Py_NewRef(Py_None));
}

// ---- augmented assignment ------------------------------------------------------------------------
typedef PyObject* (*BinOp)(PyObject*, PyObject*);
const BinOp INPLACE[] = {PyNumber_InPlaceAdd,      PyNumber_InPlaceSubtract,
                         PyNumber_InPlaceMultiply, PyNumber_InPlaceTrueDivide,
                         PyNumber_InPlaceFloorDivide, PyNumber_InPlaceRemainder,
                         nullptr /* pow */,         PyNumber_InPlaceLshift,
                         PyNumber_InPlaceRshift,   PyNumber_InPlaceOr,
                         PyNumber_InPlaceXor,      PyNumber_InPlaceAnd,
                         PyNumber_InPlaceMatrixMultiply};
constexpr int N_INPLACE = 13, OP_POW = 6, OP_MATMUL = 12;

PyObject* inplace(int op, PyObject* x, PyObject* v) {
    if (op == OP_POW) return PyNumber_InPlacePower(x, v, Py_None);
    return INPLACE[op](x, v);
}

int read_op(PyObject* o) {
    long op = PyLong_AsLong(o);
    if (op < 0 || op >= N_INPLACE) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad in-place operator code");
        return -1;
    }
    return (int)op;
}

// the state between the two halves of a[k] op= v: what Python's own stack holds (a, k and
// the value read), and the target as recorded
struct Handle {
    PyObject_HEAD
    PyObject *container, *key, *name, *read, *note, *site;
    int fast;   // the target's layout is in lay (else note is the recorder's open note)
    Lay lay;
};

void handle_dealloc(PyObject* o) {
    Handle* h = (Handle*)o;
    PyTypeObject* type = Py_TYPE(o);
    Py_XDECREF(h->container);
    Py_XDECREF(h->key);
    Py_XDECREF(h->name);
    Py_XDECREF(h->read);
    Py_XDECREF(h->note);
    Py_XDECREF(h->site);
    type->tp_free(o);
    Py_DECREF(type);   // a heap type: each instance holds a reference to it
}

PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, (void*)handle_dealloc},
    {Py_tp_doc, (void*)"The target of an augmented assignment, between its two halves."},
    {0, nullptr}};
PyType_Spec handle_spec = {"aliasflow_numpy.AugTarget", sizeof(Handle), 0, Py_TPFLAGS_DEFAULT,
                           handle_slots};
PyTypeObject* HandleType = nullptr;

PyObject* aug_load(PyObject* a, PyObject* k, PyObject* name, PyObject* site) {
    Handle* h = PyObject_New(Handle, HandleType);
    if (!h) return nullptr;
    h->container = Py_NewRef(a);
    h->key = Py_XNewRef(k);
    h->name = Py_XNewRef(name);
    h->read = h->note = nullptr;
    h->site = Py_NewRef(site);
    h->fast = 0;
    Ref hold((PyObject*)h);
    bool done = false;
    if (recording() && !name && PyArray_CheckExact(a)) {
        Ref key(view_key(k));
        if (key.p) {
            Ref d(PyObject_GetItem(a, key.p));
            if (d.p && PyArray_Check(d.p)) {
                if (!capture(d.p, h->lay)) return nullptr;
                h->fast = 1;
                done = true;
            }
        }
        PyErr_Clear();
    }
    if (recording() && !done) h->note = hook(H_AUG_TARGET, {a, name ? name : k, site});
    // the traced program's own read (``a.name`` or ``a[k]`` of ``a.name op= v``), performed
    // here as Python would: the attribute is the program's, named by its source
    h->read = name ? PyObject_GetAttr(a, name) : PyObject_GetItem(a, k);
    if (!h->read) return nullptr;
    return hold.release();
}

PyObject* py_aug_load(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "aug_load(a, k, site)");
        return nullptr;
    }
    return aug_load(args[0], args[1], nullptr, args[2]);
}

PyObject* py_aug_load_attr(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "aug_load_attr(a, name, site)");
        return nullptr;
    }
    return aug_load(args[0], nullptr, args[1], args[2]);
}

PyObject* py_aug_store(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 3 || Py_TYPE(args[0]) != HandleType) {
        PyErr_SetString(PyExc_TypeError, "aug_store(handle, v, op)");
        return nullptr;
    }
    Handle* h = (Handle*)args[0];
    PyObject* v = args[1];
    int op = read_op(args[2]);
    if (op < 0) return nullptr;
    Ref entry;
    if (recording()) {
        bool fast = h->fast && op != OP_MATMUL && !registered_view(v);
        if (fast) {
            Lay vl;
            bool value_array = PyArray_Check(v);
            int64_t what = code_of(s_aug_setitem);
            if (what >= 0 && (!value_array || capture(v, vl))) {
                int64_t index = new_op(PyLong_AsLongLong(h->site), what);
                push_access(h->lay, TARGET, MODE_RW);
                if (value_array) push_access(vl, VALUE, MODE_R);
                close_op();
                entry.p = PyLong_FromLongLong(index);
            } else {
                PyErr_Clear();
                fast = false;
            }
        }
        if (!fast) {
            if (h->fast) {   // the hooks decide after all
                Ref note(hook(H_AUG_TARGET, {h->container, h->key, h->site}));
                Py_XSETREF(h->note, note.release());
            }
            if (h->note && h->note != Py_None) entry.p = hook(H_AUG_COMMIT, {h->note, v});
        }
    }
    PyObject* result = inplace(op, h->read, v);
    if (!result) return finish(entry.p, nullptr);
    Ref hold(result);
    if (entry.p && entry.p != Py_None && !PyLong_CheckExact(entry.p)) {
        Ref r(hook(H_AUG_VALUE, {entry.p, result}));
    }
    int ok = h->name ? PyObject_SetAttr(h->container, h->name, result)
                     : PyObject_SetItem(h->container, h->key, result);
    return finish(entry.p, ok < 0 ? nullptr : Py_NewRef(Py_None));
}

PyObject* py_aug_name(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "aug_name(x, v, op, site)");
        return nullptr;
    }
    PyObject *x = args[0], *v = args[1], *site = args[3];
    int op = read_op(args[2]);
    if (op < 0) return nullptr;
    Ref entry;
    if (recording() && PyArray_Check(x)) {
        bool value_array = PyArray_Check(v);
        bool fast = op != OP_MATMUL && !registered_view(v) && !registered_view(x);
        Lay xl, vl;
        if (fast && capture(x, xl) && (!value_array || capture(v, vl))) {
            int64_t what = code_of(s_aug_name);
            if (what >= 0) {
                int64_t index = new_op(PyLong_AsLongLong(site), what);
                push_access(xl, TARGET, MODE_RW);
                if (value_array) push_access(vl, VALUE, MODE_R);
                close_op();
                entry.p = PyLong_FromLongLong(index);
            }
        }
        if (PyErr_Occurred()) PyErr_Clear();
        if (!entry.p) {
            Ref note(hook(H_AUG_TARGET, {x, Py_None, site}));
            if (note.p != Py_None) entry.p = hook(H_AUG_COMMIT, {note.p, v});
        }
    }
    return finish(entry.p, inplace(op, x, v));
}

// ---- f(*args, **kwargs) --------------------------------------------------------------------------
// the fast record of an elementwise ufunc call with out=; 1 recorded, 0 not here, -1 error
int fast_ufunc(PyObject* f, PyObject* site, PyObject* const* args, Py_ssize_t n,
               PyObject* kwnames, int64_t& index, bool& writes) {
    PyUFuncObject* u = (PyUFuncObject*)f;
    if (u->core_enabled || u->nout != 1) return 0;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject* out = nullptr;
    int64_t out_label = OUT;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
        if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, j), s_out) != 0) return 0;
        out = args[n + j];
    }
    if (n > u->nin) {
        if (out || n > u->nin + 1) return 0;
        out = args[u->nin];
        out_label = ARG + u->nin;
    }
    if (out && PyTuple_Check(out)) {
        if (PyTuple_GET_SIZE(out) != 1) return 0;
        out = PyTuple_GET_ITEM(out, 0);
        out_label = OUT_J;
    }
    if (!out || out == Py_None) {
        writes = false;
        return 1;
    }
    if (!PyArray_Check(out) || n < u->nin) return 0;
    // NumPy 2.4's one-input kernels can be wrong into a non-contiguous out: the hooks check
    if (u->nin == 1 && PyArray_SIZE((PyArrayObject*)out) > 1 &&
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject*)out))
        return 0;
    for (Py_ssize_t j = 0; j < u->nin; ++j) {
        PyObject* x = args[j];
        if (PyArray_Check(x)) {
            if (registered_view(x)) return 0;
        } else if (!plain_scalar(x)) {
            return 0;
        }
    }
    Lay ol;
    if (!capture(out, ol)) return -1;
    std::vector<Lay> ins;
    std::vector<int64_t> labels;
    for (Py_ssize_t j = 0; j < u->nin; ++j) {
        if (!PyArray_Check(args[j])) continue;
        ins.emplace_back();
        if (!capture(args[j], ins.back())) return -1;
        labels.push_back(ARG + j);
    }
    int64_t what = code_of(f);
    if (what < 0) return -1;
    index = new_op(PyLong_AsLongLong(site), what);
    push_access(ol, out_label, MODE_W);
    for (size_t j = 0; j < ins.size(); ++j) push_access(ins[j], labels[j], MODE_R);
    close_op();
    writes = true;
    return 1;
}

PyObject* py_call(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "call(f, site, *args, **kwargs)");
        return nullptr;
    }
    PyObject *f = args[0], *site = args[1];
    PyObject* const* rest = args + 2;
    Py_ssize_t n = nargs - 2;
    if (g_unwrapped && PyDict_GET_SIZE(g_unwrapped)) {   // NumPy's own function, not the
        Ref key(PyLong_FromVoidPtr(f));                  // trace's wrapper: no frame of ours
        if (!key.p) return nullptr;
        PyObject* original = PyDict_GetItemWithError(g_unwrapped, key.p);
        if (original) f = original;
        else if (PyErr_Occurred()) return nullptr;
    }
    Ref entry;
    if (recording()) {
        int r = 0;
        int64_t index = -1;
        bool writes = false;
        if (PyObject_TypeCheck(f, &PyUFunc_Type)) {
            r = fast_ufunc(f, site, rest, n, kwnames, index, writes);
            if (r < 0) {
                PyErr_Clear();
                r = 0;
            }
        }
        if (r == 1) {
            if (writes) entry.p = PyLong_FromLongLong(index);
        } else {
            Ref tuple(PyTuple_New(n));
            Ref kw(PyDict_New());
            if (!tuple.p || !kw.p) return nullptr;
            for (Py_ssize_t j = 0; j < n; ++j) PyTuple_SET_ITEM(tuple.p, j, Py_NewRef(rest[j]));
            Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
            for (Py_ssize_t j = 0; j < nkw; ++j)
                if (PyDict_SetItem(kw.p, PyTuple_GET_ITEM(kwnames, j), rest[n + j]) < 0)
                    return nullptr;
            entry.p = hook(H_CALL, {f, site, tuple.p, kw.p});
        }
    }
    PyObject* result = PyObject_Vectorcall(f, rest, n, kwnames);
    return finish(entry.p, result);
}

// ---- the recorder's view of the table ------------------------------------------------------------
PyObject* py_begin(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    // begin(hooks or None, owners, views, codes, objects, unwrapped): start (or stop)
    if (nargs != 6 || !PyDict_CheckExact(args[1]) || !PyDict_CheckExact(args[2]) ||
        !PyDict_CheckExact(args[3]) || !PyList_CheckExact(args[4]) ||
        !PyDict_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "begin(hooks, owners, views, codes, objects, unwrapped)");
        return nullptr;
    }
    PyObject** slots[] = {&g_owners, &g_views, &g_codes, &g_objects, &g_unwrapped};
    for (int k = 0; k < 5; ++k) Py_XSETREF(*slots[k], Py_NewRef(args[k + 1]));
    PyObject* fns = args[0];
    if (fns != Py_None) {
        if (!PyTuple_CheckExact(fns) || PyTuple_GET_SIZE(fns) != N_HOOKS) {
            PyErr_Format(PyExc_TypeError, "begin: hooks must be None or a tuple of %d functions",
                         int(N_HOOKS));
            return nullptr;
        }
        for (int k = 0; k < N_HOOKS; ++k)
            if (!PyCallable_Check(PyTuple_GET_ITEM(fns, k))) {
                PyErr_Format(PyExc_TypeError, "begin: hooks[%d] is not callable", k);
                return nullptr;
            }
    }
    for (int k = 0; k < N_HOOKS; ++k)
        Py_XSETREF(g_hooks[k], fns == Py_None ? nullptr : Py_NewRef(PyTuple_GET_ITEM(fns, k)));
    Py_RETURN_NONE;
}

PyObject* py_reset(PyObject*, PyObject* const*, Py_ssize_t) {
    g_ops.clear();
    g_acc.clear();
    g_dims.clear();
    Py_RETURN_NONE;
}

void table_free(PyObject* capsule) { delete (Table*)PyCapsule_GetPointer(capsule, TABLE); }

// detach() -> the recorded table (moved out: O(1)); the module starts a new, empty one
PyObject* py_detach(PyObject*, PyObject* const*, Py_ssize_t) {
    Table* t = new (std::nothrow) Table();
    if (!t) return PyErr_NoMemory();
    t->ops.swap(g_ops);
    t->acc.swap(g_acc);
    t->dims.swap(g_dims);
    PyObject* capsule = PyCapsule_New(t, TABLE, table_free);
    if (!capsule) delete t;
    return capsule;
}

const Table* table_of(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t at) {
    if (nargs <= at || args[at] == Py_None) return &g_table;
    return (const Table*)PyCapsule_GetPointer(args[at], TABLE);
}

// next_index(): a new op whose note the Python recorder keeps
PyObject* py_next_index(PyObject*, PyObject* const*, Py_ssize_t) {
    g_ops.push_back(Op{0, 0, (int64_t)g_acc.size(), -1});
    return PyLong_FromSsize_t((Py_ssize_t)g_ops.size() - 1);
}

// count(table=None): ops recorded (in a detached table, or now)
PyObject* py_count(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    const Table* t = table_of(args, nargs, 0);
    return t ? PyLong_FromSsize_t((Py_ssize_t)t->ops.size()) : nullptr;
}

PyObject* label_object(int64_t label) {
    if (label == TARGET) return PyUnicode_FromString("target");
    if (label == VALUE) return PyUnicode_FromString("value");
    if (label >= OUT_J) return Py_BuildValue("(isL)", 1, "out", (long long)(label - OUT_J));
    if (label == OUT) return Py_BuildValue("(is)", 1, "out");
    return Py_BuildValue("(iL)", 0, (long long)(label - ARG));
}

// note(i, table=None) -> (site, what code, accesses) for a recorded op, None for one the
// Python recorder keeps
PyObject* py_note(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 1 && nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "note(index, table=None)");
        return nullptr;
    }
    const Table* t = table_of(args, nargs, 1);
    if (!t) return nullptr;
    Py_ssize_t i = PyLong_AsSsize_t(args[0]);
    if (i == -1 && PyErr_Occurred()) return nullptr;
    if (i < 0 || (size_t)i >= t->ops.size()) {
        PyErr_SetString(PyExc_IndexError, "note: no such op");
        return nullptr;
    }
    const Op& op = t->ops[(size_t)i];
    if (op.count < 0) Py_RETURN_NONE;
    Ref accesses(PyTuple_New(op.count));
    if (!accesses.p) return nullptr;
    static const char* modes[] = {"R", "W", "RW"};
    for (int64_t j = 0; j < op.count; ++j) {
        const Acc& a = t->acc[(size_t)(op.first + j)];
        Ref shape(PyTuple_New(a.ndim)), strides(PyTuple_New(a.ndim));
        if (!shape.p || !strides.p) return nullptr;
        for (int64_t k = 0; k < a.ndim; ++k) {
            PyTuple_SET_ITEM(shape.p, k, PyLong_FromLongLong(t->dims[(size_t)(a.dims + k)]));
            PyTuple_SET_ITEM(strides.p, k,
                             PyLong_FromLongLong(t->dims[(size_t)(a.dims + a.ndim + k)]));
        }
        PyObject* dtype = PyList_GetItem(g_objects, a.dtype);
        if (!dtype) return nullptr;
        Ref label(label_object(a.label));
        Ref layout(Py_BuildValue("(LOOOL)", (long long)a.addr, shape.p, strides.p, dtype,
                                 (long long)a.gen));
        if (!label.p || !layout.p) return nullptr;
        PyObject* access = Py_BuildValue("(OsOOO)", label.p, modes[a.mode], layout.p, Py_None,
                                         Py_None);
        if (!access) return nullptr;
        PyTuple_SET_ITEM(accesses.p, j, access);
    }
    return Py_BuildValue("(LLO)", (long long)op.site, (long long)op.what, accesses.p);
}

PyMethodDef methods[] = {
    {"setitem", (PyCFunction)(void (*)(void))py_setitem, METH_FASTCALL, "a[k] = v"},
    {"setattr", (PyCFunction)(void (*)(void))py_setattr, METH_FASTCALL, "a.name = v"},
    {"aug_load", (PyCFunction)(void (*)(void))py_aug_load, METH_FASTCALL, "a[k] op= v, 1/2"},
    {"aug_load_attr", (PyCFunction)(void (*)(void))py_aug_load_attr, METH_FASTCALL,
     "a.name op= v, 1/2"},
    {"aug_store", (PyCFunction)(void (*)(void))py_aug_store, METH_FASTCALL, "op= v, 2/2"},
    {"aug_name", (PyCFunction)(void (*)(void))py_aug_name, METH_FASTCALL, "x op= v"},
    {"call", (PyCFunction)(void (*)(void))py_call, METH_FASTCALL | METH_KEYWORDS,
     "f(*args, **kwargs)"},
    {"begin", (PyCFunction)(void (*)(void))py_begin, METH_FASTCALL,
     "begin(hooks or None, owners, views, codes, objects, unwrapped)"},
    {"reset", (PyCFunction)(void (*)(void))py_reset, METH_FASTCALL, "forget every op"},
    {"next_index", (PyCFunction)(void (*)(void))py_next_index, METH_FASTCALL,
     "a new op index whose note Python keeps"},
    {"count", (PyCFunction)(void (*)(void))py_count, METH_FASTCALL,
     "count(table=None): ops recorded"},
    {"note", (PyCFunction)(void (*)(void))py_note, METH_FASTCALL, "note(i, table=None)"},
    {"detach", (PyCFunction)(void (*)(void))py_detach, METH_FASTCALL,
     "detach() -> the recorded table; recording starts a new one"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.interop.numpy_trace._fastpath",
                      "The NumPy tracer's runtime, compiled (see fastpath.py).", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__fastpath(void) {
    import_array();
    import_umath();
    const char* keys[] = {"setitem", "aug-setitem", "aug-name", "out"};
    PyObject** slots[] = {&s_setitem, &s_aug_setitem, &s_aug_name, &s_out};
    if (!intern_all(keys, slots, 4)) return nullptr;
    HandleType = (PyTypeObject*)PyType_FromSpec(&handle_spec);
    if (!HandleType) return nullptr;
    return PyModule_Create(&module);
}
