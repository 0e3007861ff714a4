/* The loader's fast path: libyaml events straight to Python dicts, lists and scalars.
 *
 * compiler/io/fastload.py is its only user. It builds the same values as the loader's
 * PlainLoader (compiler/io/yamlread.py) for the YAML it understands, and gives up on anything
 * else: every tag, anchor and alias, a merge key (`<<`), complex or non-string keys,
 * duplicate keys, plain scalars the resolver cannot turn into a JSON value, a collection
 * nested more than `deepest` levels (the caller's bound, at most MAX_DEPTH), and every syntax
 * error. Giving up raises `Fallback`; the caller then loads the text with the
 * full loader, which reports what is wrong at its position. Plain scalars are resolved by
 * the caller's function (kubectl's rules live in Python, in one place) through its cache,
 * except a text that neither starts with one of the caller's `starts` nor is one of its
 * `words`: that is a string by those rules, and stays one here without a call.
 *
 * `stream` also appends where each document starts to the caller's `lines` list: its first
 * line (0-based) and that line's offset in the text (in characters, as libyaml's marks count).
 *
 * `positions` walks the same events for the loader's position tables (field path ->
 * (line, column) of where its value starts, the first occurrence of a path winning), as the
 * loader's walk of PyYAML's composed nodes makes them; it gives up on anchors and aliases
 * (the nodes an alias names are walked again there) and on every syntax error. With a
 * `wanted` function it makes the table only of the documents that function names, and None
 * for the others (whose events it still reads).
 *
 * The module also holds the emitter's fast path (`emit`, fastemit.c; compiler/io/emit.py).
 *
 * Built against the limited API (abi3) and linked with libyaml 0.2.5, the version PyYAML's
 * own C loader uses, so both paths read the same grammar.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <yaml.h>

#include "fastemit.h"

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
    Py_ssize_t max_depth, max_nodes; /* positions: where recording stops */
    Py_ssize_t deepest; /* values: give up on a collection nested deeper than this */
    PyObject *wanted;  /* positions: document index -> whether its table is made, or NULL */
    PyObject *lines;   /* values: each document's (first line, its offset) appended, or NULL */
    Py_ssize_t index;  /* the index of the next document */
    Py_ssize_t first_line; /* positions: the line the text starts at in its file (0-based) */
    int positions;     /* 1: the documents' position tables instead of their values */
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
        int merge = event.type == YAML_SCALAR_EVENT && event.data.scalar.plain_implicit &&
                    event.data.scalar.length == 2 &&
                    memcmp(event.data.scalar.value, "<<", 2) == 0; /* go-yaml's merge key */
        PyObject *key = event.type == YAML_SCALAR_EVENT && !merge ? scalar(s, &event)
                                                                  : give_up();
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
        if (event->data.mapping_start.anchor != NULL || event->data.mapping_start.tag != NULL ||
            depth >= s->deepest)
            return give_up();
        return mapping(s, depth);
    case YAML_SEQUENCE_START_EVENT:
        if (event->data.sequence_start.anchor != NULL ||
            event->data.sequence_start.tag != NULL || depth >= s->deepest)
            return give_up();
        return sequence(s, depth);
    default:
        return give_up();
    }
}

/* `path` + (item,), a new tuple. */
static PyObject *extended(PyObject *path, PyObject *item) {
    Py_ssize_t n = PyTuple_Size(path);
    PyObject *out = PyTuple_New(n + 1);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *part = PyTuple_GetItem(path, i);
        Py_INCREF(part);
        PyTuple_SetItem(out, i, part);
    }
    Py_INCREF(item);
    PyTuple_SetItem(out, n, item);
    return out;
}

static int walk(Stream *s, yaml_event_t *event, PyObject *table, PyObject *path, int depth,
                int record);

/* The items of a sequence (after its start event) at `path` + (index,). */
static int walk_items(Stream *s, PyObject *table, PyObject *path, int depth, int record) {
    for (Py_ssize_t i = 0;; i++) {
        yaml_event_t event;
        if (next_event(s, &event) < 0)
            return -1;
        if (event.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&event);
            return 0;
        }
        PyObject *sub = NULL;
        if (record) {
            PyObject *index = PyLong_FromSsize_t(i);
            sub = index == NULL ? NULL : extended(path, index);
            Py_XDECREF(index);
        }
        int rc = record && sub == NULL ? -1 : walk(s, &event, table, sub, depth + 1, record);
        Py_XDECREF(sub);
        yaml_event_delete(&event);
        if (rc < 0)
            return -1;
    }
}

