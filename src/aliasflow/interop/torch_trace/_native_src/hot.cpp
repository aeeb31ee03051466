// The PyTorch tracer's per-call path, compiled: what Trace._call in ../tracer.py does for the
// common calls (a view op; an op whose tensors are plain strided tensors in storages the trace
// knows or the op makes), with the same records. Everything else goes back to the Python
// methods, which stay the reference (tests/interop/torch_trace/test_hot_path.py compares the
// two on real programs): a call whose overload has no fast form (see _fast in tracer.py) or
// runs while streams are recorded goes to Trace._call whole; a tensor seen for the first time
// or of an unusual kind to Trace._capture; a suspected overlap to Trace._suspect; a resized
// argument to Trace._moved; a nested list result to Trace._results.
//
// The dispatch mode is a HotPath (tracer._CompiledMode) and its __torch_dispatch__ is
// hot_dispatch below, so no Python frame runs per call unless a call goes to the reference.
//
// The tensors are read through their Python accessors, as the reference reads them (the
// descriptors their types resolve each name to, found once): no PyTorch header or private
// layout is used, so this builds with nothing but CPython.
#include <Python.h>
#include <structmember.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../../../_native_src/boundary.hpp"
#include "reader_api.h"

namespace {

using afpy::Ref;

// what a fast form's flags say (tracer._fast builds them)
enum : long {
    F_VIEW = 1,           // touches no data, returns aliases
    F_WRITES = 2,         // writes an argument in place
    F_ELEMENTWISE = 4,    // pointwise: an argument equal to the written one is exempt
    F_FOREACH = 8,        // pointwise per list position
    F_BIT_VIEW = 16,      // makes conj/neg views: every tensor's bits are read from now on
    F_UNINITIALIZED = 32, // leaves its result unspecified: replay needs its bytes
    F_RETURNS = 64,       // returns something
    F_RANDOM = 128,       // draws random numbers: the generator's state is kept for replay
};
enum : long { M_NONE = 0, M_R = 1, M_W = 2, M_RW = 3 };

PyObject* s_data_ptr;
PyObject* s_shape;
PyObject* s_stride;
PyObject* s_dtype;
PyObject* s_cdata;
PyObject* s_is_conj;
PyObject* s_is_neg;
PyObject* s_is_cpu;
PyObject* s_device;
PyObject* s_type;
PyObject* s_untyped_storage;
PyObject* s_nbytes;
PyObject* s_weak_ref;
PyObject* s_clone;
PyObject* s_active;
PyObject* s_bits_seen;
PyObject* s_sequence_nr;
PyObject* s_call;
PyObject* s_capture;
PyObject* s_suspect;
PyObject* s_after;
PyObject* s_moved;
PyObject* s_results;
PyObject* s_untracked;
PyObject* s_warn;
PyObject* s_W;
PyObject* s_cpu;
PyObject* s_generator;
PyObject* s_get_state;

// The fields a HotPath holds, in the order its constructor takes them.
#define HOT_FIELDS(X)                                                                          \
    X(trace) X(calls) X(by_sid) X(born) X(specs) X(slots) X(weak) X(pages) X(storages)         \
    X(streams) X(storage_address) X(sequence_nr) X(current_node) X(user_site) X(user_known)    \
    X(is_user_code) X(call_type) X(gen_type) X(text) X(odd_dtypes) X(plain_types)             \
    X(tensor_type) X(same_layout) X(slot) X(parameter_type) X(expired) X(no_aliases) X(copy)    \
    X(default_generator) X(set_eval_frame)

struct HotPath {
    PyObject_HEAD
#define DECLARE(name) PyObject* name;
    HOT_FIELDS(DECLARE)
#undef DECLARE
    int values;
    int page_shift;
    Py_ssize_t gen_offsets[13];  // where a StorageGen keeps each GenField (-1: ask by name)
    Py_ssize_t gen_slots[17];    // where it keeps each of its slots, in GEN_SLOTS' order, when
    bool gen_in_c;               // its slots are exactly those (then one is made here)
    bool call_in_c;              // Call is a list subclass adding no state or construction
    // The accessors of a plain tensor (torch.Tensor or nn.Parameter exactly) and of its
    // storage: the descriptors their types resolve each name to, found once, so a read is
    // a call of the descriptor instead of a lookup along the type's bases and a bound method
    // per read (nullptr: asked for by name).
    PyObject* tensor_acc[9];
    PyObject* storage_type;      // the type of the first storage seen (its accessors below)
    PyObject* storage_acc[3];
};

// The StorageGen fields this path reads and writes: kept in slots, whose offsets the type's
// member descriptors give (read once, at HotPath's construction), so reading one is a load
// instead of an attribute lookup. Anything else is asked for by name.
enum GenField {
    G_ID, G_ADDRESS, G_END, G_CREATOR, G_WEAK, G_GROUP, G_DIRTY, G_SNAPSHOT, G_ALIASES,
    G_NBYTES, G_DEVICE, G_ALIVE_AT_END, G_FINAL_BYTES, G_N
};
const char* const GEN_FIELD_NAMES[G_N] = {"id", "address", "end", "creator", "weak", "group",
                                          "dirty", "snapshot", "aliases", "nbytes", "device",
                                          "alive_at_end", "final_bytes"};
static_assert(G_N == 13, "HotPath::gen_offsets holds one offset per GenField");
PyObject* gen_field_names[G_N];

// StorageGen's slots, in the order new_gen fills them: a StorageGen whose __slots__ are
// exactly these is made here, as its __init__ would make it (memory.py; the tests compare the
// two); any other is made by calling it.
const char* const GEN_SLOTS[] = {"id", "address", "nbytes", "end", "creator", "first_op",
                                 "snapshot", "_final_crc", "final_bytes", "weak",
                                 "alive_at_end", "region", "region_start", "aliases", "group",
                                 "dirty", "device"};
constexpr int GEN_N_SLOTS = sizeof(GEN_SLOTS) / sizeof(GEN_SLOTS[0]);
static_assert(GEN_N_SLOTS == 17, "HotPath::gen_slots holds one offset per slot");

// The tensor and storage accessors the path reads (methods called with no arguments, or
// attributes), through the descriptors found once (HotPath::tensor_acc, storage_acc).
enum TensorAcc {
    TA_DATA_PTR, TA_STRIDE, TA_UNTYPED_STORAGE, TA_IS_CONJ, TA_IS_NEG,   // methods
    TA_SHAPE, TA_DTYPE, TA_CDATA, TA_IS_CPU, TA_N                      // attributes
};
constexpr int TA_FIRST_ATTRIBUTE = TA_SHAPE;
const char* const TENSOR_ACC_NAMES[TA_N] = {"data_ptr", "stride", "untyped_storage", "is_conj",
                                            "is_neg", "shape", "dtype", "_cdata", "is_cpu"};
enum StorageAcc { SA_DATA_PTR, SA_NBYTES, SA_WEAK_REF, SA_N };
const char* const STORAGE_ACC_NAMES[SA_N] = {"data_ptr", "nbytes", "_weak_ref"};
PyObject* tensor_acc_names[TA_N];
PyObject* storage_acc_names[SA_N];

constexpr int N_FIELDS = 0
#define COUNT(name) +1
    HOT_FIELDS(COUNT)
#undef COUNT
    ;

PyObject** fields(HotPath* h) { return &h->trace; }   // (declared in a row)

int hot_traverse(PyObject* self, visitproc visit, void* arg) {
    HotPath* h = reinterpret_cast<HotPath*>(self);
    PyObject** f = fields(h);
    for (int i = 0; i < N_FIELDS; ++i) Py_VISIT(f[i]);
    for (PyObject* o : h->tensor_acc) Py_VISIT(o);
    for (PyObject* o : h->storage_acc) Py_VISIT(o);
    Py_VISIT(h->storage_type);
    return 0;
}

int hot_clear(PyObject* self) {
    HotPath* h = reinterpret_cast<HotPath*>(self);
    PyObject** f = fields(h);
    for (int i = 0; i < N_FIELDS; ++i) Py_CLEAR(f[i]);
    for (PyObject*& o : h->tensor_acc) Py_CLEAR(o);
    for (PyObject*& o : h->storage_acc) Py_CLEAR(o);
    Py_CLEAR(h->storage_type);
    return 0;
}

void hot_dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    hot_clear(self);
    type->tp_free(self);
    Py_DECREF(type);   // a heap type: each instance holds its type
}

// Are StorageGen's __slots__ exactly GEN_SLOTS, each a writable object slot? Then note where
// each is kept (HotPath::gen_slots) and make generations here.
bool learn_gen_slots(HotPath* h) {
    h->gen_in_c = false;
    Ref names(PyObject_GetAttrString(h->gen_type, "__slots__"));
    if (!names.p) {
        PyErr_Clear();
        return true;
    }
    if (!PyTuple_Check(names.p) || PyTuple_GET_SIZE(names.p) != GEN_N_SLOTS) return true;
    for (int i = 0; i < GEN_N_SLOTS; ++i) {
        PyObject* name = PyTuple_GET_ITEM(names.p, i);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, GEN_SLOTS[i]))
            return true;
        Ref d(PyObject_GetAttr(h->gen_type, name));
        if (!d.p) return false;
        if (Py_TYPE(d.p) != &PyMemberDescr_Type) return true;
        PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(d.p)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return true;
        h->gen_slots[i] = m->offset;
    }
    h->gen_in_c = true;
    return true;
}

// What hot_init learns of the generation and tensor types (slot offsets, accessor
// descriptors), kept for the next HotPath of the same types: a trace per training step makes
// a HotPath per step. The same types means the same objects, unmodified since (their version
// tags unchanged: assigning an attribute of a type clears its tag).
struct Learned {
    PyObject* types[3] = {nullptr, nullptr, nullptr};   // gen, tensor, parameter (strong)
    unsigned int tags[3] = {0, 0, 0};
    Py_ssize_t gen_offsets[G_N];
    Py_ssize_t gen_slots[GEN_N_SLOTS];
    bool gen_in_c = false;
    PyObject* tensor_acc[TA_N] = {};   // strong references

