package main

// One TrainJob with its runtimes, as a cluster running the oracle's Trainer release sees it:
// each runtime created (CRD create path, then the runtime webhook unless its objectSelector
// leaves the runtime out: release.go), the TrainJob created (CRD create path, then the
// TrainJob webhook's ValidateCreate), then the controller's reconcile: nothing for a TrainJob
// managed by another controller (release.go), else NewObjects of the runtime framework on a
// fake client built as upstream's TestTrainingRuntimeNewObjects builds it; then the API
// server's verdict on the Jobs and Pods of the JobSet built (pods.go).

import (
	"context"
	"encoding/json"
	"fmt"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobruntimes "github.com/kubeflow/trainer/v2/pkg/runtime"
	testingutil "github.com/kubeflow/trainer/v2/pkg/util/testing"
)

type admitted struct {
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Namespace string   `json:"namespace,omitempty"`
	Errors    []string `json:"errors,omitempty"`
}

type caseAnswer struct {
	Runtimes  []admitted `json:"runtimes"`
	TrainJob  admitted   `json:"trainjob"`
	ManagedBy string     `json:"managedBy,omitempty"`
	Outputs   [][]any    `json:"outputs,omitempty"`
	PodErrors []string   `json:"podErrors,omitempty"`
	Error     string     `json:"error,omitempty"`
}

func runCase(kinds map[string]*crdKind, req *request) any {
	ctx := context.Background()
	answer := caseAnswer{Runtimes: []admitted{}}
	var objects []client.Object
	for _, raw := range req.Runtimes {
		report, obj := admitRuntime(ctx, kinds, raw)
		answer.Runtimes = append(answer.Runtimes, report)
		if obj != nil {
			objects = append(objects, obj)
		}
	}
	var tj trainer.TrainJob
	answer.TrainJob = admitTrainJob(ctx, kinds, req.TrainJob, objects, &tj)
	if len(answer.TrainJob.Errors) > 0 {
		return answer
	}
	if managedExternally(&tj) {
		answer.ManagedBy = *tj.Spec.ManagedBy
		return answer
	}
	seen := map[string]bool{}
	for range max(req.Runs, 1) {
		objs, err := newObjects(ctx, objects, tj.DeepCopy())
		if err != nil {
			answer.Error = err.Error()
			answer.Outputs = nil
			return answer
		}
		key, _ := json.Marshal(objs)
		if !seen[string(key)] {
			seen[string(key)] = true
			answer.Outputs = append(answer.Outputs, objs)
		}
	}
	answer.PodErrors = jobSetPods(answer.Outputs[0])
	return answer
}

// decode reads a document as the API server does (JSON numbers that are integers stay int64).
func decode(raw json.RawMessage) (map[string]any, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

func typed(obj map[string]any, into any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

func messages(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func admitRuntime(ctx context.Context, kinds map[string]*crdKind, raw json.RawMessage) (admitted, client.Object) {
	obj, err := decode(raw)
	if err != nil {
		return admitted{Errors: []string{err.Error()}}, nil
	}
	kind, _ := obj["kind"].(string)
	k := kinds[kind]
	if k == nil || (kind != trainer.TrainingRuntimeKind && kind != trainer.ClusterTrainingRuntimeKind) {
		return admitted{Kind: kind, Errors: []string{"not a runtime kind"}}, nil
	}
	errs := k.admit(ctx, obj)
	report := admitted{Kind: kind}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		report.Name, _ = meta["name"].(string)
		report.Namespace, _ = meta["namespace"].(string)
	}
	if len(errs) > 0 {
		report.Errors = messages(errs)
		return report, nil
	}
	var webhookErr error
	var result client.Object
	if kind == trainer.TrainingRuntimeKind {
		rt := &trainer.TrainingRuntime{}
		if err := typed(obj, rt); err != nil {
			webhookErr = err
		} else if !webhookSkips(rt.Labels) {
			webhookErr = validateTrainingRuntime(ctx, rt)
		}
		result = rt
	} else {
		rt := &trainer.ClusterTrainingRuntime{}
		if err := typed(obj, rt); err != nil {
			webhookErr = err
		} else if !webhookSkips(rt.Labels) {
			webhookErr = validateClusterTrainingRuntime(ctx, rt)
		}
		result = rt
	}
	if webhookErr != nil {
		report.Errors = []string{"webhook: " + webhookErr.Error()}
		return report, nil
	}
	return report, result
}

func admitTrainJob(ctx context.Context, kinds map[string]*crdKind, raw json.RawMessage,
	runtimes []client.Object, tj *trainer.TrainJob) (report admitted) {
	report.Kind = trainer.TrainJobKind
	defer func() {
		if r := recover(); r != nil {
			report.Errors = append(report.Errors, fmt.Sprintf("webhook panic: %v", r))
		}
	}()
	obj, err := decode(raw)
	if err != nil {
		report.Errors = []string{err.Error()}
		return report
	}
	if errs := kinds[trainer.TrainJobKind].admit(ctx, obj); len(errs) > 0 {
		report.Errors = messages(errs)
		return report
	}
	if err := typed(obj, tj); err != nil {
		report.Errors = []string{err.Error()}
		return report
	}
	report.Name, report.Namespace = tj.Name, tj.Namespace
	// TrainJobValidator.ValidateCreate: the runtime registry entry, then its ValidateObjects.
	registry, _ := newRegistry(ctx, runtimes)
	rt, ok := registry[jobruntimes.RuntimeRefToRuntimeRegistryKey(tj.Spec.RuntimeRef)]
	if !ok {
		report.Errors = []string{"webhook: unsupported runtime"}
		return report
	}
	if _, errs := rt.ValidateObjects(ctx, nil, tj); len(errs) > 0 {
		report.Errors = messages(errs)
	}
	return report
}

func newRegistry(ctx context.Context, objects []client.Object) (map[string]jobruntimes.Runtime, client.Client) {
	builder := testingutil.NewClientBuilder()
	for _, obj := range objects {
		builder.WithObjects(obj.DeepCopyObject().(client.Object))
	}
	c := builder.Build()
	registry, err := newRuntimes(ctx, c, testingutil.AsIndex(builder))
	if err != nil {
		panic(err)
	}
	return registry, c
}

func newObjects(ctx context.Context, runtimes []client.Object, tj *trainer.TrainJob) (out []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	registry, _ := newRegistry(ctx, runtimes)
	rt, ok := registry[jobruntimes.RuntimeRefToRuntimeRegistryKey(tj.Spec.RuntimeRef)]
	if !ok {
		return nil, fmt.Errorf("unsupported runtime")
	}
	objs, err := rt.NewObjects(ctx, tj)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
