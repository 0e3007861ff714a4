package main

/*
#include <stdlib.h>
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// node is one syntax node as the policy compiler reads it: its type, its position and the
// parts that type has. A node the compiler does not read is {"t": "Unsupported"}, so that
// whatever contains it is left to the evaluator.
type node map[string]any

func at(t string, n ast.Node) node {
	pos := n.Pos()
	return node{"t": t, "line": pos.Line(), "col": pos.Column()}
}

func unsupported(n ast.Node) node {
	out := at("Unsupported", n)
	out["go"] = fmt.Sprintf("%T", n)
	return out
}

func syntaxList[T ast.Node](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = syntaxOf(x)
	}
	return out
}

// syntaxOf is the node as JSON data (nil for a nil node).
func syntaxOf(n ast.Node) any {
	switch x := n.(type) {
	case nil:
		return nil
	case *ast.File:
		out := at("File", x)
		out["decls"] = syntaxList(x.Decls)
		return out
	case *ast.Package:
		return at("Package", x)
	case *ast.ImportDecl:
		out := at("Imports", x)
		out["specs"] = syntaxList(x.Specs)
		return out
	case *ast.ImportSpec:
		return importSpec(x)
	case *ast.Field:
		return field(x)
	case *ast.Ident:
		if x == nil {
			return nil
		}
		out := at("Ident", x)
		out["name"] = x.Name
		return out
	case *ast.BasicLit:
		return basicLit(x)
	case *ast.Interpolation:
		return interpolation(x)
	case *ast.StructLit:
		out := at("Struct", x)
		out["elts"] = syntaxList(x.Elts)
		return out
	case *ast.ListLit:
		out := at("List", x)
		out["elts"] = syntaxList(x.Elts)
		return out
	case *ast.Ellipsis:
		out := at("Ellipsis", x)
		out["type"] = syntaxOf(x.Type)
		return out
	case *ast.EmbedDecl:
		out := at("Embed", x)
		out["expr"] = syntaxOf(x.Expr)
		return out
	case *ast.LetClause:
		out := at("Let", x)
		out["name"], out["expr"] = x.Ident.Name, syntaxOf(x.Expr)
		return out
	case *ast.Comprehension:
		out := at("Comprehension", x)
		out["clauses"], out["value"] = syntaxList(x.Clauses), syntaxOf(x.Value)
		return out
	case *ast.ForClause:
		out := at("For", x)
		out["key"], out["value"], out["source"] = syntaxOf(x.Key), syntaxOf(x.Value), syntaxOf(x.Source)
		return out
	case *ast.IfClause:
		out := at("If", x)
		out["cond"] = syntaxOf(x.Condition)
		return out
	case *ast.SelectorExpr:
		out := at("Select", x)
		name, isIdent, err := ast.LabelName(x.Sel)
		if err != nil || !isIdent && strings.HasPrefix(name, "_") {
			return unsupported(x)
		}
		out["x"], out["sel"] = syntaxOf(x.X), name
		return out
	case *ast.IndexExpr:
		out := at("Index", x)
		out["x"], out["index"] = syntaxOf(x.X), syntaxOf(x.Index)
		return out
	case *ast.CallExpr:
		out := at("Call", x)
		out["fun"], out["args"] = syntaxOf(x.Fun), syntaxList(x.Args)
		return out
	case *ast.UnaryExpr:
		out := at("Unary", x)
		out["op"], out["x"] = x.Op.String(), syntaxOf(x.X)
		return out
	case *ast.BinaryExpr:
		out := at("Binary", x)
		out["op"], out["x"], out["y"] = x.Op.String(), syntaxOf(x.X), syntaxOf(x.Y)
		return out
	case *ast.ParenExpr:
		out := at("Paren", x)
		out["x"] = syntaxOf(x.X)
		return out
	case *ast.BottomLit:
		return at("Bottom", x)
	}
	return unsupported(n)
}

func importSpec(x *ast.ImportSpec) any {
	out := at("Import", x)
	path, err := literal.Unquote(x.Path.Value)
	if err != nil {
		return unsupported(x)
	}
	out["path"] = path
	if x.Name != nil {
		out["name"] = x.Name.Name
	}
	return out
}

// field is a field with its label: an identifier (referable by name) or a quoted string;
// any other label (a pattern, an alias, an interpolation) is unsupported.
func field(x *ast.Field) any {
	out := at("Field", x)
	switch l := x.Label.(type) {
	case *ast.Ident:
		out["label"], out["ident"] = l.Name, true
	case *ast.BasicLit:
		name, err := literal.Unquote(l.Value)
		if l.Kind != token.STRING || err != nil {
			return unsupported(x)
		}
		out["label"], out["ident"] = name, false
	default:
		return unsupported(x)
	}
	out["constraint"] = ""
	if x.Constraint != token.ILLEGAL {
		out["constraint"] = x.Constraint.String()
	}
	out["value"] = syntaxOf(x.Value)
	return out
}

func basicLit(x *ast.BasicLit) any {
	out := at("Lit", x)
	switch x.Kind {
	case token.STRING:
		s, err := literal.Unquote(x.Value)
		if err != nil || strings.HasPrefix(x.Value, "'") {
			return unsupported(x) // (bytes)
		}
		out["kind"], out["value"] = "string", s
	case token.INT, token.FLOAT:
		var info literal.NumInfo
		if err := literal.ParseNum(x.Value, &info); err != nil || !info.IsInt() {
			return unsupported(x)
		}
		out["kind"], out["value"] = "int", info.String()
	case token.TRUE, token.FALSE:
		out["kind"], out["value"] = "bool", x.Kind == token.TRUE
	case token.NULL:
		out["kind"] = "null"
	default:
		return unsupported(x)
	}
	return out
}

// interpolation is a single-line "..." string with its text parts unquoted:
// {"parts": [text, expr, text, expr, ..., text]}.
func interpolation(x *ast.Interpolation) any {
	n := len(x.Elts)
	out := at("Interpolation", x)
	parts := make([]any, n)
	for i, e := range x.Elts {
		if i%2 == 1 {
			parts[i] = syntaxOf(e)
			continue
		}
		lit, ok := e.(*ast.BasicLit)
		if !ok || !strings.HasPrefix(x.Elts[0].(*ast.BasicLit).Value, "\"") ||
			strings.HasPrefix(x.Elts[0].(*ast.BasicLit).Value, "\"\"\"") {
			return unsupported(x)
		}
		s := lit.Value[1:] // the opening quote, or the ')' that closes an expression
		if i < n-1 {
			s = strings.TrimSuffix(s, "\\(")
		} else {
			s = strings.TrimSuffix(s, "\"")
		}
		text, err := literal.Unquote("\"" + s + "\"")
		if err != nil {
			return unsupported(x)
		}
		parts[i] = text
	}
	out["parts"] = parts
	return out
}

//export tjc_pack_syntax
func tjc_pack_syntax(data unsafe.Pointer, size C.size_t, filename *C.char, out *unsafe.Pointer, n *C.size_t) C.uintptr_t {
	f, err := parser.ParseFile(C.GoString(filename), C.GoBytes(data, C.int(size)))
	if err != nil {
		return errorHandle(err)
	}
	b, err := json.Marshal(syntaxOf(f))
	if err != nil {
		return errorHandle(err)
	}
	bytesOut(b, out, n)
	return 0
}