    static unsigned int tag(PyObject* type) {
        PyTypeObject* t = reinterpret_cast<PyTypeObject*>(type);
        return (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? t->tp_version_tag : 0;
    }
    bool same_types(HotPath* h) const {
        PyObject* now[3] = {h->gen_type, h->tensor_type, h->parameter_type};
        for (int i = 0; i < 3; ++i)
            if (!types[i] || now[i] != types[i] || !tags[i] || tag(now[i]) != tags[i])
                return false;
        return true;
    }
    void copy_to(HotPath* h) const {
        std::copy(gen_offsets, gen_offsets + G_N, h->gen_offsets);
        std::copy(gen_slots, gen_slots + GEN_N_SLOTS, h->gen_slots);
        h->gen_in_c = gen_in_c;
        for (int i = 0; i < TA_N; ++i) Py_XSETREF(h->tensor_acc[i], Py_XNewRef(tensor_acc[i]));
    }
    void keep(HotPath* h) {
        PyObject* now[3] = {h->gen_type, h->tensor_type, h->parameter_type};
        for (int i = 0; i < 3; ++i) {
            Py_XSETREF(types[i], Py_NewRef(now[i]));
            tags[i] = tag(now[i]);
        }
        std::copy(h->gen_offsets, h->gen_offsets + G_N, gen_offsets);
        std::copy(h->gen_slots, h->gen_slots + GEN_N_SLOTS, gen_slots);
        gen_in_c = h->gen_in_c;
        for (int i = 0; i < TA_N; ++i) Py_XSETREF(tensor_acc[i], Py_XNewRef(h->tensor_acc[i]));
    }
} learned;

int hot_init(PyObject* self, PyObject* args, PyObject* kwargs) {
    HotPath* h = reinterpret_cast<HotPath*>(self);
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "HotPath takes positional arguments only");
        return -1;
    }
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != N_FIELDS + 2) {
        PyErr_Format(PyExc_TypeError, "HotPath takes %d arguments, got %zd", N_FIELDS + 2,
                     PyTuple_Check(args) ? PyTuple_GET_SIZE(args) : (Py_ssize_t)-1);
        return -1;
    }
    PyObject** f = fields(h);
    for (int i = 0; i < N_FIELDS; ++i) {
        PyObject* v = PyTuple_GET_ITEM(args, i);
        Py_INCREF(v);
        Py_XSETREF(f[i], v);
    }
    struct Check { PyObject* o; bool ok; const char* what; } checks[] = {
        {h->calls, PyList_CheckExact(h->calls) != 0, "calls must be a list"},
        {h->by_sid, PyDict_CheckExact(h->by_sid) != 0, "by_sid must be a dict"},
        {h->born, PyDict_CheckExact(h->born) != 0, "born must be a dict"},
        {h->specs, PyDict_CheckExact(h->specs) != 0, "specs must be a dict"},
        {h->slots, PyList_CheckExact(h->slots) != 0, "slots must be a list"},
        {h->weak, PyList_CheckExact(h->weak) != 0, "weak must be a list"},
        {h->pages, PyDict_CheckExact(h->pages) != 0, "pages must be a dict"},
        {h->storages, PyList_CheckExact(h->storages) != 0, "storages must be a list"},
        {h->user_known, PyDict_CheckExact(h->user_known) != 0, "user_known must be a dict"},
        {h->odd_dtypes, PyAnySet_Check(h->odd_dtypes) != 0, "odd_dtypes must be a set"},
        {h->plain_types, PyTuple_Check(h->plain_types) != 0, "plain_types must be a tuple"},
        {h->tensor_type, PyType_Check(h->tensor_type) != 0, "tensor_type must be a type"},
        {h->parameter_type, PyType_Check(h->parameter_type) != 0,
         "parameter_type must be a type"},
        {h->gen_type, PyType_Check(h->gen_type) != 0, "gen_type must be a type"},
        {h->no_aliases, PyFrozenSet_CheckExact(h->no_aliases) != 0,
         "no_aliases must be a frozenset"},
        {h->call_type, PyType_Check(h->call_type) &&
                           PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(h->call_type),
                                            &PyList_Type),
         "call_type must be a list subclass"},
    };
    for (const Check& c : checks)
        if (!c.ok) {
            PyErr_Format(PyExc_TypeError, "HotPath: %s, got %.100s", c.what, Py_TYPE(c.o)->tp_name);
            return -1;
        }
    h->values = PyObject_IsTrue(PyTuple_GET_ITEM(args, N_FIELDS));
    if (h->values < 0) return -1;
    long shift = PyLong_AsLong(PyTuple_GET_ITEM(args, N_FIELDS + 1));
    if (shift == -1 && PyErr_Occurred()) return -1;
    if (shift < 0 || shift > 40) {
        PyErr_Format(PyExc_ValueError, "HotPath: page_shift must be in [0, 40], got %ld", shift);
        return -1;
    }
    h->page_shift = static_cast<int>(shift);
    PyTypeObject* call_type = reinterpret_cast<PyTypeObject*>(h->call_type);
    h->call_in_c = call_type->tp_basicsize == PyList_Type.tp_basicsize &&
                   call_type->tp_itemsize == 0 && call_type->tp_init == PyList_Type.tp_init &&
                   call_type->tp_alloc == PyType_GenericAlloc;
    for (PyObject*& o : h->storage_acc) Py_CLEAR(o);
    Py_CLEAR(h->storage_type);
    if (learned.same_types(h)) {   // as the last HotPath of these types learned
        learned.copy_to(h);
        return 0;
    }
    for (int i = 0; i < G_N; ++i) {
        h->gen_offsets[i] = -1;
        Ref d(PyObject_GetAttr(h->gen_type, gen_field_names[i]));
        if (!d.p) return -1;
        if (Py_TYPE(d.p) == &PyMemberDescr_Type) {
            PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(d.p)->d_member;
            if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) h->gen_offsets[i] = m->offset;
        }
    }
    if (!learn_gen_slots(h)) return -1;
    for (int i = 0; i < TA_N; ++i) {   // the same descriptor on both plain types, or none
        Py_CLEAR(h->tensor_acc[i]);
        Ref on_tensor(PyObject_GetAttr(h->tensor_type, tensor_acc_names[i]));
        Ref on_parameter(on_tensor.p ? PyObject_GetAttr(h->parameter_type, tensor_acc_names[i])
                                     : nullptr);
        if (!on_parameter.p) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
            PyErr_Clear();
            continue;
        }
        PyTypeObject* kind = i < TA_FIRST_ATTRIBUTE ? &PyMethodDescr_Type : &PyGetSetDescr_Type;
        if (on_tensor.p == on_parameter.p && Py_TYPE(on_tensor.p) == kind)
            h->tensor_acc[i] = on_tensor.release();
    }
    learned.keep(h);
    return 0;
}

// An int as a long long (PyLong_AsLong where it is as wide: CPython's PyLong_AsLongLong goes
// through a byte array for anything past one digit, as every address is)
long long as_long_long(PyObject* v) {
    if constexpr (sizeof(long) == sizeof(long long)) return PyLong_AsLong(v);
    return PyLong_AsLongLong(v);
}

// gen.<field>, a new reference (nullptr with an exception when unset)
PyObject* gen_get(HotPath* h, PyObject* gen, GenField f) {
    Py_ssize_t off = h->gen_offsets[f];
    if (off >= 0 && Py_TYPE(gen) == reinterpret_cast<PyTypeObject*>(h->gen_type)) {
        PyObject* v = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(gen) + off);
        if (v) return Py_NewRef(v);
    }
    return PyObject_GetAttr(gen, gen_field_names[f]);
}

bool gen_set(HotPath* h, PyObject* gen, GenField f, PyObject* value) {
    Py_ssize_t off = h->gen_offsets[f];
    if (off >= 0 && Py_TYPE(gen) == reinterpret_cast<PyTypeObject*>(h->gen_type)) {
        PyObject** at = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(gen) + off);
        Py_XSETREF(*at, Py_NewRef(value));
        return true;
    }
    return PyObject_SetAttr(gen, gen_field_names[f], value) == 0;
}

bool gen_int(HotPath* h, PyObject* gen, GenField f, long long* out) {
    Ref v(gen_get(h, gen, f));
    if (!v.p) return false;
    *out = as_long_long(v.p);
    return !(*out == -1 && PyErr_Occurred());
}

// ---- small helpers ----------------------------------------------------------------------

PyObject* call0(PyObject* f) { return PyObject_CallNoArgs(f); }
PyObject* method0(PyObject* o, PyObject* name) { return PyObject_CallMethodNoArgs(o, name); }

bool is_tensor(HotPath* h, PyObject* o) {
    return PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(h->tensor_type));
}

// A torch.Tensor or nn.Parameter exactly (a subclass, a fake or functional wrapper, goes to
// Trace._capture, which asks it nothing before knowing it has memory)
bool plain_type(HotPath* h, PyObject* t) {
    return Py_TYPE(t) == reinterpret_cast<PyTypeObject*>(h->tensor_type) ||
           Py_TYPE(t) == reinterpret_cast<PyTypeObject*>(h->parameter_type);
}

// descriptor d (a method taking no arguments, or an attribute) read on o
PyObject* read_through(PyObject* d, PyObject* o) {
    if (Py_TYPE(d) == &PyMethodDescr_Type) return PyObject_Vectorcall(d, &o, 1, nullptr);
    return Py_TYPE(d)->tp_descr_get(d, o, reinterpret_cast<PyObject*>(Py_TYPE(o)));
}

// t.<accessor>() or t.<accessor>, a new reference
PyObject* tensor_read(HotPath* h, PyObject* t, TensorAcc a) {
    PyObject* d = h->tensor_acc[a];
    if (d && plain_type(h, t)) return read_through(d, t);
    return a < TA_FIRST_ATTRIBUTE ? method0(t, tensor_acc_names[a])
                                  : PyObject_GetAttr(t, tensor_acc_names[a]);
}

// st.<accessor>(), a new reference; the accessors of the first storage type seen are found
// once, those of any other are asked for by name
PyObject* storage_read(HotPath* h, PyObject* st, StorageAcc a) {
    if (!h->storage_type) {
        h->storage_type = Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(st)));
        for (int i = 0; i < SA_N; ++i) {
            Ref d(PyObject_GetAttr(h->storage_type, storage_acc_names[i]));
            if (d.p && Py_TYPE(d.p) == &PyMethodDescr_Type)
                h->storage_acc[i] = d.release();
            else
                PyErr_Clear();
        }
    }
    if (h->storage_acc[a] && reinterpret_cast<PyObject*>(Py_TYPE(st)) == h->storage_type)
        return read_through(h->storage_acc[a], st);
    return method0(st, storage_acc_names[a]);
}

// the slot object for access number k (tracer._SLOTS, else tracer._slot(k))
PyObject* slot_of(HotPath* h, Py_ssize_t k) {
    if (k < PyList_GET_SIZE(h->slots)) return Py_NewRef(PyList_GET_ITEM(h->slots, k));
    Ref n(PyLong_FromSsize_t(k));
    return n.p ? PyObject_CallOneArg(h->slot, n.p) : nullptr;
}

