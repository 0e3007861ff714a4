// Command oracle answers, one JSON request per stdin line, what Kubeflow Trainer (the release
// go.mod pins: v2.3.0 here, another served release with releases/<version>/go.mod),
// k8s.io/apimachinery, k8s.io/client-go, kube-apiserver's Job and Pod validation
// (k8s.io/kubernetes) and the Pod Security Standards (k8s.io/pod-security-admission) do with
// an input: the test oracle of trainjob-compiler's parity tests
// (and of the controller's kubeconfig reading).
//
//	oracle -crds DIR < requests.jsonl > answers.jsonl
//
// Requests (field "op"):
//
//	case      {"runtimes": [...], "trainjob": {...}, "runs": N}: the API server's create path
//	          (CRD schema, CEL, ObjectMeta) and the admission webhooks for every runtime, then the
//	          TrainJob; when all is admitted, the objects NewObjects returns, run N times (distinct
//	          outputs only: upstream ranges over Go maps), and podErrors: what the API server
//	          says of the Jobs and Pods the first output's JobSet becomes (pods.go).
//	yaml      {"text": "..."}: the JSON sigs.k8s.io/yaml makes of a YAML document.
//	kubectl   {"text": "..."}: the documents kubectl reads from a file holding the text (cut
//	          at its `---` lines, each through sigs.k8s.io/yaml), as JSON, and its error if any.
//	quantity  {"text": "..."}: a JSON string or number through resource.Quantity's JSON coding.
//	smp       {"original": {...}, "patch": {...}}: strategicpatch.StrategicMergePatch on a
//	          JobSetSpec.
//	job       {"spec": {...}, "name": "..."}: a replicated job's Job spec as the API server
//	          (k8s.io/kubernetes) creates it after JobSet's defaults, then its first Pod: the
//	          field errors of each (pods.go).
//	kubeconfig {"path": "..."}: what k8s.io/client-go makes of a kubeconfig file (clientcmd's
//	          loading and validation, the HTTP client, a request that is never dialled): ok
//	          with the effective insecure and token-present flags, or the error.
//	modules   {}: the versions of the modules the binary is built from (Trainer, JobSet,
//	          k8s.io/api, k8s.io/kubernetes, controller-runtime).
//	pss       {"pods": [{"metadata": {...}, "spec": {...}}, ...], "levels": ["baseline",
//	          "restricted"], "raw": false}: k8s.io/pod-security-admission's verdict on each
//	          pod (as the API server stores it, unless raw) at each level, version latest:
//	          the checks evaluated and the failed ones by check id (pss.go).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

type request struct {
	Op       string            `json:"op"`
	Runtimes []json.RawMessage `json:"runtimes"`
	TrainJob json.RawMessage   `json:"trainjob"`
	Runs     int               `json:"runs"`
	Text     string            `json:"text"`
	Original json.RawMessage   `json:"original"`
	Patch    json.RawMessage   `json:"patch"`
	Path     string            `json:"path"`
	Spec     json.RawMessage   `json:"spec"`
	Name     string            `json:"name"`
	Pods     []json.RawMessage `json:"pods"`
	Levels   []string          `json:"levels"`
	Raw      bool              `json:"raw"`
}

func main() {
	crdDir := flag.String("crds", "", "folder of the Trainer CRDs (YAML)")
	flag.Parse()
	kinds, err := loadCRDs(*crdDir)
	if err != nil || len(kinds) == 0 {
		fmt.Fprintf(os.Stderr, "oracle: loading CRDs from %q: %v\n", *crdDir, err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var req request
		var answer any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			answer = map[string]string{"fatal": err.Error()}
		} else {
			answer = serve(kinds, &req)
		}
		if err := enc.Encode(answer); err != nil {
			fmt.Fprintf(os.Stderr, "oracle: %v\n", err)
			os.Exit(1)
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
}

func serve(kinds map[string]*crdKind, req *request) any {
	switch req.Op {
	case "case":
		return runCase(kinds, req)
	case "yaml":
		return yamlToJSON(req.Text)
	case "kubectl":
		return kubectlStream(req.Text)
	case "quantity":
		return quantity(req.Text)
	case "smp":
		return smp(req.Original, req.Patch)
	case "job":
		return jobTemplate(req.Spec, req.Name)
	case "kubeconfig":
		return kubeconfig(req.Path)
	case "modules":
		return modules()
	case "pss":
		return podSecurity(req.Pods, req.Levels, req.Raw)
	}
	return map[string]string{"fatal": "unknown op " + req.Op}
}

// modules answers the op "modules": module path -> version, for the modules that make a
// release's behaviour.
func modules() map[string]string {
	out := map[string]string{}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, dep := range info.Deps {
		switch dep.Path {
		case "github.com/kubeflow/trainer/v2", "sigs.k8s.io/jobset", "k8s.io/api",
			"k8s.io/kubernetes", "sigs.k8s.io/controller-runtime":
			version := dep.Version
			if dep.Replace != nil {
				version = dep.Replace.Version
			}
			out[dep.Path] = version
		}
	}
	return out
}