/* The pairs of a mapping (after its start event): a value under a scalar key at `path` +
 * (key text,); under any other key, not recorded. */
static int walk_pairs(Stream *s, PyObject *table, PyObject *path, int depth, int record) {
    for (;;) {
        yaml_event_t event;
        if (next_event(s, &event) < 0)
            return -1;
        if (event.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&event);
            return 0;
        }
        int keyed = record && event.type == YAML_SCALAR_EVENT;
        PyObject *sub = NULL;
        if (keyed) {
            PyObject *key = PyUnicode_DecodeUTF8((const char *)event.data.scalar.value,
                                                 (Py_ssize_t)event.data.scalar.length, "strict");
            sub = key == NULL ? NULL : extended(path, key);
            Py_XDECREF(key);
        }
        int rc = keyed && sub == NULL ? -1 : walk(s, &event, table, NULL, depth + 1, 0);
        yaml_event_delete(&event);
        if (rc == 0 && next_event(s, &event) == 0) {
            rc = walk(s, &event, table, sub, depth + 1, keyed);
            yaml_event_delete(&event);
        } else {
            rc = -1;
        }
        Py_XDECREF(sub);
        if (rc < 0)
            return -1;
    }
}

/* Record where the node `event` starts at `path` (1-based line and column), unless the path
 * is known, or `depth` or the table's size is past its bound: then, as for `record` 0, its
 * events are only read. Anchors and aliases give up (the full path follows aliases). */
static int walk(Stream *s, yaml_event_t *event, PyObject *table, PyObject *path, int depth,
                int record) {
    const yaml_char_t *anchor = event->type == YAML_SCALAR_EVENT ? event->data.scalar.anchor
        : event->type == YAML_MAPPING_START_EVENT ? event->data.mapping_start.anchor
        : event->type == YAML_SEQUENCE_START_EVENT ? event->data.sequence_start.anchor : NULL;
    if (anchor != NULL || event->type == YAML_ALIAS_EVENT || depth > MAX_DEPTH) {
        give_up();
        return -1;
    }
    if (record) {
        int known = PyDict_Contains(table, path);
        if (known < 0)
            return -1;
        record = !known && depth <= s->max_depth && PyDict_Size(table) <= s->max_nodes;
    }
    if (record) {
        PyObject *where = Py_BuildValue("(nn)", (Py_ssize_t)event->start_mark.line + 1
                                                    + s->first_line,
                                        (Py_ssize_t)event->start_mark.column + 1);
        int failed = where == NULL || PyDict_SetItem(table, path, where) < 0;
        Py_XDECREF(where);
        if (failed)
            return -1;
    }
    switch (event->type) {
    case YAML_SCALAR_EVENT:
        return 0;
    case YAML_SEQUENCE_START_EVENT:
        return walk_items(s, table, path, depth, record);
    case YAML_MAPPING_START_EVENT:
        return walk_pairs(s, table, path, depth, record);
    default:
        give_up();
        return -1;
    }
}

/* The position table of the document whose root `event` starts. */
static PyObject *positions_of(Stream *s, yaml_event_t *event) {
    PyObject *table = PyDict_New();
    PyObject *root = PyTuple_New(0);
    if (table == NULL || root == NULL || walk(s, event, table, root, 0, 1) < 0) {
        Py_XDECREF(table);
        Py_XDECREF(root);
        return NULL;
    }
    Py_DECREF(root);
    return table;
}

/* The position table of the next document, or None when `wanted` says it is not wanted
 * (its events are read as for a table: an anchor or alias gives up there too). */