// The pending exception, taken and normalised (restore() puts it back as it was).
struct Pending {
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    Pending() {
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
    }
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    void restore() {
        PyErr_Restore(type, value, traceback);
        type = value = traceback = nullptr;
    }
    ~Pending() {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
    }
};

// call[i] = v (steals nothing)
bool set_field(PyObject* call, Py_ssize_t i, PyObject* v) {
    return PyList_SetItem(call, i, Py_NewRef(v)) == 0;
}

// The text the reference records for the pending exception (tracer._text), which stays
// pending; false (and the exception replaced) if even that fails.
bool note_error(HotPath* h, PyObject* call, Py_ssize_t field) {
    Pending exc;
    Ref text(PyObject_CallOneArg(h->text, exc.value ? exc.value : Py_None));
    bool ok = text.p && set_field(call, field, text.p);
    if (ok) exc.restore();
    return ok;
}

// tracer._text of the pending exception, which is cleared; nullptr on error
PyObject* error_text(HotPath* h) {
    Pending exc;
    return PyObject_CallOneArg(h->text, exc.value ? exc.value : Py_None);
}

// Does a layout map two indices to one element, as far as memory.may_overlap_internally can
// tell without solving (each stride, in increasing order, steps past what the smaller ones
// reach)? -1 on error; 1 when unsure (the reference then decides).
int may_overlap_internally(PyObject* sizes, PyObject* strides) {
    Ref sz(PySequence_Tuple(sizes)), st(PySequence_Tuple(strides));
    if (!sz.p || !st.p) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(sz.p);
    if (PyTuple_GET_SIZE(st.p) != n) return 1;
    std::vector<std::pair<long long, long long>> dims;
    for (Py_ssize_t i = 0; i < n; ++i) {
        long long size = as_long_long(PyTuple_GET_ITEM(sz.p, i));
        long long stride = as_long_long(PyTuple_GET_ITEM(st.p, i));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        if (size > 1) dims.emplace_back(stride < 0 ? -stride : stride, size);
    }
    std::sort(dims.begin(), dims.end());
    __int128 reach = 0;
    for (auto& [s, size] : dims) {
        if (s <= reach) return 1;
        reach += static_cast<__int128>(s) * (size - 1);
    }
    return 0;
}

// ---- one call ---------------------------------------------------------------------------

struct TensorArg {   // an entry of a fast form's tensors: (pos, name, is_list, mode, code,
    Py_ssize_t pos;  // paired): paired, read elementwise with the written argument
    PyObject* name;  // (addmm's self with out=self) though the op is not pointwise
    bool is_list;
    PyObject* mode;
    long code;
    bool paired;
};

struct Call {
    HotPath* h;
    PyObject* func;
    PyObject* args;
    PyObject* kwargs;
    PyObject* spec;
    PyObject* run;
    PyObject* fast;
    long flags;
    Py_ssize_t index;
    PyObject* index_obj;
    PyObject* call;       // the Call list
    PyObject* accesses;   // list of access tuples
    bool plain_bits;
    std::vector<TensorArg> tensors;
};

// v for the tensor argument at schema position pos (name: its name), borrowed, or nullptr
PyObject* argument(Call& c, Py_ssize_t pos, PyObject* name) {
    if (pos < PyTuple_GET_SIZE(c.args)) return PyTuple_GET_ITEM(c.args, pos);
    PyObject* v = PyDict_GetItemWithError(c.kwargs, name);
    return v;
}

// The PyTorch reader (reader_api.h), when the tracer installed one (use_reader): a plain
// tensor's facts read in one call instead of through its Python accessors, with the same
// values (tests/interop/torch_trace/test_reader.py compares them).
const AfReaderApi* reader = nullptr;

// t's facts, read by the reader: false (nothing set) without one, for a tensor that is not
// plain, or one the reader leaves to the accessors
bool read_facts(HotPath* h, PyObject* t, AfTensorFacts* f) {
    return reader && plain_type(h, t) && reader->read(t, f) == 1;
}

PyObject* address(uintptr_t a) { return PyLong_FromVoidPtr(reinterpret_cast<void*>(a)); }

PyObject* int_tuple(int64_t n, const int64_t* values) {
    Ref out(PyTuple_New(n));
    if (!out.p) return nullptr;
    for (int64_t i = 0; i < n; ++i) {
        PyObject* v = PyLong_FromLongLong(values[i]);
        if (!v) return nullptr;
        PyTuple_SET_ITEM(out.p, i, v);
    }
    return out.release();
}

// what capture and fresh read of a plain tensor: storage_address, data_ptr, shape,
// stride(), dtype; from the reader's facts f when there are some, else from its accessors.
// False with an exception where one fails (Trace._capture then says what the tensor is).
struct Layout {
    Ref sid, ptr, shape, stride, dtype;
    bool read(HotPath* h, PyObject* t, const AfTensorFacts* f) {
        if (f) {
            sid.p = address(f->storage_impl);
            ptr.p = sid.p ? address(f->data_ptr) : nullptr;
            shape.p = ptr.p ? reader->size(f->ndim, f->sizes) : nullptr;
            stride.p = shape.p ? int_tuple(f->ndim, f->strides) : nullptr;
            dtype.p = stride.p ? Py_NewRef(f->dtype) : nullptr;
        } else {
            sid.p = PyObject_CallOneArg(h->storage_address, t);
            ptr.p = sid.p ? tensor_read(h, t, TA_DATA_PTR) : nullptr;
            shape.p = ptr.p ? tensor_read(h, t, TA_SHAPE) : nullptr;
            stride.p = shape.p ? tensor_read(h, t, TA_STRIDE) : nullptr;
            dtype.p = stride.p ? tensor_read(h, t, TA_DTYPE) : nullptr;
        }
        return dtype.p != nullptr;
    }
};

// Trace._capture(t, mode, pos, k, index, accesses, creating)
bool capture_py(Call& c, PyObject* t, PyObject* mode, Py_ssize_t pos, Py_ssize_t k,
                bool creating) {
    Ref p(PyLong_FromSsize_t(pos)), kk(PyLong_FromSsize_t(k));
    if (!p.p || !kk.p) return false;
    PyObject* a[] = {c.h->trace, t, mode, p.p, kk.p, c.index_obj, c.accesses,
                     creating ? Py_True : Py_False};
    Ref r(PyObject_VectorcallMethod(s_capture, a, 8 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr));
    return r.p != nullptr;
}

// Append the access tuple (mode, pos, k, gen, ptr, sizes, strides, dtype, born, bits); the
// conj/neg bits are read once a bit view was made (before, every tensor's are 0).
bool append_access(Call& c, PyObject* t, PyObject* mode, Py_ssize_t pos, Py_ssize_t k,
                   PyObject* gen, PyObject* ptr, PyObject* shape, PyObject* stride,
                   PyObject* dtype, long long born) {
    long bits = 0;
    if (!c.plain_bits) {
        Ref conj(tensor_read(c.h, t, TA_IS_CONJ));
        Ref neg(conj.p ? tensor_read(c.h, t, TA_IS_NEG) : nullptr);
        if (!neg.p) return false;
        int cj = PyObject_IsTrue(conj.p), ng = PyObject_IsTrue(neg.p);
        if (cj < 0 || ng < 0) return false;
        bits = cj << 1 | ng;
    }
    Ref pos_obj(PyLong_FromSsize_t(pos)), k_obj(PyLong_FromSsize_t(k));
    Ref born_obj(PyLong_FromLongLong(born)), bits_obj(PyLong_FromLong(bits));
    if (!pos_obj.p || !k_obj.p || !born_obj.p || !bits_obj.p) return false;
    Ref acc(PyTuple_Pack(10, mode, pos_obj.p, k_obj.p, gen, ptr, shape, stride, dtype,
                         born_obj.p, bits_obj.p));
    return acc.p && PyList_Append(c.accesses, acc.p) == 0;
}

PyObject* new_gen(Call& c, PyObject* t, PyObject* st, PyObject* sid, PyObject* base,
                  long long base_v, long long nbytes, bool creating, const AfTensorFacts* f);

// A new generation for a plain tensor's storage, first seen (or moved) as an argument
// (Trace._gen); nullptr without an exception: leave it to Trace._capture (a tensor subclass,
// an odd dtype, no memory).
PyObject* first_sight(Call& c, PyObject* t, PyObject* sid, bool odd, const AfTensorFacts* f) {
    HotPath* h = c.h;
    if (odd || !plain_type(h, t)) return nullptr;
    if (f) {   // (read by the reader: a CPU tensor)
        if (!f->storage_data) return nullptr;   // (no memory)
        Ref base(address(f->storage_data));
        if (!base.p) return nullptr;
        return new_gen(c, t, nullptr, sid, base.p, static_cast<long long>(f->storage_data),
                       f->storage_nbytes, false, f);
    }
    Ref st(tensor_read(h, t, TA_UNTYPED_STORAGE));
    Ref base(st.p ? storage_read(h, st.p, SA_DATA_PTR) : nullptr);
    Ref nbytes(base.p ? storage_read(h, st.p, SA_NBYTES) : nullptr);
    if (!nbytes.p) return nullptr;
    long long base_v = as_long_long(base.p);
    long long nbytes_v = as_long_long(nbytes.p);
    if (PyErr_Occurred() || !base_v) return nullptr;
    return new_gen(c, t, st.p, sid, base.p, base_v, nbytes_v, false, nullptr);
}

