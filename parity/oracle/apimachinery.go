package main

// kubectl's YAML reading (sigs.k8s.io/yaml), quantities and strategic merge patch, as
// k8s.io/apimachinery does them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
)

type textAnswer struct {
	JSON  json.RawMessage `json:"json,omitempty"`
	Value string          `json:"value,omitempty"`
	Error string          `json:"error,omitempty"`
}

// yamlToJSON is what kubectl sends for a YAML document: sigs.k8s.io/yaml's YAMLToJSON.
func yamlToJSON(text string) textAnswer {
	data, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return textAnswer{Error: err.Error()}
	}
	return textAnswer{JSON: data}
}

// streamAnswer is the documents kubectl reads from a stream, as JSON, up to its error if any.
type streamAnswer struct {
	Documents []json.RawMessage `json:"documents"`
	Error     string            `json:"error,omitempty"`
}

// kubectlStream is what kubectl reads from a file or stdin: apimachinery's YAMLOrJSONDecoder
// (a YAML stream cut at its `---` lines, each part through sigs.k8s.io/yaml), as
// k8s.io/cli-runtime's StreamVisitor uses it (empty and null documents passed over).
func kubectlStream(text string) streamAnswer {
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	answer := streamAnswer{Documents: []json.RawMessage{}}
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			if !errors.Is(err, io.EOF) {
				answer.Error = err.Error()
			}
			return answer
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) != 0 && !bytes.Equal(raw, []byte("null")) {
			answer.Documents = append(answer.Documents, raw)
		}
	}
}

// quantity takes a JSON value (a string or a number, as a manifest may hold either) through
// resource.Quantity's JSON decoding and encoding, the way every quantity reaches a JobSet.
func quantity(text string) textAnswer {
	var q resource.Quantity
	if err := json.Unmarshal([]byte(text), &q); err != nil {
		return textAnswer{Error: err.Error()}
	}
	data, err := json.Marshal(q)
	if err != nil {
		return textAnswer{Error: err.Error()}
	}
	return textAnswer{JSON: data}
}

func smp(original, patch json.RawMessage) (answer textAnswer) {
	defer func() {
		if r := recover(); r != nil {
			answer = textAnswer{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	merged, err := strategicpatch.StrategicMergePatch(original, patch, jobsetv1alpha2.JobSetSpec{})
	if err != nil {
		return textAnswer{Error: err.Error()}
	}
	return textAnswer{JSON: merged}
}
