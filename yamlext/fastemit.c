/* The emitter's fast path: an output object as compiler/io/emit.py's canonical YAML text.
 *
 * compiler/io/emit.py is its only user; the Python emitter there is the definition and this
 * writes the same bytes: keys sorted (Python's order) at every level, two spaces a level, a
 * list under a key at the key's indent, a mapping in a list opened by "- " on its first
 * line, "{}" and "[]" for empty collections. Strings and keys go through the caller's
 * `scalar_string` (kubectl's quoting rules live in Python, in one place), except those its
 * table of plain characters says are plain (also made in Python); True, False, None
 * and exact ints are written here; anything else (floats, other types) goes through the
 * caller's `scalar`. Built into the same module as fastyaml.c, against the limited API.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "fastemit.h"

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
    PyObject *texts;         /* str -> its YAML text, as far as known (the caller's cache) */
    Py_ssize_t max_texts;    /* the cache's bound: no more entries are added past it */
    PyObject *scalar_string; /* str -> its YAML text */
    PyObject *scalar;        /* any other scalar -> its YAML text */
    const char *plain;       /* 128 entries: 2 starts a plain text, 1 may follow, 0 neither */
} Out;

static int grow(Out *out, Py_ssize_t more) {
    if (out->size + more <= out->capacity)
        return 0;
    Py_ssize_t capacity = out->capacity ? out->capacity : 4096;
    while (capacity < out->size + more)
        capacity *= 2;
    char *data = realloc(out->data, (size_t)capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = data, out->capacity = capacity;
    return 0;
}

static int put(Out *out, const char *text, Py_ssize_t size) {
    if (grow(out, size) < 0)
        return -1;
    memcpy(out->data + out->size, text, (size_t)size);
    out->size += size;
    return 0;
}

static int spaces(Out *out, Py_ssize_t count) {
    if (grow(out, count) < 0)
        return -1;
    memset(out->data + out->size, ' ', (size_t)count);
    out->size += count;
    return 0;
}

/* A str's UTF-8 bytes. */
static int put_str(Out *out, PyObject *text) {
    Py_ssize_t size;
    const char *bytes = PyUnicode_AsUTF8AndSize(text, &size);
    return bytes == NULL ? -1 : put(out, bytes, size);
}

/* The result of `fn(value)`, which must be a str. */
static int put_call(Out *out, PyObject *fn, PyObject *value) {
    PyObject *text = PyObject_CallFunctionObjArgs(fn, value, NULL);
    if (text == NULL)
        return -1;
    int rc = PyUnicode_Check(text) ? put_str(out, text) : -1;
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "a scalar's text must be a str");
    Py_DECREF(text);
    return rc;
}

/* Whether a text is plain by the caller's table: a first character marked 2, the others
 * marked, and no ":" at its end. */
static int plain(const Out *out, const char *bytes, Py_ssize_t size) {
    if (size == 0 || (unsigned char)bytes[0] >= 128 || out->plain[(unsigned char)bytes[0]] != 2
        || bytes[size - 1] == ':')
        return 0;
    for (Py_ssize_t i = 1; i < size; i++)
        if ((unsigned char)bytes[i] >= 128 || out->plain[(unsigned char)bytes[i]] == 0)
            return 0;
    return 1;
}

/* A str's YAML text: from the cache, else itself when the table says it is plain, else
 * from `scalar_string` (then cached). */
static int put_text(Out *out, PyObject *value) {
    PyObject *text = PyDict_GetItemWithError(out->texts, value);
    if (text != NULL)
        return put_str(out, text);
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t size;
    const char *bytes = PyUnicode_AsUTF8AndSize(value, &size);
    if (bytes == NULL) {  /* a lone surrogate: `scalar_string` escapes it */
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return -1;
        PyErr_Clear();
    } else if (plain(out, bytes, size)) {
        return put(out, bytes, size);
    }
    text = PyObject_CallFunctionObjArgs(out->scalar_string, value, NULL);
    if (text == NULL)
        return -1;
    int rc = -1;
    if (!PyUnicode_Check(text))
        PyErr_SetString(PyExc_TypeError, "a scalar's text must be a str");
    else if (PyDict_Size(out->texts) >= out->max_texts
             || PyDict_SetItem(out->texts, value, text) == 0)
        rc = put_str(out, text);
    Py_DECREF(text);
    return rc;
}