// The access tuple of a plain tensor, appended (Trace._before's inline path, and
// Trace._capture's for a storage first seen); anything else goes to Trace._capture.
bool capture(Call& c, PyObject* t, PyObject* mode, long code, Py_ssize_t pos, Py_ssize_t k) {
    HotPath* h = c.h;
    if (!plain_type(h, t)) return capture_py(c, t, mode, pos, k, false);
    AfTensorFacts facts;
    const AfTensorFacts* f = read_facts(h, t, &facts) ? &facts : nullptr;
    Layout l;
    if (!l.read(h, t, f) && f) return false;   // (the reader's facts fail only for memory)
    Ref& sid = l.sid;
    Ref& ptr = l.ptr;
    long long at = l.dtype.p ? as_long_long(ptr.p) : 0;
    int odd = PyErr_Occurred() ? 0 : PySet_Contains(h->odd_dtypes, l.dtype.p);
    if (PyErr_Occurred()) {   // Trace._capture says what it is
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return false;
        PyErr_Clear();
        return capture_py(c, t, mode, pos, k, false);
    }
    PyObject* known = PyDict_GetItemWithError(h->by_sid, sid.p);  // borrowed
    if (!known && PyErr_Occurred()) return false;
    Ref gen(Py_XNewRef(known));
    bool inside = false;
    if (gen.p) {
        long long address, end;
        if (!gen_int(h, gen.p, G_ADDRESS, &address) || !gen_int(h, gen.p, G_END, &end))
            return false;
        inside = address <= at && at <= end;
    }
    if (!gen.p || !inside || odd) {
        if (odd) return capture_py(c, t, mode, pos, k, false);
        Py_XSETREF(gen.p, first_sight(c, t, sid.p, false, f));
        if (!gen.p) {
            if (PyErr_Occurred()) return false;
            return capture_py(c, t, mode, pos, k, false);
        }
    }
    PyObject* g = gen.p;
    long long born = -2;
    if (code != M_NONE) {
        Ref dirty(gen_get(h, g, G_DIRTY));
        if (!dirty.p) return false;
        int is_dirty = PyObject_IsTrue(dirty.p);
        if (is_dirty < 0) return false;
        if (is_dirty) {
            Ref cdata(f ? address(f->tensor_impl) : tensor_read(h, t, TA_CDATA));
            if (!cdata.p) return false;
            PyObject* b = PyDict_GetItemWithError(h->born, cdata.p);
            if (b) {
                born = as_long_long(b);
                if (born == -1 && PyErr_Occurred()) return false;
            } else if (PyErr_Occurred()) {
                return false;
            } else {
                born = -1;
            }
        }
        if (code != M_R) {
            Ref creator(gen_get(h, g, G_CREATOR));
            if (!creator.p) return false;
            int same = PyObject_RichCompareBool(creator.p, c.index_obj, Py_EQ);
            if (same < 0) return false;
            if (!same && !gen_set(h, g, G_DIRTY, Py_True)) return false;
        }
    }
    return append_access(c, t, mode, pos, k, g, ptr.p, l.shape.p, l.stride.p, l.dtype.p, born);
}

// A random op's generator (its generator argument, else the default one) and its state
// before the op draws: call.rng = (explicit generator?, state). The fast form's generator
// position: -2, the op takes no generator; -1, only by keyword.
bool keep_rng(Call& c) {
    long pos = PyLong_AsLong(PyTuple_GET_ITEM(c.fast, 5));
    if (pos == -1 && PyErr_Occurred()) return false;
    PyObject* gen = nullptr;   // borrowed
    if (pos != -2) {
        gen = PyDict_GetItemWithError(c.kwargs, s_generator);
        if (!gen && PyErr_Occurred()) return false;
        if (gen == Py_None) gen = nullptr;
        if (!gen && pos >= 0 && pos < PyTuple_GET_SIZE(c.args)) {
            gen = PyTuple_GET_ITEM(c.args, pos);
            if (gen == Py_None) gen = nullptr;
        }
    }
    Ref state(method0(gen ? gen : c.h->default_generator, s_get_state));
    Ref rng(state.p ? PyTuple_Pack(2, gen ? Py_True : Py_False, state.p) : nullptr);
    return rng.p && set_field(c.call, 12, rng.p);
}

// Trace._before without its rare parts (the fast form excludes them): the access tuples,
// and with values, the call's template with tensors as slots.
bool before(Call& c) {
    HotPath* h = c.h;
    Py_ssize_t nargs = PyTuple_GET_SIZE(c.args);
    Ref targs(h->values ? PySequence_List(c.args) : nullptr);
    if (h->values && !targs.p) return false;
    bool kw_copy = h->values && PyDict_GET_SIZE(c.kwargs);
    Ref tkw(kw_copy ? PyDict_Copy(c.kwargs) : Py_NewRef(c.kwargs));
    if (!tkw.p) return false;
    for (const TensorArg& a : c.tensors) {
        PyObject* v;
        PyObject* holder;
        if (a.pos < nargs) {
            v = PyTuple_GET_ITEM(c.args, a.pos);
            holder = targs.p;
        } else {
            v = PyDict_GetItemWithError(c.kwargs, a.name);
            if (!v) {
                if (PyErr_Occurred()) return false;
                continue;
            }
            if (v == Py_None) continue;
            holder = tkw.p;
        }
        Py_INCREF(v);
        Ref vref(v);
        if (a.is_list) {
            if (!PyList_Check(v) && !PyTuple_Check(v)) continue;
            Ref seq(PySequence_List(v));   // (a list the op holds: walk a copy)
            if (!seq.p) return false;
            Ref marks(PyList_New(0));
            if (!marks.p) return false;
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(seq.p); ++j) {
                PyObject* t = PyList_GET_ITEM(seq.p, j);
                if (is_tensor(h, t)) {
                    Ref mark(slot_of(h, PyList_GET_SIZE(c.accesses)));
                    if (!mark.p || PyList_Append(marks.p, mark.p) < 0) return false;
                    if (!capture(c, t, a.mode, a.code, a.pos, j)) return false;
                } else if (PyList_Append(marks.p, t) < 0) {
                    return false;
                }
            }
            if (h->values) {
                Ref held(PyList_CheckExact(v) ? Py_NewRef(marks.p)
                         : PyTuple_CheckExact(v) ? PyList_AsTuple(marks.p)
                         : PyObject_CallOneArg(reinterpret_cast<PyObject*>(Py_TYPE(v)), marks.p));
                if (!held.p) return false;
                if (holder == targs.p ? PyList_SetItem(targs.p, a.pos, held.release()) < 0
                                      : PyDict_SetItem(tkw.p, a.name, held.p) < 0)
                    return false;
            }
            continue;
        }
        if (!is_tensor(h, v)) continue;   // None, or a Python number where the schema allows
        if (h->values) {
            Ref mark(slot_of(h, PyList_GET_SIZE(c.accesses)));
            if (!mark.p) return false;
            if (holder == targs.p ? PyList_SetItem(targs.p, a.pos, mark.release()) < 0
                                  : PyDict_SetItem(tkw.p, a.name, mark.p) < 0)
                return false;
        }
        if (!capture(c, v, a.mode, a.code, a.pos, -1)) return false;
    }
    if (h->values) {
        Ref tmpl(PyTuple_Pack(2, targs.p, tkw.p));
        if (!tmpl.p || !set_field(c.call, 8, tmpl.p)) return false;
    }
    return !(c.flags & F_RANDOM) || keep_rng(c);
}

long mode_code(PyObject* mode) {
    if (mode == Py_None) return M_NONE;
    if (PyUnicode_CompareWithASCIIString(mode, "R") == 0) return M_R;
    if (PyUnicode_CompareWithASCIIString(mode, "W") == 0) return M_W;
    return M_RW;
}

// Is every access a 10-tuple? (Trace._capture appends some of them: checked before they are
// read without checks)
bool accesses_ok(Call& c) {
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(c.accesses); ++j) {
        PyObject* acc = PyList_GET_ITEM(c.accesses, j);
        if (!PyTuple_CheckExact(acc) || PyTuple_GET_SIZE(acc) != 10) {
            PyErr_Format(PyExc_TypeError, "access %zd is not a 10-tuple: %.100s", j,
                         Py_TYPE(acc)->tp_name);
            return false;
        }
    }
    return true;
}

// Is access j's argument read elementwise with the written one (tracer.OpSpec's
// elementwise_args)?
bool paired(Call& c, Py_ssize_t j) {
    Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(c.accesses, j), 1));
    if (pos == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    for (const TensorArg& a : c.tensors)
        if (a.pos == pos) return a.paired;
    return false;
}

// Trace._suspect's first half: could a written argument share memory with another argument
// (outside the elementwise exemption) or overlap itself? 1: ask Trace._suspect; -1: error.
int suspect(Call& c) {
    if (!accesses_ok(c)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(c.accesses);
    std::vector<long long> group(n, 0);
    std::vector<long> code(n, M_NONE);
    std::vector<bool> has_gen(n, false), written(n, false);
    bool any = false;
    for (Py_ssize_t j = 0; j < n; ++j) {
        PyObject* acc = PyList_GET_ITEM(c.accesses, j);
        PyObject* gen = PyTuple_GET_ITEM(acc, 3);
        code[j] = mode_code(PyTuple_GET_ITEM(acc, 0));
        if (gen == Py_None) continue;
        has_gen[j] = true;
        if (!gen_int(c.h, gen, G_GROUP, &group[j])) return -1;
        if (code[j] == M_W || code[j] == M_RW) written[j] = any = true;
    }
    if (!any) return 0;
    for (Py_ssize_t j = 0; j < n; ++j) {
        if (!has_gen[j] || code[j] == M_NONE) continue;
        for (Py_ssize_t w = 0; w < n; ++w) {
            if (!written[w] || w == j || group[w] != group[j]) continue;
            if (code[j] == M_R && ((c.flags & (F_ELEMENTWISE | F_FOREACH)) || paired(c, j))) {
                PyObject* aw = PyList_GET_ITEM(c.accesses, w);
                PyObject* aj = PyList_GET_ITEM(c.accesses, j);
                bool same_k = true;
                if (c.flags & F_FOREACH) {
                    int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(aw, 2),
                                                      PyTuple_GET_ITEM(aj, 2), Py_EQ);
                    if (eq < 0) return -1;
                    same_k = eq;
                }
                if (same_k) {
                    Ref same(PyObject_CallFunctionObjArgs(c.h->same_layout, aw, aj, nullptr));
                    if (!same.p) return -1;
                    int s = PyObject_IsTrue(same.p);
                    if (s < 0) return -1;
                    if (s) continue;
                }
            }
            return 1;
        }
    }
    for (Py_ssize_t w = 0; w < n; ++w) {
        if (!written[w]) continue;
        PyObject* acc = PyList_GET_ITEM(c.accesses, w);
        int m = may_overlap_internally(PyTuple_GET_ITEM(acc, 5), PyTuple_GET_ITEM(acc, 6));
        if (m) return m;
    }
    return 0;
}

