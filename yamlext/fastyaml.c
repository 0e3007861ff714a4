/* The loader's fast path: libyaml events straight to Python dicts, lists and scalars.
 *
 * compiler/io/fastload.py is its only user. It builds the same values as the loader's
 * _PlainLoader (compiler/io/loader.py) for the YAML it understands, and gives up on anything
 * else: every tag, anchor and alias, complex or non-string keys, duplicate keys, plain
 * scalars the resolver cannot turn into a JSON value, nesting deeper than MAX_DEPTH, and
 * every syntax error. Giving up raises `Fallback`; the caller then loads the text with the
 * full loader, which reports what is wrong at its position. Plain scalars are resolved by
 * the caller's function (kubectl's rules live in Python, in one place) through its cache,
 * except a text that neither starts with one of the caller's `starts` nor is one of its
 * `words`: that is a string by those rules, and stays one here without a call.
 *
 * Built against the limited API (abi3) and linked with libyaml 0.2.5, the version PyYAML's
 * own C loader uses, so both paths read the same grammar.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 512

static PyObject *Fallback;

typedef struct {
    PyObject_HEAD
    yaml_parser_t parser;
    PyObject *data;    /* the UTF-8 bytes libyaml reads (kept alive) */
    PyObject *cache;   /* plain scalar text -> value */
    PyObject *plain;   /* text -> value, or `missing` when it has none */
    PyObject *missing;
    PyObject *words;   /* plain texts that are not strings although `starts` passes them */
    PyObject *starts_text;
    const char *starts; /* the first characters of plain texts that may not be strings */
    Py_ssize_t nstarts;
    int started, ended;
} Stream;

static PyObject *node(Stream *s, yaml_event_t *event, int depth);

static PyObject *give_up(void) {
    PyErr_SetNone(Fallback);
    return NULL;
}

static int next_event(Stream *s, yaml_event_t *event) {
    if (yaml_parser_parse(&s->parser, event))
        return 0;
    give_up();
    return -1;
}

/* The value of a scalar event: a quoted one is its text, a plain one what `plain` says. */
static PyObject *scalar(Stream *s, yaml_event_t *event) {
    if (event->data.scalar.anchor != NULL || event->data.scalar.tag != NULL)
        return give_up();
    PyObject *text = PyUnicode_DecodeUTF8((const char *)event->data.scalar.value,
                                          (Py_ssize_t)event->data.scalar.length, "strict");
    if (text == NULL) {
        PyErr_Clear();
        return give_up();
    }
    if (!event->data.scalar.plain_implicit)
        return text;
    PyObject *value = PyDict_GetItemWithError(s->cache, text);
    if (value != NULL) {
        Py_INCREF(value);
        Py_DECREF(text);
        return value;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(text);
        return NULL;
    }
    const char first = (const char)event->data.scalar.value[0];
    if (first != '\0' && memchr(s->starts, first, (size_t)s->nstarts) == NULL) {
        int word = PySet_Contains(s->words, text);
        if (word == 0)
            return text; /* a string, as `plain` would say */
        if (word < 0) {
            Py_DECREF(text);
            return NULL;
        }
    }
    value = PyObject_CallFunctionObjArgs(s->plain, text, NULL);
    Py_DECREF(text);
    if (value == s->missing) {
        Py_DECREF(value);
        return give_up();
    }
    return value;
}

static PyObject *mapping(Stream *s, int depth) {
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (;;) {
        yaml_event_t event;
        if (next_event(s, &event) < 0)
            goto fail;
        if (event.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&event);
            return out;
        }
        PyObject *key = event.type == YAML_SCALAR_EVENT ? scalar(s, &event) : give_up();
        yaml_event_delete(&event);
        if (key == NULL)
            goto fail;
        if (!PyUnicode_CheckExact(key) || PyDict_Contains(out, key) != 0) {
            Py_DECREF(key);
            if (!PyErr_Occurred())
                give_up();
            goto fail;
        }
        if (next_event(s, &event) < 0) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *value = node(s, &event, depth + 1);
        yaml_event_delete(&event);
        int failed = value == NULL || PyDict_SetItem(out, key, value) < 0;
        Py_DECREF(key);
        Py_XDECREF(value);
        if (failed)
            goto fail;
    }
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *sequence(Stream *s, int depth) {
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (;;) {
        yaml_event_t event;
        if (next_event(s, &event) < 0)
            break;
        if (event.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&event);
            return out;
        }
        PyObject *item = node(s, &event, depth + 1);
        yaml_event_delete(&event);
        int failed = item == NULL || PyList_Append(out, item) < 0;
        Py_XDECREF(item);
        if (failed)
            break;
    }
    Py_DECREF(out);
    return NULL;
}

