// The PyTorch tracer's search for the user's frame (see ../frames.py, the pure-Python
// reference it must agree with): walk from the caller's frame towards the bottom of the stack
// and return the first frame whose code object the classifier calls the user's. Each code
// object is classified once; the answers are kept in the dict the caller passes.
// user_site answers (code, line) of that frame.
#include <Python.h>
#include <frameobject.h>

#include "../../../_native_src/boundary.hpp"

namespace {

// The classifier's answers, in the dict the caller passes (id(code) -> (code, answer): keyed
// by address, as hashing a code object hashes its constants and names on every lookup; the
// entry holds the code object, so the address stays its own), and mirrored here in a small
// direct-mapped table of the same answers (a load instead of an int and a dict lookup per
// frame; a deep model's stack walks many frames per call). The table holds its code objects
// and follows one dict: another dict, or this one made smaller, empties it.
struct Remembered {
    PyObject* code;   // strong reference, or nullptr
    bool mine;
};
constexpr size_t TABLE = 4096;
Remembered table[TABLE];
PyObject* table_dict = nullptr;   // strong reference
Py_ssize_t table_dict_size = 0;

void forget_all() {
    for (Remembered& r : table) Py_CLEAR(r.code);
}

size_t slot_of(PyObject* code) {
    uintptr_t a = reinterpret_cast<uintptr_t>(code);
    return (a >> 4 ^ a >> 16) & (TABLE - 1);
}

// Is code the user's? -1 on error.
int user_code(PyObject* code, PyObject* known, PyObject* classify) {
    if (known != table_dict || PyDict_GET_SIZE(known) < table_dict_size) {
        forget_all();
        Py_INCREF(known);
        Py_XSETREF(table_dict, known);
    }
    table_dict_size = PyDict_GET_SIZE(known);
    Remembered& r = table[slot_of(code)];
    if (r.code == code) return r.mine;
    int truth;
    afpy::Ref key(PyLong_FromVoidPtr(code));
    if (!key.p) return -1;
    PyObject* entry = PyDict_GetItemWithError(known, key.p);   // borrowed
    if (entry && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2 &&
        PyTuple_GET_ITEM(entry, 0) == code) {
        truth = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
        if (truth < 0) return -1;
    } else {
        if (PyErr_Occurred()) return -1;
        afpy::Ref answer(PyObject_CallOneArg(classify, code));
        if (!answer.p) return -1;
        truth = PyObject_IsTrue(answer.p);
        if (truth < 0) return -1;
        afpy::Ref value(PyTuple_Pack(2, code, truth ? Py_True : Py_False));
        if (!value.p || PyDict_SetItem(known, key.p, value.p) < 0) return -1;
        table_dict_size = PyDict_GET_SIZE(known);
    }
    Py_INCREF(code);
    Py_XSETREF(r.code, code);
    r.mine = truth != 0;
    return truth;
}

bool read_arguments(PyObject* const* args, Py_ssize_t nargs, const char* name,
                    Py_ssize_t* skip) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s(skip, known, classify) takes 3 arguments", name);
        return false;
    }
    *skip = PyLong_AsSsize_t(args[0]);
    if (*skip == -1 && PyErr_Occurred()) return false;
    if (*skip < 0) {
        PyErr_Format(PyExc_ValueError, "%s: skip must be >= 0, got %zd", name, *skip);
        return false;
    }
    if (!PyDict_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s: known must be a dict, got %.100s", name,
                     Py_TYPE(args[1])->tp_name);
        return false;
    }
    return true;
}

PyObject* site_of(PyObject* code, int line) {
    afpy::Ref number(PyLong_FromLong(line));
    if (!number.p) return nullptr;
    PyObject* site = PyTuple_Pack(2, code, number.p);
    // a tuple of untracked objects (code objects are not tracked): untracked now, as the
    // collector would at its first pass (a trace keeps one per call)
    if (site && !PyObject_GC_IsTracked(code)) PyObject_GC_UnTrack(site);
    return site;
}

// user_frame(skip, known, classify) -> frame or None
PyObject* user_frame(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    Py_ssize_t skip;
    if (!read_arguments(args, nargs, "user_frame", &skip)) return nullptr;
    afpy::Ref frame(reinterpret_cast<PyObject*>(PyEval_GetFrame()));   // the caller's frame
    Py_XINCREF(frame.p);
    for (Py_ssize_t j = 0; frame.p; ++j) {
        if (j >= skip) {
            afpy::Ref code(reinterpret_cast<PyObject*>(
                PyFrame_GetCode(reinterpret_cast<PyFrameObject*>(frame.p))));
            int mine = user_code(code.p, args[1], args[2]);
            if (mine < 0) return nullptr;
            if (mine) return frame.release();
        }
        PyObject* back = reinterpret_cast<PyObject*>(
            PyFrame_GetBack(reinterpret_cast<PyFrameObject*>(frame.p)));
        Py_DECREF(frame.release());
        frame.p = back;
    }
    Py_RETURN_NONE;
}

// The last site answered, by code object and instruction: one user line issues many aten
// calls in a row (a backward pass, an optimizer step), and finding the line of an
// instruction scans the code's line table. (The table held, as one instruction of one code
// object is always on the same line; Python before 3.11 cannot say which instruction.)
struct LastSite {
    PyObject* code = nullptr;   // strong references
    PyObject* site = nullptr;
    int lasti = -1;
} last_site;

// user_site(skip, known, classify) -> (code, line) or None
PyObject* user_site(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    afpy::Ref frame(user_frame(self, args, nargs));
    if (!frame.p) return nullptr;
    if (frame.p == Py_None) Py_RETURN_NONE;
    PyFrameObject* f = reinterpret_cast<PyFrameObject*>(frame.p);
    afpy::Ref code(reinterpret_cast<PyObject*>(PyFrame_GetCode(f)));
#if PY_VERSION_HEX >= 0x030B0000
    int lasti = PyFrame_GetLasti(f);
    if (lasti >= 0 && code.p == last_site.code && lasti == last_site.lasti)
        return Py_NewRef(last_site.site);
    PyObject* site = site_of(code.p, PyFrame_GetLineNumber(f));
    if (site && lasti >= 0) {
        Py_XSETREF(last_site.code, Py_NewRef(code.p));
        Py_XSETREF(last_site.site, Py_NewRef(site));
        last_site.lasti = lasti;
    }
    return site;
#else
    return site_of(code.p, PyFrame_GetLineNumber(f));
#endif
}

PyMethodDef module_methods[] = {
    {"user_site", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(user_site)),
     METH_FASTCALL,
     "user_site(skip, known, classify): (code, line) of the frame user_frame finds, or None."},
    {"user_frame", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(user_frame)),
     METH_FASTCALL,
     "user_frame(skip, known, classify): the first frame, from the caller's frame with skip "
     "frames passed over towards the bottom of the stack, whose code object classify(code) "
     "calls the user's (answers kept in the dict known, id(code) -> (code, bool)); None if "
     "there is none."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.interop.torch_trace._frames",
                      "Compiled user-frame search of the PyTorch tracer (see "
                      "aliasflow/interop/torch_trace/frames.py for the reference).",
                      -1, module_methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__frames(void) { return PyModule_Create(&module); }