// Did the op resize or move a written argument (Trace._moved's test)? 1: ask Trace._moved.
int moved(Call& c) {
    if (!accesses_ok(c)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(c.accesses);
    for (Py_ssize_t j = 0; j < n; ++j) {
        PyObject* acc = PyList_GET_ITEM(c.accesses, j);
        long code = mode_code(PyTuple_GET_ITEM(acc, 0));
        if ((code != M_W && code != M_RW) || PyTuple_GET_ITEM(acc, 3) == Py_None) continue;
        Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(acc, 1));
        Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(acc, 2));
        if (PyErr_Occurred()) return -1;
        if (pos < 0) continue;
        PyObject* name = nullptr;
        for (const TensorArg& a : c.tensors)
            if (a.pos == pos) name = a.name;
        if (!name) return 1;
        PyObject* v = argument(c, pos, name);
        if (!v) return PyErr_Occurred() ? -1 : 1;
        Ref t(k >= 0 ? PySequence_GetItem(v, k) : Py_NewRef(v));
        if (!t.p) return -1;
        Ref ptr(tensor_read(c.h, t.p, TA_DATA_PTR));
        if (!ptr.p) return -1;
        int same = PyObject_RichCompareBool(ptr.p, PyTuple_GET_ITEM(acc, 4), Py_EQ);
        if (same <= 0) return same < 0 ? -1 : 1;
        Ref shape(tensor_read(c.h, t.p, TA_SHAPE));
        if (!shape.p) return -1;
        same = PyObject_RichCompareBool(shape.p, PyTuple_GET_ITEM(acc, 5), Py_EQ);
        if (same <= 0) return same < 0 ? -1 : 1;
        Ref stride(tensor_read(c.h, t.p, TA_STRIDE));
        if (!stride.p) return -1;
        same = PyObject_RichCompareBool(stride.p, PyTuple_GET_ITEM(acc, 6), Py_EQ);
        if (same <= 0) return same < 0 ? -1 : 1;
    }
    return 0;
}

// Ids of the generations still alive (their storage not freed, and still its latest
// generation) whose address ranges meet [start, end) (Trace._live_overlapping): a frozenset,
// or the shared empty one. A long page list is first cleared of dead generations.
PyObject* live_overlapping(HotPath* h, long long start, long long end) {
    constexpr Py_ssize_t PRUNE_AT = 64;   // tracer._PRUNE_AT
    Ref found;   // (made when the first is found: most storages meet none)
    // alive and its storage's latest generation? -1 on error
    auto live = [h](PyObject* g) -> int {
        Ref weak(gen_get(h, g, G_WEAK));
        if (!weak.p) return -1;
        Ref expired(PyObject_CallOneArg(h->expired, weak.p));
        if (!expired.p) return -1;
        int dead = PyObject_IsTrue(expired.p);
        if (dead) return dead < 0 ? -1 : 0;
        PyObject* latest = PyDict_GetItemWithError(h->by_sid, weak.p);
        if (!latest) return PyErr_Occurred() ? -1 : 0;
        return latest == g;
    };
    long long last = ((end > start + 1 ? end : start + 1) - 1) >> h->page_shift;
    for (long long page = start >> h->page_shift; page <= last; ++page) {
        Ref key(PyLong_FromLongLong(page));
        if (!key.p) return nullptr;
        PyObject* bucket = PyDict_GetItemWithError(h->pages, key.p);
        if (!bucket) {
            if (PyErr_Occurred()) return nullptr;
            continue;
        }
        Ref held(Py_NewRef(bucket));
        if (!PyList_Check(bucket)) {
            PyErr_SetString(PyExc_TypeError, "a page bucket is not a list");
            return nullptr;
        }
        if (PyList_GET_SIZE(bucket) > PRUNE_AT) {
            Ref kept(PyList_New(0));
            if (!kept.p) return nullptr;
            Ref items(PySequence_List(bucket));
            if (!items.p) return nullptr;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.p); ++i) {
                PyObject* g = PyList_GET_ITEM(items.p, i);
                int alive = live(g);
                if (alive < 0 || (alive && PyList_Append(kept.p, g) < 0)) return nullptr;
            }
            if (PyList_SetSlice(bucket, 0, PyList_GET_SIZE(bucket), kept.p) < 0) return nullptr;
        }
        // the bucket walked in place, not copied: its length read at each step and each item
        // held while it is read (nothing here adds to it)
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bucket); ++i) {
            Ref g(Py_NewRef(PyList_GET_ITEM(bucket, i)));
            long long address, g_end;
            if (!gen_int(h, g.p, G_ADDRESS, &address) || !gen_int(h, g.p, G_END, &g_end))
                return nullptr;
            if (!(address < end && start < g_end)) continue;
            int alive = live(g.p);
            if (alive < 0) return nullptr;
            if (alive) {
                if (!found.p && !(found.p = PySet_New(nullptr))) return nullptr;
                Ref id(gen_get(h, g.p, G_ID));
                if (!id.p || PySet_Add(found.p, id.p) < 0) return nullptr;
            }
        }
    }
    if (!found.p || PySet_GET_SIZE(found.p) == 0) return Py_NewRef(h->no_aliases);
    return PyFrozenSet_New(found.p);
}

// StorageGen(id, address, nbytes, creator, weak, device, first_op): made here when its slots
// are the ones GEN_SLOTS names (as its __init__ fills them), else by calling it
PyObject* make_gen(HotPath* h, PyObject* id, PyObject* address, PyObject* nbytes,
                   long long end_v, PyObject* creator, PyObject* weak, PyObject* device,
                   PyObject* first_op) {
    if (!h->gen_in_c) {
        PyObject* a[] = {nullptr, id, address, nbytes, creator, weak, device, first_op};
        return PyObject_Vectorcall(h->gen_type, a + 1, 7 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                   nullptr);
    }
    Ref end(PyLong_FromLongLong(end_v));
    Ref zero(PyLong_FromLong(0));
    if (!end.p || !zero.p) return nullptr;
    PyTypeObject* type = reinterpret_cast<PyTypeObject*>(h->gen_type);
    PyObject* gen = type->tp_alloc(type, 0);
    if (!gen) return nullptr;
    PyObject* values[GEN_N_SLOTS] = {id, address, nbytes, end.p, creator, first_op, Py_None,
                                     Py_None, Py_None, weak, Py_False, Py_None, zero.p,
                                     h->no_aliases, id, Py_False, device};
    for (int i = 0; i < GEN_N_SLOTS; ++i)
        *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(gen) + h->gen_slots[i]) =
            Py_NewRef(values[i]);
    return gen;
}

// A generation for storage st (StorageImpl address sid) at base, nbytes long, first seen by
// this call (Trace._new_gen; creating: the call made it): pinned, indexed by page, the
// storage's latest. One the call did not make may share memory with live storages, and with
// values its bytes are copied now, for replay.
PyObject* new_gen(Call& c, PyObject* t, PyObject* st, PyObject* sid, PyObject* base,
                  long long base_v, long long nbytes, bool creating, const AfTensorFacts* f) {
    HotPath* h = c.h;
    int known = PyDict_Contains(h->by_sid, sid);
    if (known < 0) return nullptr;
    if (!known) {   // pins the StorageImpl object, not its bytes
        if (f) {
            if (PyList_Append(h->weak, sid) < 0) return nullptr;
            reader->pin(f->storage_impl);   // (after the append, which may fail)
        } else {
            Ref pin(storage_read(h, st, SA_WEAK_REF));
            if (!pin.p || PyList_Append(h->weak, sid) < 0) return nullptr;
        }
    }
    int is_cpu = 1;   // (the reader reads CPU tensors only)
    if (!f) {
        Ref cpu(tensor_read(h, t, TA_IS_CPU));
        if (!cpu.p) return nullptr;
        is_cpu = PyObject_IsTrue(cpu.p);
        if (is_cpu < 0) return nullptr;
    }
    Ref device;
    if (is_cpu) {
        device.p = Py_NewRef(s_cpu);
    } else {
        Ref d(PyObject_GetAttr(t, s_device));
        device.p = d.p ? PyObject_GetAttr(d.p, s_type) : nullptr;
        if (!device.p) return nullptr;
    }
    Ref id(PyLong_FromSsize_t(PyList_GET_SIZE(h->storages)));
    Ref size(PyLong_FromLongLong(nbytes));
    if (!id.p || !size.p) return nullptr;
    Ref gen(make_gen(h, id.p, base, size.p, base_v + nbytes, creating ? c.index_obj : Py_None,
                     sid, device.p, c.index_obj));
    if (!gen.p) return nullptr;
    if (!creating) {
        Ref aliases(live_overlapping(h, base_v, base_v + nbytes));
        if (!aliases.p) return nullptr;
        if (!gen_set(h, gen.p, G_ALIASES, aliases.p)) return nullptr;
        if (PySet_GET_SIZE(aliases.p)) {   // the group: the smallest of theirs
            Ref it(PyObject_GetIter(aliases.p));
            if (!it.p) return nullptr;
            Ref group;
            while (PyObject* i = PyIter_Next(it.p)) {
                Ref iref(i);
                Ref older(PyObject_GetItem(h->storages, i));
                Ref g(older.p ? gen_get(h, older.p, G_GROUP) : nullptr);
                if (!g.p) return nullptr;
                int less = group.p ? PyObject_RichCompareBool(g.p, group.p, Py_LT) : 1;
                if (less < 0) return nullptr;
                if (less) Py_XSETREF(group.p, g.release());
            }
            if (PyErr_Occurred() || !group.p || !gen_set(h, gen.p, G_GROUP, group.p))
                return nullptr;
        }
        if (h->values) {   // (tracer._copy: bytes read where they are on the CPU)
            Ref copy(is_cpu ? PyBytes_FromStringAndSize(
                                  reinterpret_cast<const char*>(static_cast<intptr_t>(base_v)),
                                  static_cast<Py_ssize_t>(nbytes))
                            : method0(st, s_clone));
            if (!copy.p || !gen_set(h, gen.p, G_SNAPSHOT, copy.p)) return nullptr;
        }
    }
    if (PyList_Append(h->storages, gen.p) < 0) return nullptr;
    if (nbytes) {
        long long first = base_v >> h->page_shift, last = (base_v + nbytes - 1) >> h->page_shift;
        for (long long page = first; page <= last; ++page) {
            Ref key(PyLong_FromLongLong(page));
            if (!key.p) return nullptr;
            PyObject* bucket = PyDict_GetItemWithError(h->pages, key.p);
            if (bucket) {
                if (PyList_Append(bucket, gen.p) < 0) return nullptr;
            } else {
                if (PyErr_Occurred()) return nullptr;
                Ref fresh(PyList_New(1));
                if (!fresh.p) return nullptr;
                PyList_SET_ITEM(fresh.p, 0, Py_NewRef(gen.p));
                if (PyDict_SetItem(h->pages, key.p, fresh.p) < 0) return nullptr;
            }
        }
    }
    if (PyDict_SetItem(h->by_sid, sid, gen.p) < 0) return nullptr;
    return gen.release();
}