/* The value of the node that `event` starts (the caller deletes the event). */
static PyObject *node(Stream *s, yaml_event_t *event, int depth) {
    if (depth > MAX_DEPTH)
        return give_up();
    switch (event->type) {
    case YAML_SCALAR_EVENT:
        return scalar(s, event);
    case YAML_MAPPING_START_EVENT:
        if (event->data.mapping_start.anchor != NULL || event->data.mapping_start.tag != NULL)
            return give_up();
        return mapping(s, depth);
    case YAML_SEQUENCE_START_EVENT:
        if (event->data.sequence_start.anchor != NULL ||
            event->data.sequence_start.tag != NULL)
            return give_up();
        return sequence(s, depth);
    default:
        return give_up();
    }
}

/* Expect one event of `type` (and drop it). */
static int expect(Stream *s, yaml_event_type_t type) {
    yaml_event_t event;
    if (next_event(s, &event) < 0)
        return -1;
    int found = event.type == type;
    yaml_event_delete(&event);
    if (!found)
        give_up();
    return found ? 0 : -1;
}

/* The next document's value; NULL without an exception at the end of the stream. */
static PyObject *stream_next(PyObject *self) {
    Stream *s = (Stream *)self;
    if (s->ended)
        return NULL;
    if (!s->started) {
        s->started = 1;
        if (expect(s, YAML_STREAM_START_EVENT) < 0)
            goto failed;
    }
    yaml_event_t event;
    if (next_event(s, &event) < 0)
        goto failed;
    if (event.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&event);
        s->ended = 1;
        return NULL;
    }
    int document = event.type == YAML_DOCUMENT_START_EVENT;
    yaml_event_delete(&event);
    if (!document) {
        give_up();
        goto failed;
    }
    if (next_event(s, &event) < 0)
        goto failed;
    PyObject *value = node(s, &event, 0);
    yaml_event_delete(&event);
    if (value == NULL)
        goto failed;
    if (expect(s, YAML_DOCUMENT_END_EVENT) < 0) {
        Py_DECREF(value);
        goto failed;
    }
    return value;
failed:
    s->ended = 1;
    return NULL;
}

static void stream_dealloc(PyObject *self) {
    Stream *s = (Stream *)self;
    PyTypeObject *type = Py_TYPE(self);
    yaml_parser_delete(&s->parser);
    Py_XDECREF(s->data);
    Py_XDECREF(s->cache);
    Py_XDECREF(s->plain);
    Py_XDECREF(s->missing);
    Py_XDECREF(s->words);
    Py_XDECREF(s->starts_text);
    freefunc release = (freefunc)PyType_GetSlot(type, Py_tp_free);
    release(self);
    Py_DECREF(type);
}

static PyObject *stream_iter(PyObject *self) {
    Py_INCREF(self);
    return self;
}

static PyType_Slot stream_slots[] = {
    {Py_tp_dealloc, stream_dealloc},
    {Py_tp_iter, stream_iter},
    {Py_tp_iternext, stream_next},
    {Py_tp_doc, "The documents of one YAML stream, built (see the module's doc)."},
    {0, NULL},
};

static PyType_Spec stream_spec = {
    "compiler._native._fastyaml.Stream", sizeof(Stream), 0, Py_TPFLAGS_DEFAULT, stream_slots,
};

static PyObject *StreamType;

/* stream(data: bytes, cache: dict, plain: Callable[[str], Any], missing: object,
 *        words: frozenset[str], starts: str) */
static PyObject *new_stream(PyObject *module, PyObject *args) {
    PyObject *data, *cache, *plain, *missing, *words, *starts;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!OOO!U", &PyBytes_Type, &data, &PyDict_Type, &cache,
                          &plain, &missing, &PyFrozenSet_Type, &words, &starts))
        return NULL;
    Py_ssize_t nstarts;
    const char *start_chars = PyUnicode_AsUTF8AndSize(starts, &nstarts);
    if (start_chars == NULL)
        return NULL;
    Stream *s = (Stream *)PyType_GenericAlloc((PyTypeObject *)StreamType, 0);
    if (s == NULL)
        return NULL;
    if (!yaml_parser_initialize(&s->parser)) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    Py_INCREF(data);
    Py_INCREF(cache);
    Py_INCREF(plain);
    Py_INCREF(missing);
    Py_INCREF(words);
    Py_INCREF(starts);
    s->data = data, s->cache = cache, s->plain = plain, s->missing = missing;
    s->words = words, s->starts_text = starts, s->starts = start_chars, s->nstarts = nstarts;
    yaml_parser_set_input_string(&s->parser, (const unsigned char *)PyBytes_AsString(data),
                                 (size_t)PyBytes_Size(data));
    return (PyObject *)s;
}

static PyMethodDef methods[] = {
    {"stream", new_stream, METH_VARARGS,
     "stream(data, cache, plain, missing, words, starts): the documents of `data`."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fastyaml", "libyaml events to plain Python values.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastyaml(void) {
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Fallback = PyErr_NewException("compiler._native._fastyaml.Fallback", NULL, NULL);
    StreamType = PyType_FromSpec(&stream_spec);
    if (Fallback == NULL || StreamType == NULL ||
        PyModule_AddObjectRef(module, "Fallback", Fallback) < 0 ||
        PyModule_AddObjectRef(module, "Stream", StreamType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
