/* The emitter's fast path (fastemit.c), registered as `emit` by fastyaml.c's module. */
#ifndef TJC_FASTEMIT_H
#define TJC_FASTEMIT_H
PyObject *fastemit_emit(PyObject *module, PyObject *args);
#endif