// Is the storage sid (at base, nbytes long) one an argument of this call is in? -1 on error
int argument_memory(Call& c, PyObject* sid, long long base, long long nbytes) {
    PyObject* known = PyDict_GetItemWithError(c.h->by_sid, sid);   // borrowed
    if (!known) return PyErr_Occurred() ? -1 : 0;
    Ref gen(Py_NewRef(known));
    long long address, end;
    if (!gen_int(c.h, gen.p, G_ADDRESS, &address) || !gen_int(c.h, gen.p, G_END, &end))
        return -1;
    if (address != base || end - address != nbytes) return 0;
    if (!accesses_ok(c)) return -1;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(c.accesses); ++j) {
        PyObject* acc = PyList_GET_ITEM(c.accesses, j);
        if (PyTuple_GET_ITEM(acc, 3) != gen.p) continue;
        Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(acc, 1));
        if (pos == -1 && PyErr_Occurred()) return -1;
        if (pos >= 0) return 1;
    }
    return 0;
}

// Trace._fresh: the write access of a tensor the call returned new; its slot.
PyObject* fresh(Call& c, PyObject* t, Py_ssize_t j) {
    HotPath* h = c.h;
    Py_ssize_t k = PyList_GET_SIZE(c.accesses);
    bool plain_t = plain_type(h, t);   // (else Trace._capture says what it is)
    AfTensorFacts facts;
    const AfTensorFacts* f = plain_t && read_facts(h, t, &facts) ? &facts : nullptr;
    Layout l;
    Ref st, base, nbytes;
    if (f) {
        if (!l.read(h, t, f)) return nullptr;
        base.p = address(f->storage_data);
        nbytes.p = base.p ? PyLong_FromLongLong(f->storage_nbytes) : nullptr;
        if (!nbytes.p) return nullptr;
    } else if (plain_t && l.read(h, t, nullptr)) {
        st.p = tensor_read(h, t, TA_UNTYPED_STORAGE);
        base.p = st.p ? storage_read(h, st.p, SA_DATA_PTR) : nullptr;
        nbytes.p = base.p ? storage_read(h, st.p, SA_NBYTES) : nullptr;
        if (!nbytes.p) Py_CLEAR(l.dtype.p);   // (as if its reads had stopped there)
    }
    Ref &sid = l.sid, &ptr = l.ptr, &shape = l.shape, &stride = l.stride, &dtype = l.dtype;
    long long base_v = 0, nbytes_v = 0;
    int odd = 0;
    if (dtype.p) {
        base_v = as_long_long(base.p);
        nbytes_v = base_v == -1 && PyErr_Occurred() ? 0 : as_long_long(nbytes.p);
        odd = PyErr_Occurred() ? 1 : PySet_Contains(h->odd_dtypes, dtype.p);
        if (odd < 0) return nullptr;
    }
    if (PyErr_Occurred()) {   // Trace._capture says what it is
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;
        PyErr_Clear();
        base_v = 0;
    }
    if (base_v) {   // Trace._argument_memory
        int in_argument = argument_memory(c, sid.p, base_v, nbytes_v);
        if (in_argument < 0) return nullptr;
        // the op returned an argument's own memory although its schema says the result is
        // new (an alias the schema does not annotate): no new generation, no write
        if (in_argument) Py_RETURN_NONE;
    }
    Ref gen;
    if (!base_v || odd) {
        if (!capture_py(c, t, s_W, -1, j, true)) return nullptr;
        if (PyList_GET_SIZE(c.accesses) <= k || !accesses_ok(c)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "_capture appended no access");
            return nullptr;
        }
        gen.p = Py_NewRef(PyTuple_GET_ITEM(PyList_GET_ITEM(c.accesses, k), 3));
    } else {
        gen.p = new_gen(c, t, st.p, sid.p, base.p, base_v, nbytes_v, true, f);
        if (!gen.p) return nullptr;
        // a generation made by this call: not dirty, so no birth needed (born -2)
        if (!append_access(c, t, s_W, -1, j, gen.p, ptr.p, shape.p, stride.p, dtype.p, -2))
            return nullptr;
    }
    if ((c.flags & F_UNINITIALIZED) && h->values && gen.p != Py_None) {
        Ref snap(gen_get(h, gen.p, G_SNAPSHOT));
        if (!snap.p) return nullptr;
        if (snap.p == Py_None) {   // replay needs its unspecified bytes
            Ref st2(tensor_read(h, t, TA_UNTYPED_STORAGE));
            Ref copy(st2.p ? PyObject_CallFunctionObjArgs(h->copy, st2.p, gen.p, nullptr)
                           : nullptr);
            if (!copy.p || !gen_set(h, gen.p, G_SNAPSHOT, copy.p)) return nullptr;
        }
    }
    return slot_of(h, k);
}

bool mark_born(Call& c, PyObject* t) {
    AfTensorFacts f;
    Ref cdata(read_facts(c.h, t, &f) ? address(f.tensor_impl) : tensor_read(c.h, t, TA_CDATA));
    return cdata.p && PyDict_SetItem(c.h->born, cdata.p, c.index_obj) == 0;
}

bool plain(HotPath* h, PyObject* x, int* out) {
    if (x == Py_None) {
        *out = 1;
        return true;
    }
    *out = PyObject_IsInstance(x, h->plain_types);
    return *out >= 0;
}

// Trace._results; nullptr with no exception set: ask Trace._results (a nested list)
PyObject* results(Call& c, PyObject* out) {
    HotPath* h = c.h;
    PyObject* fresh_flags = PyTuple_GET_ITEM(c.fast, 2);
    Py_ssize_t nfresh = PyTuple_GET_SIZE(fresh_flags);
    Py_ssize_t nreturns = PyLong_AsSsize_t(PyTuple_GET_ITEM(c.fast, 3));
    if (nreturns == -1 && PyErr_Occurred()) return nullptr;
    auto fresh_at = [&](Py_ssize_t j) { return j < nfresh &&
                                               PyTuple_GET_ITEM(fresh_flags, j) == Py_True; };
    if (is_tensor(h, out)) {
        if (!mark_born(c, out)) return nullptr;
        if (fresh_at(0)) return fresh(c, out, -1);
        Py_RETURN_NONE;
    }
    if (PyList_Check(out) || PyTuple_Check(out)) {
        Ref items(PySequence_Fast(out, "results"));
        if (!items.p) return nullptr;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(items.p);
        for (Py_ssize_t j = 0; j < n; ++j) {
            PyObject* o = PySequence_Fast_GET_ITEM(items.p, j);
            if (!is_tensor(h, o) && (PyList_Check(o) || PyTuple_Check(o))) return nullptr;
        }
        Ref res(PyList_New(n));
        if (!res.p) return nullptr;
        for (Py_ssize_t j = 0; j < n; ++j) {
            PyObject* o = PySequence_Fast_GET_ITEM(items.p, j);
            PyObject* r;
            if (is_tensor(h, o)) {
                if (!mark_born(c, o)) return nullptr;
                r = fresh_at(j) || (nreturns == 1 && fresh_at(0)) ? fresh(c, o, j)
                                                                  : Py_NewRef(Py_None);
            } else {
                int p;
                if (!plain(h, o, &p)) return nullptr;
                r = Py_NewRef(p ? o : Py_None);
            }
            if (!r) return nullptr;
            PyList_SET_ITEM(res.p, j, r);
        }
        if (PyList_Check(out)) return res.release();
        if (PyTuple_CheckExact(out)) return PyList_AsTuple(res.p);
        return PyObject_CallOneArg(reinterpret_cast<PyObject*>(Py_TYPE(out)), res.p);
    }
    int p;
    if (!plain(h, out, &p)) return nullptr;
    return Py_NewRef(p ? out : Py_None);
}

// the trace's method name(args...) (vectorcall, the trace first)
PyObject* trace_method(HotPath* h, PyObject* name, std::initializer_list<PyObject*> args) {
    PyObject* a[16];
    a[0] = h->trace;
    size_t n = 1;
    for (PyObject* o : args) a[n++] = o;
    return PyObject_VectorcallMethod(name, a, n | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

// Trace._after without its rare parts: a resized argument, the results.
bool after(Call& c, PyObject* out) {
    HotPath* h = c.h;
    if ((c.flags & F_WRITES) && !(c.flags & (F_ELEMENTWISE | F_FOREACH))) {
        // (an in-place pointwise op keeps its arguments' shapes: nothing to re-read)
        int m = moved(c);
        if (m < 0) return false;
        if (m) {
            Ref r(trace_method(h, s_moved, {c.call, c.spec, c.index_obj, c.args, c.kwargs,
                                           c.accesses}));
            if (!r.p) return false;
        }
    }
    if (c.flags & F_RETURNS) {
        Ref res(results(c, out));
        if (!res.p) {
            if (PyErr_Occurred()) return false;
            res.p = trace_method(h, s_results, {c.spec, out, c.index_obj, c.accesses});
            if (!res.p) return false;
        }
        if (!set_field(c.call, 9, res.p)) return false;
    }
    return true;
}

bool read_tensors(Call& c) {
    PyObject* tensors = PyTuple_GET_ITEM(c.fast, 1);
    Py_ssize_t n = PyTuple_GET_SIZE(tensors);
    c.tensors.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* e = PyTuple_GET_ITEM(tensors, i);
        TensorArg a;
        a.pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 0));
        a.name = PyTuple_GET_ITEM(e, 1);
        a.is_list = PyTuple_GET_ITEM(e, 2) == Py_True;
        a.mode = PyTuple_GET_ITEM(e, 3);
        a.code = PyLong_AsLong(PyTuple_GET_ITEM(e, 4));
        a.paired = PyTuple_GET_ITEM(e, 5) == Py_True;
        if (PyErr_Occurred()) return false;
        c.tensors.push_back(a);
    }
    return true;
}

// Is the fast form well made? (tracer._fast builds it: (flags, tensors, fresh, n returns,
// name, generator position); checked once per call, cheaply, so a bad one is an error, not
// a crash)
bool fast_form_ok(PyObject* fast) {
    if (!PyTuple_CheckExact(fast) || PyTuple_GET_SIZE(fast) != 6) return false;
    PyObject* tensors = PyTuple_GET_ITEM(fast, 1);
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(fast, 0)) || !PyTuple_CheckExact(tensors) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(fast, 2)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(fast, 3)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(fast, 5)))
        return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tensors); ++i) {
        PyObject* e = PyTuple_GET_ITEM(tensors, i);
        if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 6 ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(e, 0)) ||
            !PyUnicode_Check(PyTuple_GET_ITEM(e, 1)) || !PyLong_CheckExact(PyTuple_GET_ITEM(e, 4)))
            return false;
    }
    return true;
}

