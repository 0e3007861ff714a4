package main

/*
#include <stdlib.h>
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"strconv"
	"unsafe"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// readPath is a path inside `input`; a nil segment stands for any key or element.
type readPath []*string

// readSet finds every part of `input` a policy file can read: each reference chain that
// starts at `input` (or at a `for`/`let` name bound to such a chain) is a path whose whole
// subtree is read. Data outside those paths cannot change what the file computes, so the
// engine may drop it before evaluation and reuse results for equal remainders. The analysis
// over-approximates: names are matched without scoping, and any use it does not follow
// (a parenthesised `input`, a value passed on whole) keeps the whole subtree.
type readSet struct {
	aliases map[string][]readPath
	paths   []readPath // whole subtrees read
	shapes  []readPath // iterated over: the keys and elements matter, not their content
}

func wildcard(p readPath) readPath { return append(append(readPath{}, p...), nil) }

// chain returns the root identifier of a selector/index chain and its segments.
func chain(e ast.Expr) (*ast.Ident, []*string, []ast.Expr) {
	var segs []*string
	var indexes []ast.Expr
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x, segs, indexes
		case *ast.SelectorExpr:
			name, _, err := ast.LabelName(x.Sel)
			if err != nil {
				segs = append([]*string{nil}, segs...)
			} else {
				segs = append([]*string{&name}, segs...)
			}
			e = x.X
		case *ast.IndexExpr:
			indexes = append(indexes, x.Index)
			segs = append([]*string{literalKey(x.Index)}, segs...)
			e = x.X
		default:
			return nil, nil, nil
		}
	}
}

func literalKey(e ast.Expr) *string {
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		return nil
	}
	switch lit.Kind {
	case token.STRING:
		if s, err := strconv.Unquote(lit.Value); err == nil {
			return &s
		}
	case token.INT:
		return &lit.Value
	}
	return nil
}

// roots are the input paths a chain's root identifier stands for (none if unrelated).
func (r *readSet) roots(id *ast.Ident) []readPath {
	if id.Name == "input" {
		return []readPath{{}}
	}
	return r.aliases[id.Name]
}

func (r *readSet) resolve(e ast.Expr) []readPath {
	id, segs, _ := chain(e)
	if id == nil {
		return nil
	}
	var out []readPath
	for _, root := range r.roots(id) {
		out = append(out, append(append(readPath{}, root...), segs...))
	}
	return out
}

func (r *readSet) bind(name string, paths []readPath) bool {
	if len(paths) == 0 || name == "_" {
		return false
	}
	known := r.aliases[name]
	changed := false
	for _, p := range paths {
		key := pathKey(p)
		dup := false
		for _, k := range known {
			dup = dup || pathKey(k) == key
		}
		if !dup {
			known, changed = append(known, p), true
		}
	}
	r.aliases[name] = known
	return changed
}

func pathKey(p readPath) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// collectAliases binds `for` values and `let` names to the input paths they stand for,
// until nothing changes (an alias may be defined from another).
func (r *readSet) collectAliases(f *ast.File) {
	for changed := true; changed; {
		changed = false
		ast.Walk(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ForClause:
				var paths []readPath
				for _, p := range r.resolve(x.Source) {
					paths = append(paths, wildcard(p))
				}
				if x.Value != nil {
					changed = r.bind(x.Value.Name, paths) || changed
				}
			case *ast.LetClause:
				changed = r.bind(x.Ident.Name, r.resolve(x.Expr)) || changed
			}
			return true
		}, nil)
	}
}

func (r *readSet) visit(n ast.Node) { ast.Walk(n, r.before, nil) }

// visitIndexes visits the index expressions of a chain (they are reads of their own).
func (r *readSet) visitIndexes(e ast.Expr) {
	_, _, indexes := chain(e)
	for _, ix := range indexes {
		r.visit(ix)
	}
}

// record notes the paths of a chain rooted in input; false when it is not.
func (r *readSet) record(e ast.Expr, into *[]readPath, suffix bool) bool {
	paths := r.resolve(e)
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if suffix {
			p = wildcard(p)
		}
		*into = append(*into, p)
	}
	r.visitIndexes(e)
	return true
}

func plainLabel(l ast.Label) bool {
	switch l.(type) {
	case *ast.Ident, *ast.BasicLit:
		return true
	}
	return false
}

func (r *readSet) before(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.Field:
		if !plainLabel(x.Label) {
			return true
		}
		r.visit(x.Value)
	case *ast.ForClause:
		if !r.record(x.Source, &r.shapes, true) {
			r.visit(x.Source)
		}
	case *ast.LetClause:
		if len(r.resolve(x.Expr)) > 0 {
			r.visitIndexes(x.Expr)
		} else {
			r.visit(x.Expr)
		}
	case *ast.SelectorExpr:
		if !r.record(x, &r.paths, false) {
			r.visit(x.X)
		}
	case *ast.IndexExpr:
		if !r.record(x, &r.paths, false) {
			r.visit(x.X)
			r.visit(x.Index)
		}
	case *ast.Ident:
		r.record(x, &r.paths, false)
	default:
		return true
	}
	return false
}

//export tjc_input_reads
func tjc_input_reads(data unsafe.Pointer, size C.size_t, filename *C.char, out *unsafe.Pointer, n *C.size_t) C.uintptr_t {
	f, err := parser.ParseFile(C.GoString(filename), C.GoBytes(data, C.int(size)))
	if err != nil {
		return errorHandle(err)
	}
	r := &readSet{aliases: map[string][]readPath{}}
	r.collectAliases(f)
	r.visit(f)
	b, _ := json.Marshal(map[string][]readPath{"paths": r.paths, "shapes": r.shapes})
	bytesOut(b, out, n)
	return 0
}
