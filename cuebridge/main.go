// Command cuebridge is built with -buildmode=c-shared into libtjccue: a C
// interface to the official CUE evaluator (cuelang.org/go) with the shape of
// libcue (handles for contexts, values and errors; compile, unify, lookup,
// validate, JSON out), plus one batch call that evaluates a policy pack over
// many documents at once so that Python crosses the boundary once per batch.
//
// Every handle is a runtime/cgo.Handle; the caller frees it with cue_free.
// Strings and byte buffers returned to the caller are malloc'ed and freed
// with libc_free.
package main

/*
#include <stdlib.h>
#include <stdint.h>
#include <stdbool.h>
*/
import "C"

import (
	"encoding/json"
	"runtime/cgo"
	"unsafe"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

func main() {}

func handleOf(v any) C.uintptr_t { return C.uintptr_t(cgo.NewHandle(v)) }

func ctxOf(h C.uintptr_t) *cue.Context { return cgo.Handle(h).Value().(*cue.Context) }

func valueOf(h C.uintptr_t) cue.Value { return cgo.Handle(h).Value().(cue.Value) }

// errorHandle wraps err in a handle, or returns 0 when err is nil.
func errorHandle(err error) C.uintptr_t {
	if err == nil {
		return 0
	}
	return handleOf(err)
}

// bytesOut copies b into C memory owned by the caller.
func bytesOut(b []byte, out *unsafe.Pointer, n *C.size_t) {
	*out = C.CBytes(b)
	*n = C.size_t(len(b))
}

//export cue_newctx
func cue_newctx() C.uintptr_t { return handleOf(cuecontext.New()) }

//export cue_free
func cue_free(h C.uintptr_t) {
	if h != 0 {
		cgo.Handle(h).Delete()
	}
}

//export libc_free
func libc_free(p unsafe.Pointer) { C.free(p) }

// errorEntry is one error of a CUE error list with its position.
type errorEntry struct {
	Message string   `json:"message"`
	File    string   `json:"file,omitempty"`
	Line    int      `json:"line,omitempty"`
	Column  int      `json:"column,omitempty"`
	Path    []string `json:"path,omitempty"`
	// Every position the error involves, its own first.
	Positions []errorPos `json:"positions,omitempty"`
}

type errorPos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func errorEntries(err error) []errorEntry {
	var entries []errorEntry
	for _, e := range errors.Errors(err) {
		format, args := e.Msg()
		entry := errorEntry{Message: formatMsg(format, args), Path: e.Path()}
		pos := e.Position()
		if inputs := e.InputPositions(); !pos.IsValid() && len(inputs) > 0 {
			pos = inputs[0]
		}
		if pos.IsValid() {
			entry.File, entry.Line, entry.Column = pos.Filename(), pos.Line(), pos.Column()
		}
		for _, p := range append([]token.Pos{e.Position()}, e.InputPositions()...) {
			if p.IsValid() {
				entry.Positions = append(entry.Positions, errorPos{p.Filename(), p.Line(), p.Column()})
			}
		}
		entries = append(entries, entry)
	}
	return entries
}

//export cue_error_json
func cue_error_json(h C.uintptr_t, out *unsafe.Pointer, n *C.size_t) {
	b, _ := json.Marshal(errorEntries(cgo.Handle(h).Value().(error)))
	bytesOut(b, out, n)
}

//export cue_compile_bytes
func cue_compile_bytes(ctx C.uintptr_t, data unsafe.Pointer, size C.size_t, filename *C.char, out *C.uintptr_t) C.uintptr_t {
	src := C.GoBytes(data, C.int(size))
	opts := []cue.BuildOption{cue.InferBuiltins(true)}
	if filename != nil {
		opts = append(opts, cue.Filename(C.GoString(filename)))
	}
	v := ctxOf(ctx).CompileBytes(src, opts...)
	if err := v.Err(); err != nil {
		return errorHandle(err)
	}
	*out = handleOf(v)
	return 0
}

//export cue_unify
func cue_unify(a, b C.uintptr_t) C.uintptr_t { return handleOf(valueOf(a).Unify(valueOf(b))) }

//export cue_lookup_string
func cue_lookup_string(v C.uintptr_t, path *C.char, out *C.uintptr_t) C.uintptr_t {
	found := valueOf(v).LookupPath(cue.ParsePath(C.GoString(path)))
	if err := found.Err(); err != nil {
		return errorHandle(err)
	}
	if !found.Exists() {
		return errorHandle(errors.Newf(valueOf(v).Pos(), "field not found: %s", C.GoString(path)))
	}
	*out = handleOf(found)
	return 0
}

//export cue_fill_json
func cue_fill_json(v C.uintptr_t, path *C.char, data unsafe.Pointer, size C.size_t, out *C.uintptr_t) C.uintptr_t {
	base := valueOf(v)
	x, err := decodeJSON(base.Context(), C.GoBytes(data, C.int(size)))
	if err != nil {
		return errorHandle(err)
	}
	*out = handleOf(base.FillPath(cue.ParsePath(C.GoString(path)), x))
	return 0
}

//export cue_validate
func cue_validate(v C.uintptr_t, concrete C.bool) C.uintptr_t {
	return errorHandle(valueOf(v).Validate(cue.Concrete(bool(concrete))))
}

//export cue_dec_json
func cue_dec_json(v C.uintptr_t, out *unsafe.Pointer, n *C.size_t) C.uintptr_t {
	b, err := valueOf(v).MarshalJSON()
	if err != nil {
		return errorHandle(err)
	}
	bytesOut(b, out, n)
	return 0
}