static int put_scalar(Out *out, PyObject *value) {
    if (PyUnicode_CheckExact(value))
        return put_text(out, value);
    if (PyUnicode_Check(value))
        return put_call(out, out->scalar_string, value);
    if (value == Py_True)
        return put(out, "true", 4);
    if (value == Py_False)
        return put(out, "false", 5);
    if (value == Py_None)
        return put(out, "null", 4);
    if (Py_IS_TYPE(value, &PyLong_Type)) {
        PyObject *text = PyObject_Str(value);
        if (text == NULL)
            return -1;
        int rc = put_str(out, text);
        Py_DECREF(text);
        return rc;
    }
    return put_call(out, out->scalar, value);
}

static int block(Out *out, PyObject *value, Py_ssize_t indent, int dash);

/* What follows a key's colon or a list item's dash (already written), and its lines. */
static int entry(Out *out, PyObject *value, Py_ssize_t indent, int in_list) {
    int is_dict = PyDict_Check(value);
    if (is_dict || PyList_Check(value)) {
        Py_ssize_t size = is_dict ? PyDict_Size(value) : PyList_Size(value);
        if (size == 0)
            return put(out, is_dict ? " {}\n" : " []\n", 4);
        if (put(out, "\n", 1) < 0)
            return -1;
        return block(out, value, is_dict || in_list ? indent + 2 : indent, 0);
    }
    if (put(out, " ", 1) < 0 || put_scalar(out, value) < 0)
        return -1;
    return put(out, "\n", 1);
}

static int mapping(Out *out, PyObject *value, Py_ssize_t indent, int dash) {
    PyObject *keys = PyDict_Keys(value);
    if (keys == NULL || PyList_Sort(keys) < 0) {
        Py_XDECREF(keys);
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_Size(keys); i++) {
        PyObject *key = PyList_GetItem(keys, i);
        if (i == 0 && dash)
            rc = spaces(out, indent - 2) < 0 || put(out, "- ", 2) < 0 ? -1 : 0;
        else
            rc = spaces(out, indent);
        PyObject *text = rc < 0 ? NULL : PyObject_Str(key);
        PyObject *item = text == NULL ? NULL : PyDict_GetItemWithError(value, key);
        if (item == NULL || (PyUnicode_CheckExact(text) ? put_text(out, text)
                             : put_call(out, out->scalar_string, text)) < 0
            || put(out, ":", 1) < 0 || entry(out, item, indent, 0) < 0)
            rc = -1;
        if (item == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "a mapping changed while it was written");
        Py_XDECREF(text);
    }
    Py_DECREF(keys);
    return rc;
}

static int sequence(Out *out, PyObject *value, Py_ssize_t indent) {
    for (Py_ssize_t i = 0; i < PyList_Size(value); i++) {
        PyObject *item = PyList_GetItem(value, i);
        if (item == NULL)
            return -1;
        Py_INCREF(item);
        int rc;
        if (PyDict_Check(item) && PyDict_Size(item) > 0)
            rc = block(out, item, indent + 2, 1);
        else
            rc = spaces(out, indent) < 0 || put(out, "-", 1) < 0 ? -1 : entry(out, item, indent, 1);
        Py_DECREF(item);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The lines of a non-empty dict or list at `indent`; `dash`: the first line starts with the
 * "- " of the list item the dict is. */
static int block(Out *out, PyObject *value, Py_ssize_t indent, int dash) {
    if (Py_EnterRecursiveCall(" while writing YAML"))
        return -1;
    int rc = PyDict_Check(value) ? mapping(out, value, indent, dash)
                                 : sequence(out, value, indent);
    Py_LeaveRecursiveCall();
    return rc;
}

/* emit(obj: dict, texts: dict, max_texts: int, scalar_string, scalar, plain: bytes) -> str:
 * `obj` as one YAML document; `plain` is the table of `plain()` (128 bytes). */
PyObject *fastemit_emit(PyObject *module, PyObject *args) {
    PyObject *obj;
    Py_ssize_t table_size;
    Out out = {NULL, 0, 0, NULL, 0, NULL, NULL, NULL};
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!nOOy#", &PyDict_Type, &obj, &PyDict_Type, &out.texts,
                          &out.max_texts, &out.scalar_string, &out.scalar, &out.plain,
                          &table_size))
        return NULL;
    if (table_size != 128) {
        PyErr_SetString(PyExc_ValueError, "the plain table must have 128 entries");
        return NULL;
    }
    if (PyDict_Size(obj) == 0)
        return PyUnicode_FromString("{}\n");
    PyObject *text = NULL;
    if (block(&out, obj, 0, 0) == 0)
        text = PyUnicode_DecodeUTF8(out.data, out.size, "strict");
    free(out.data);
    return text;
}
