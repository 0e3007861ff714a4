package main

/*
#include <stdlib.h>
#include <stdint.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"unsafe"

	"cuelang.org/go/cue"
)

// batchItem is one document to check and the rules that apply to it.
type batchItem struct {
	Rules []string        `json:"rules"`
	Input json.RawMessage `json:"input"`
}

// ruleResult is either the violations a rule produced or why it failed.
type ruleResult struct {
	Violations json.RawMessage `json:"violations,omitempty"`
	Errors     []errorEntry    `json:"errors,omitempty"`
}

func decodeJSON(ctx *cue.Context, data []byte) (cue.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return cue.Value{}, err
	}
	v := ctx.Encode(numbers(x))
	return v, v.Err()
}

// numbers turns json.Number leaves into int64 (when integral) or float64, as CUE expects.
func numbers(x any) any {
	switch t := x.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, v := range t {
			t[k] = numbers(v)
		}
	case []any:
		for i, v := range t {
			t[i] = numbers(v)
		}
	}
	return x
}

func formatMsg(format string, args []any) string { return fmt.Sprintf(format, args...) }

// evalItem fills the pack's `input` with one document and reads the
// violations of each rule asked for.
func evalItem(pack cue.Value, item batchItem) map[string]ruleResult {
	out := make(map[string]ruleResult, len(item.Rules))
	doc, err := decodeJSON(pack.Context(), item.Input)
	if err != nil {
		for _, id := range item.Rules {
			out[id] = ruleResult{Errors: errorEntries(err)}
		}
		return out
	}
	filled := pack.FillPath(cue.MakePath(cue.Str("input")), doc)
	for _, id := range item.Rules {
		path := cue.MakePath(cue.Str("rules"), cue.Str(id), cue.Str("violations"))
		b, err := filled.LookupPath(path).MarshalJSON()
		if err != nil {
			out[id] = ruleResult{Errors: errorEntries(err)}
			continue
		}
		out[id] = ruleResult{Violations: b}
	}
	return out
}

//export tjc_eval_batch
func tjc_eval_batch(pack C.uintptr_t, data unsafe.Pointer, size C.size_t, workers C.int, out *unsafe.Pointer, n *C.size_t) C.uintptr_t {
	var items []batchItem
	if err := json.Unmarshal(C.GoBytes(data, C.int(size)), &items); err != nil {
		return errorHandle(err)
	}
	p := valueOf(pack)
	results := make([]map[string]ruleResult, len(items))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(1, int(workers)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = evalItem(p, items[i])
			}
		}()
	}
	for i := range items {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	b, err := json.Marshal(results)
	if err != nil {
		return errorHandle(err)
	}
	bytesOut(b, out, n)
	return 0
}