static PyObject *document_positions(Stream *s, yaml_event_t *event) {
    if (s->wanted != NULL) {
        PyObject *index = PyLong_FromSsize_t(s->index);
        PyObject *answer = index == NULL ? NULL
                                         : PyObject_CallFunctionObjArgs(s->wanted, index, NULL);
        Py_XDECREF(index);
        int wanted = answer == NULL ? -1 : PyObject_IsTrue(answer);
        Py_XDECREF(answer);
        if (wanted < 0)
            return NULL;
        if (!wanted) {
            if (walk(s, event, NULL, NULL, 0, 0) < 0)
                return NULL;
            Py_INCREF(Py_None);
            return Py_None;
        }
    }
    return positions_of(s, event);
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
    size_t line = event.start_mark.line;
    size_t offset = event.start_mark.index - event.start_mark.column;  /* the line's start */
    yaml_event_delete(&event);
    if (!document) {
        give_up();
        goto failed;
    }
    if (s->lines != NULL) {
        PyObject *start = Py_BuildValue("(nn)", (Py_ssize_t)line, (Py_ssize_t)offset);
        int failed = start == NULL || PyList_Append(s->lines, start) < 0;
        Py_XDECREF(start);
        if (failed)
            goto failed;
    }
    if (next_event(s, &event) < 0)
        goto failed;
    PyObject *value = s->positions ? document_positions(s, &event) : node(s, &event, 0);
    yaml_event_delete(&event);
    if (value == NULL)
        goto failed;
    if (expect(s, YAML_DOCUMENT_END_EVENT) < 0) {
        Py_DECREF(value);
        goto failed;
    }
    s->index++;
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
    Py_XDECREF(s->wanted);
    Py_XDECREF(s->lines);
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

/* A new stream over `data` (a bytes object, kept alive by the stream). */
static Stream *new_parser(PyObject *data) {
    Stream *s = (Stream *)PyType_GenericAlloc((PyTypeObject *)StreamType, 0);
    if (s == NULL)
        return NULL;
    if (!yaml_parser_initialize(&s->parser)) {
        Py_DECREF(s);
        PyErr_NoMemory();
        return NULL;
    }
    Py_INCREF(data);
    s->data = data;
    yaml_parser_set_input_string(&s->parser, (const unsigned char *)PyBytes_AsString(data),
                                 (size_t)PyBytes_Size(data));
    return s;
}

/* stream(data: bytes, cache: dict, plain: Callable[[str], Any], missing: object,
 *        words: frozenset[str], starts: str, deepest: int = MAX_DEPTH,
 *        lines: list | None = None) */
static PyObject *new_stream(PyObject *module, PyObject *args) {
    PyObject *data, *cache, *plain, *missing, *words, *starts, *lines = Py_None;
    Py_ssize_t deepest = MAX_DEPTH;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!OOO!U|nO", &PyBytes_Type, &data, &PyDict_Type, &cache,
                          &plain, &missing, &PyFrozenSet_Type, &words, &starts, &deepest,
                          &lines))
        return NULL;
    if (lines != Py_None && !PyList_Check(lines)) {
        PyErr_SetString(PyExc_TypeError, "lines must be a list or None");
        return NULL;
    }
    Py_ssize_t nstarts;
    const char *start_chars = PyUnicode_AsUTF8AndSize(starts, &nstarts);
    Stream *s = start_chars == NULL ? NULL : new_parser(data);
    if (s == NULL)
        return NULL;
    Py_INCREF(cache);
    Py_INCREF(plain);
    Py_INCREF(missing);
    Py_INCREF(words);
    Py_INCREF(starts);
    s->cache = cache, s->plain = plain, s->missing = missing;
    s->words = words, s->starts_text = starts, s->starts = start_chars, s->nstarts = nstarts;
    s->deepest = deepest > 0 && deepest < MAX_DEPTH ? deepest : MAX_DEPTH; /* 0: the bound */
    if (lines != Py_None) {
        Py_INCREF(lines);
        s->lines = lines;
    }
    return (PyObject *)s;
}

/* positions(data: bytes, max_depth: int, max_nodes: int,
 *           wanted: Callable[[int], bool] | None = None, first_line: int = 0) */
static PyObject *new_positions(PyObject *module, PyObject *args) {
    PyObject *data, *wanted = Py_None;
    Py_ssize_t max_depth, max_nodes, first_line = 0;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!nn|On", &PyBytes_Type, &data, &max_depth, &max_nodes,
                          &wanted, &first_line))
        return NULL;
    Stream *s = new_parser(data);
    if (s == NULL)
        return NULL;
    s->positions = 1, s->max_depth = max_depth, s->max_nodes = max_nodes;
    s->first_line = first_line;
    if (wanted != Py_None) {
        Py_INCREF(wanted);
        s->wanted = wanted;
    }
    return (PyObject *)s;
}

static PyMethodDef methods[] = {
    {"stream", new_stream, METH_VARARGS,
     "stream(data, cache, plain, missing, words, starts, deepest=512, lines=None)."},
    {"positions", new_positions, METH_VARARGS,
     "positions(data, max_depth, max_nodes, wanted=None, first_line=0): each document's "
     "table, or None."},
    {"emit", fastemit_emit, METH_VARARGS,
     "emit(obj, texts, max_texts, scalar_string, scalar, plain): a dict as one YAML "
     "document."},
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