PyObject* slow(HotPath* h, PyObject* func, PyObject* args, PyObject* kwargs) {
    return trace_method(h, s_call, {func, args, kwargs});
}

// Call(items): made here as the list it is when Call adds nothing to a list's layout and
// construction (h->call_in_c), else by calling it with a tuple
constexpr Py_ssize_t N_CALL_FIELDS = 14;
PyObject* new_call(HotPath* h, PyObject* const* items) {
    if (!h->call_in_c) {
        Ref fields(PyTuple_New(N_CALL_FIELDS));
        if (!fields.p) return nullptr;
        for (Py_ssize_t i = 0; i < N_CALL_FIELDS; ++i)
            PyTuple_SET_ITEM(fields.p, i, Py_NewRef(items[i]));
        return PyObject_CallOneArg(h->call_type, fields.p);
    }
    PyTypeObject* type = reinterpret_cast<PyTypeObject*>(h->call_type);
    PyObject** kept = PyMem_New(PyObject*, N_CALL_FIELDS);
    if (!kept) return PyErr_NoMemory();
    PyObject* call = type->tp_alloc(type, 0);   // an empty list of the type
    if (!call) {
        PyMem_Free(kept);
        return nullptr;
    }
    for (Py_ssize_t i = 0; i < N_CALL_FIELDS; ++i) kept[i] = Py_NewRef(items[i]);
    PyListObject* list = reinterpret_cast<PyListObject*>(call);
    list->ob_item = kept;
    list->allocated = N_CALL_FIELDS;
    Py_SET_SIZE(list, N_CALL_FIELDS);
    return call;
}

// The Call list for this call, appended to the trace's calls (Trace._call's first lines).
bool open_call(Call& c) {
    HotPath* h = c.h;
    // from the innermost Python frame (a dispatch mode's own frame, when there is one, is
    // aliasflow's: the classifier passes over it)
    Ref zero(PyLong_FromLong(0));
    PyObject* site_args[] = {zero.p, h->user_known, h->is_user_code};
    Ref where(zero.p ? PyObject_Vectorcall(h->user_site, site_args, 3, nullptr) : nullptr);
    if (!where.p) return false;
    Ref node_seq, seq;
    uint64_t seq_v = 0, node_seq_v = 0;
    if (reader && reader->autograd(&seq_v, &node_seq_v)) {   // (read where autograd keeps it)
        node_seq.p = PyLong_FromUnsignedLongLong(node_seq_v);
        seq.p = node_seq.p ? Py_NewRef(Py_None) : nullptr;
    } else if (reader) {
        node_seq.p = Py_NewRef(Py_None);
        seq.p = PyLong_FromUnsignedLongLong(seq_v);
    } else {
        Ref node(call0(h->current_node));
        if (!node.p) return false;
        node_seq.p = node.p == Py_None ? Py_NewRef(Py_None) : method0(node.p, s_sequence_nr);
        // (only a forward call's sequence number is used: it says which node the call made)
        seq.p = !node_seq.p ? nullptr
                : node.p == Py_None ? call0(h->sequence_nr) : Py_NewRef(Py_None);
    }
    Ref empty(seq.p ? PyTuple_New(0) : nullptr);   // (seq is read last: set only if all are)
    if (!empty.p) return false;
    // (the stream region: None here, as this path runs only while streams are not active, and
    // entering a stream region makes them active for the rest of the trace)
    PyObject* items[N_CALL_FIELDS] = {c.index_obj, c.spec, c.func, where.p, Py_None, seq.p,
                                      node_seq.p, empty.p, Py_None, Py_None, Py_None, Py_None,
                                      Py_None, Py_None};
    c.call = new_call(h, items);
    return c.call && PyList_Append(h->calls, c.call) == 0;
}

// The dispatch mode's whole answer for one aten call.
PyObject* hot_run(HotPath* h, PyObject* func, PyObject* args, PyObject* kwargs) {
    if (!PyTuple_Check(args) || !PyDict_Check(kwargs)) return slow(h, func, args, kwargs);
    Ref key(PyLong_FromVoidPtr(func));
    if (!key.p) return nullptr;
    PyObject* known = PyDict_GetItemWithError(h->specs, key.p);
    if (!known) {
        if (PyErr_Occurred()) return nullptr;
        return slow(h, func, args, kwargs);   // (which makes the entry)
    }
    if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 4 ||
        PyTuple_GET_ITEM(known, 0) != func || !fast_form_ok(PyTuple_GET_ITEM(known, 3)))
        return slow(h, func, args, kwargs);
    Ref known_ref(Py_NewRef(known));
    {
        Ref active(PyObject_GetAttr(h->streams, s_active));
        if (!active.p) return nullptr;
        int on = PyObject_IsTrue(active.p);
        if (on < 0) return nullptr;
        if (on) return slow(h, func, args, kwargs);
    }
    Call c;
    c.h = h;
    c.func = func;
    c.args = args;
    c.kwargs = kwargs;
    c.spec = PyTuple_GET_ITEM(known, 1);
    c.run = PyTuple_GET_ITEM(known, 2);
    c.fast = PyTuple_GET_ITEM(known, 3);
    c.flags = PyLong_AsLong(PyTuple_GET_ITEM(c.fast, 0));
    c.index = PyList_GET_SIZE(h->calls);
    Ref index_obj(PyLong_FromSsize_t(c.index));
    c.index_obj = index_obj.p;
    c.call = nullptr;
    c.accesses = nullptr;
    if (!index_obj.p || !read_tensors(c) || !open_call(c)) {
        Py_XDECREF(c.call);
        return nullptr;
    }
    Ref call_ref(c.call);
    if (c.flags & F_VIEW) {   // no data touched: note when its results were made
        Ref out(PyObject_Call(c.run, args, kwargs));
        if (!out.p) {
            if (PyErr_ExceptionMatches(PyExc_Exception)) note_error(h, c.call, 10);
            return nullptr;
        }
        bool ok = !(c.flags & F_BIT_VIEW) || PyObject_SetAttr(h->trace, s_bits_seen, Py_True) == 0;
        if (ok && is_tensor(h, out.p)) {
            ok = mark_born(c, out.p);
        } else if (ok && (PyList_Check(out.p) || PyTuple_Check(out.p))) {
            Ref items(PySequence_Fast(out.p, "results"));
            ok = items.p != nullptr;
            for (Py_ssize_t j = 0; ok && j < PySequence_Fast_GET_SIZE(items.p); ++j) {
                PyObject* o = PySequence_Fast_GET_ITEM(items.p, j);
                if (is_tensor(h, o)) ok = mark_born(c, o);
            }
        }
        if (!ok) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;
            Ref text(error_text(h));
            if (!text.p || !set_field(c.call, 11, text.p)) return nullptr;
        }
        return out.release();
    }
    Ref bits(PyObject_GetAttr(h->trace, s_bits_seen));
    if (!bits.p) return nullptr;
    int seen = PyObject_IsTrue(bits.p);
    if (seen < 0) return nullptr;
    c.plain_bits = !seen;
    Ref accesses(PyList_New(0));
    if (!accesses.p) return nullptr;
    c.accesses = accesses.p;
    if (!before(c)) {   // never break the user's program: run it untracked
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;
        Ref text(error_text(h));
        if (!text.p) return nullptr;
        return trace_method(h, s_untracked, {c.call, func, args, kwargs, text.p});
    }
    if (!set_field(c.call, 7, c.accesses)) return nullptr;   // kept if PyTorch refuses the call
    Ref finish;
    if (c.flags & F_WRITES) {
        int s = suspect(c);
        if (s > 0) {
            finish.p = trace_method(h, s_suspect, {c.call, c.spec, func, args, kwargs,
                                                   c.accesses});
        }
        if (s < 0 || (s > 0 && !finish.p)) {   // no confirmation: the finding stays a hazard
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;
            PyErr_Clear();
        }
        if (finish.p == Py_None) Py_CLEAR(finish.p);
    }
    Ref out(PyObject_Call(c.run, args, kwargs));
    if (!out.p) {
        if (PyErr_ExceptionMatches(PyExc_Exception)) note_error(h, c.call, 10);
        return nullptr;
    }
    bool ok;
    if (finish.p) {
        Ref r(trace_method(h, s_after, {c.call, c.spec, c.index_obj, args, kwargs, c.accesses,
                                        out.p, finish.p}));
        ok = r.p != nullptr;
    } else {
        ok = after(c, out.p);
    }
    if (!ok) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;
        Ref text(error_text(h));
        Ref empty(PyTuple_New(0));
        if (!text.p || !empty.p || !set_field(c.call, 11, text.p) ||
            !set_field(c.call, 7, empty.p) || !set_field(c.call, 8, Py_None) ||
            !set_field(c.call, 9, Py_None))
            return nullptr;
        PyObject* name = PyTuple_GET_ITEM(c.fast, 4);
        Ref w(trace_method(h, s_warn, {name, text.p}));
        if (!w.p) return nullptr;
        return out.release();
    }
    if (!finish.p && !set_field(c.call, 7, c.accesses)) return nullptr;
    return out.release();
}

// Has anything replaced CPython's frame evaluation? TorchDynamo installs its own while any
// thread has a callback set and puts the default back when none has, so with the default in
// place set_eval_frame(None) would change nothing.
bool frame_evaluation_replaced() {
#if PY_VERSION_HEX < 0x030E0000
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) !=
           _PyEval_EvalFrameDefault;
#else
    return true;
#endif
}

// hot.__torch_dispatch__(func, types, args=(), kwargs=None): the dispatch mode's answer (the
// mode is a HotPath), with TorchDynamo's frame evaluation turned off while it runs (what
// torch's TorchDispatchMode does around a Python __torch_dispatch__ by wrapping it in Python
// frames: set_eval_frame(None) before, the previous callback back after), so a program
// compiled by torch.compile never has the tracer's Python compiled into its graphs.
PyObject* hot_dispatch(PyObject* self, PyObject* const* a, Py_ssize_t n) {
    HotPath* h = reinterpret_cast<HotPath*>(self);
    if (n < 2 || n > 4) {
        PyErr_Format(PyExc_TypeError,
                     "dispatch(func, types, args=(), kwargs=None) takes 2 to 4 arguments, got %zd",
                     n);
        return nullptr;
    }
    Ref args(n > 2 ? Py_NewRef(a[2]) : PyTuple_New(0));
    Ref kwargs(n > 3 && a[3] != Py_None ? Py_NewRef(a[3]) : PyDict_New());
    if (!args.p || !kwargs.p) return nullptr;
    Ref prior;
    if (h->set_eval_frame != Py_None && frame_evaluation_replaced()) {
        prior.p = PyObject_CallOneArg(h->set_eval_frame, Py_None);
        if (!prior.p) return nullptr;
    }
    PyObject* out = hot_run(h, a[0], args.p, kwargs.p);
    if (prior.p) {
        Pending pending;   // (the call's own exception, if any, comes first)
        Ref back(PyObject_CallOneArg(h->set_eval_frame, prior.p));
        if (!back.p) {
            if (pending.type) {
                PyErr_Clear();
                pending.restore();
            }
            Py_XDECREF(out);
            return nullptr;
        }
        pending.restore();
    }
    return out;
}

// Trace._finish's walk over each storage's latest generation (the list gens), compiled:
// whether its storage is alive (revive: UntypedStorage._new_with_weak_ptr), and with values,
// a CPU storage's final bytes, read where they are, when it is at most limit bytes long.
// Returns [(gen, storage)] for the longer ones, whose CRC-32 the caller takes (the storage
// holds the bytes alive meanwhile).
PyObject* hot_finish(PyObject* self, PyObject* const* a, Py_ssize_t n) {
    HotPath* h = reinterpret_cast<HotPath*>(self);
    if (n != 3) {
        PyErr_Format(PyExc_TypeError,
                     "finish(gens, revive, limit) takes 3 arguments, got %zd", n);
        return nullptr;
    }
    if (!PyList_CheckExact(a[0])) {
        PyErr_Format(PyExc_TypeError, "finish: gens must be a list, got %.100s",
                     Py_TYPE(a[0])->tp_name);
        return nullptr;
    }
    long long limit = PyLong_Check(a[2]) ? as_long_long(a[2]) : -1;
    if (limit < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "finish: limit must be an int >= 0, got %.100R",
                         a[2]);
        return nullptr;
    }
    Ref gens(PySequence_List(a[0]));   // (a copy of our own, whose items stay held)
    Ref large(gens.p ? PyList_New(0) : nullptr);
    if (!large.p) return nullptr;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gens.p); ++i) {
        PyObject* gen = PyList_GET_ITEM(gens.p, i);
        Ref weak(gen_get(h, gen, G_WEAK));
        Ref expired(weak.p ? PyObject_CallOneArg(h->expired, weak.p) : nullptr);
        int dead = expired.p ? PyObject_IsTrue(expired.p) : -1;
        if (dead < 0) return nullptr;
        bool alive = !dead;
        if (alive && h->values) {
            Ref device(gen_get(h, gen, G_DEVICE));
            if (!device.p) return nullptr;
            int cpu = PyObject_RichCompareBool(device.p, s_cpu, Py_EQ);
            if (cpu < 0) return nullptr;
            if (cpu) {
                Ref st(PyObject_CallOneArg(a[1], weak.p));
                if (!st.p) return nullptr;
                if (st.p == Py_None) {
                    alive = false;
                } else {
                    Ref ptr(storage_read(h, st.p, SA_DATA_PTR));
                    Ref size(ptr.p ? storage_read(h, st.p, SA_NBYTES) : nullptr);
                    long long address, nbytes;
                    if (!size.p || !gen_int(h, gen, G_ADDRESS, &address) ||
                        !gen_int(h, gen, G_NBYTES, &nbytes))
                        return nullptr;
                    long long ptr_v = as_long_long(ptr.p), size_v = as_long_long(size.p);
                    if (PyErr_Occurred()) return nullptr;
                    if (ptr_v != address || size_v != nbytes) {
                        alive = false;
                    } else if (nbytes <= limit) {
                        Ref bytes(PyBytes_FromStringAndSize(
                            nbytes ? reinterpret_cast<const char*>(static_cast<intptr_t>(address))
                                   : nullptr,
                            static_cast<Py_ssize_t>(nbytes)));
                        if (!bytes.p || !gen_set(h, gen, G_FINAL_BYTES, bytes.p)) return nullptr;
                    } else {
                        Ref pair(PyTuple_Pack(2, gen, st.p));
                        if (!pair.p || PyList_Append(large.p, pair.p) < 0) return nullptr;
                    }
                }
            }
        }
        if (!gen_set(h, gen, G_ALIVE_AT_END, alive ? Py_True : Py_False)) return nullptr;
    }
    return large.release();
}

PyMethodDef hot_methods[] = {
    {"finish", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(hot_finish)),
     METH_FASTCALL,
     "finish(gens, revive, limit): Trace._finish's walk over each storage's latest generation; "
     "returns [(gen, storage)] for the CPU storages longer than limit (their CRC-32 is the "
     "caller's to take)."},
    {"__torch_dispatch__",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(hot_dispatch)), METH_FASTCALL,
     "__torch_dispatch__(func, types, args=(), kwargs=None): the call recorded and run, with "
     "TorchDynamo's frame evaluation off while it runs (a dispatch mode that is a HotPath "
     "inherits it)."},
    {nullptr, nullptr, 0, nullptr}};


PyObject* hot_new(PyTypeObject* type, PyObject*, PyObject*) {
    PyObject* self = type->tp_alloc(type, 0);
    if (self) {
        reinterpret_cast<HotPath*>(self)->page_shift = 20;
    }
    return self;
}

const char hot_doc[] =
    "HotPath(trace, calls, by_sid, born, specs, slots, weak, pages, storages, streams, "
    "storage_address, sequence_nr, current_node, user_site, user_known, is_user_code, "
    "call_type, gen_type, text, odd_dtypes, plain_types, tensor_type, same_layout, slot, "
    "parameter_type, expired, no_aliases, copy, default_generator, set_eval_frame, values, "
    "page_shift): the base of the tracer's dispatch mode (tracer._CompiledMode), which "
    "inherits its __torch_dispatch__.";

PyType_Slot hot_slots[] = {
    {Py_tp_doc, const_cast<char*>(hot_doc)},
    {Py_tp_new, reinterpret_cast<void*>(hot_new)},
    {Py_tp_init, reinterpret_cast<void*>(hot_init)},
    {Py_tp_dealloc, reinterpret_cast<void*>(hot_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(hot_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(hot_clear)},
    {Py_tp_methods, hot_methods},
    {0, nullptr}};

PyType_Spec hot_spec = {"aliasflow.interop.torch_trace._hot.HotPath", sizeof(HotPath), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
                        hot_slots};

// use_reader(capsule or None): read plain tensors through the PyTorch reader (its capsule,
// reader_api.h), or (None) through their Python accessors again. The caller checks that
// the reader was built against the PyTorch that runs.
PyObject* use_reader(PyObject*, PyObject* capsule) {
    if (capsule == Py_None) {
        reader = nullptr;
        Py_RETURN_NONE;
    }
    if (!PyCapsule_CheckExact(capsule)) {
        PyErr_Format(PyExc_TypeError,
                     "use_reader: expected the reader's capsule or None, got %.100s",
                     Py_TYPE(capsule)->tp_name);
        return nullptr;
    }
    auto* api = static_cast<const AfReaderApi*>(PyCapsule_GetPointer(capsule, AF_READER_CAPSULE));
    if (!api) return nullptr;
    if (api->version != AF_READER_API_VERSION || !api->read || !api->size || !api->pin ||
        !api->autograd) {
        PyErr_Format(PyExc_ValueError, "use_reader: the reader's API is version %d, not %d",
                     api->version, AF_READER_API_VERSION);
        return nullptr;
    }
    reader = api;
    Py_RETURN_NONE;
}

PyObject* reader_in_use(PyObject*, PyObject*) { return PyBool_FromLong(reader != nullptr); }

PyMethodDef module_methods[] = {
    {"use_reader", use_reader, METH_O,
     "use_reader(capsule or None): read plain tensors through the PyTorch reader's capsule "
     "(aliasflow.interop.torch_trace._reader.API), or through their accessors (None)."},
    {"reader_in_use", reader_in_use, METH_NOARGS, "reader_in_use(): is a reader installed?"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.interop.torch_trace._hot",
                      "The PyTorch tracer's compiled per-call path (see "
                      "aliasflow/interop/torch_trace/tracer.py, Trace._call, for the reference).",
                      -1, module_methods, nullptr, nullptr, nullptr, nullptr};

bool intern_all() {
    struct Name { PyObject** slot; const char* text; } names[] = {
        {&s_data_ptr, "data_ptr"}, {&s_shape, "shape"}, {&s_stride, "stride"},
        {&s_dtype, "dtype"}, {&s_cdata, "_cdata"}, {&s_is_conj, "is_conj"}, {&s_is_neg, "is_neg"},
        {&s_is_cpu, "is_cpu"}, {&s_device, "device"}, {&s_type, "type"},
        {&s_untyped_storage, "untyped_storage"}, {&s_nbytes, "nbytes"},
        {&s_weak_ref, "_weak_ref"}, {&s_clone, "clone"}, {&s_active, "active"},
        {&s_bits_seen, "_bits_seen"}, {&s_sequence_nr, "_sequence_nr"},
        {&s_call, "_call"}, {&s_capture, "_capture"}, {&s_suspect, "_suspect"},
        {&s_after, "_after"}, {&s_moved, "_moved"}, {&s_results, "_results"},
        {&s_untracked, "_untracked"}, {&s_warn, "_warn"}, {&s_W, "W"}, {&s_cpu, "cpu"},
        {&s_generator, "generator"}, {&s_get_state, "get_state"},
    };
    for (const Name& n : names)
        if (!(*n.slot = PyUnicode_InternFromString(n.text))) return false;
    for (int i = 0; i < G_N; ++i)
        if (!(gen_field_names[i] = PyUnicode_InternFromString(GEN_FIELD_NAMES[i]))) return false;
    for (int i = 0; i < TA_N; ++i)
        if (!(tensor_acc_names[i] = PyUnicode_InternFromString(TENSOR_ACC_NAMES[i])))
            return false;
    for (int i = 0; i < SA_N; ++i)
        if (!(storage_acc_names[i] = PyUnicode_InternFromString(STORAGE_ACC_NAMES[i])))
            return false;
    return true;
}

}  // namespace

PyMODINIT_FUNC PyInit__hot(void) {
    if (!intern_all()) return nullptr;
    PyObject* m = PyModule_Create(&module);
    if (!m) return nullptr;
    PyObject* type = PyType_FromSpec(&hot_spec);
    if (!type || PyModule_AddObject(m, "HotPath", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
