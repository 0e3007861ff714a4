package main

// What kube-apiserver (k8s.io/kubernetes at the version go.mod pins) makes of the Jobs and Pods
// a JobSet's replicated job becomes. The Job template first gets what JobSet adds (its webhook's
// defaults: Indexed completion, restartPolicy OnFailure; its controller's Job name, labels,
// annotations, pod subdomain and, from JobSet v0.11, the volumes of its volumeClaimPolicies:
// release.go); then the Job goes through the API server's create path (v1
// defaulting, conversion to the internal type, the Job strategy's BeforeCreate: batch and core
// validation). When the Job is accepted, the first Pod the Job controller would create from its
// template goes through the Pod create path the same way.

import (
	"context"
	"encoding/json"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/capabilities"
	jobregistry "k8s.io/kubernetes/pkg/registry/batch/job"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/utils/ptr"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

const podNamespace = "default"

func init() {
	// Clusters run kube-apiserver with --allow-privileged=true (kubeadm, kind and the
	// managed offerings do); without it every privileged container would be refused.
	capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true})
}

// fieldError is one error of the API server's field validation.
type fieldError struct {
	Field  string `json:"field"`
	Type   string `json:"type"`
	Detail string `json:"detail"`
}

type jobAnswer struct {
	Job   []fieldError `json:"job"`
	Pod   []fieldError `json:"pod"`
	Error string       `json:"error,omitempty"`
}

// jobTemplate answers the op "job": `spec` is a replicated job's `template.spec` (a batch/v1
// JobSpec as a JobSet holds it), `name` the Job's name (default "trainjob-node-0").
func jobTemplate(raw json.RawMessage, name string) jobAnswer {
	var spec batchv1.JobSpec
	if err := utiljson.Unmarshal(raw, &spec); err != nil {
		return jobAnswer{Error: err.Error()}
	}
	if name == "" {
		name = "trainjob-node-0"
	}
	// JobSet labels every Job it makes, so the v1 defaults never copy the template's labels
	labels := map[string]string{jobset.JobSetNameKey: "trainjob"}
	meta := metav1.ObjectMeta{Name: name, Labels: labels}
	return validateJob(batchv1.Job{ObjectMeta: meta, Spec: spec}, "")
}

// validateJob gives JobSet's defaults to the Job, then creates it and its first Pod.
func validateJob(job batchv1.Job, subdomain string) (answer jobAnswer) {
	defer func() {
		if r := recover(); r != nil {
			answer = jobAnswer{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	job.Namespace = podNamespace
	if job.Spec.CompletionMode == nil {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	if job.Spec.Template.Spec.RestartPolicy == "" {
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	if subdomain != "" {
		job.Spec.Template.Spec.Subdomain = subdomain
	}
	defaulted := job.DeepCopy()
	answer.Job = create(jobregistry.Strategy, defaulted, &batch.Job{})
	if len(answer.Job) > 0 {
		return answer
	}
	answer.Pod = create(podregistry.Strategy, firstPod(defaulted), &core.Pod{})
	return answer
}

// firstPod is the Pod the Job controller makes for completion index 0: the template's labels,
// annotations and spec, and an Indexed Job's hostname.
func firstPod(job *batchv1.Job) *corev1.Pod {
	tpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			// the name the API server generates from the Job controller's generateName
			GenerateName: job.Name + "-0-", Name: job.Name + "-0-abcde", Namespace: podNamespace,
			Labels: tpl.Labels, Annotations: tpl.Annotations,
		},
		Spec: tpl.Spec,
	}
	if ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion &&
		pod.Spec.Hostname == "" {
		pod.Spec.Hostname = job.Name + "-0"
	}
	return pod
}

// create is the API server's create path for a typed v1 object: defaulting, conversion to the
// internal type `into`, the system metadata, then rest.BeforeCreate (PrepareForCreate, the
// generated name, Validate).
func create(strategy rest.RESTCreateStrategy, obj runtime.Object, into runtime.Object) []fieldError {
	legacyscheme.Scheme.Default(obj)
	if err := legacyscheme.Scheme.Convert(obj, into, nil); err != nil {
		return []fieldError{{Type: "Conversion", Detail: err.Error()}}
	}
	accessor, err := meta.Accessor(into)
	if err != nil {
		return []fieldError{{Type: "Error", Detail: err.Error()}}
	}
	rest.FillObjectMetaSystemFields(accessor) // as the generic registry store does first
	ctx := genericapirequest.WithNamespace(context.Background(), podNamespace)
	err = rest.BeforeCreate(strategy, ctx, into)
	if err == nil {
		return []fieldError{}
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return []fieldError{{Type: "Error", Detail: err.Error()}}
	}
	out := []fieldError{}
	for _, cause := range status.Status().Details.Causes {
		out = append(out, fieldError{Field: cause.Field, Type: string(cause.Type), Detail: cause.Message})
	}
	return out
}

// jobSetPods validates every replicated job of every JobSet among `objects` (NewObjects'
// output) as JobSet's controller would create its first Job: each error as text.
func jobSetPods(objects []any) []string {
	out := []string{}
	for _, obj := range objects {
		m, ok := obj.(map[string]any)
		if !ok || m["kind"] != "JobSet" {
			continue
		}
		data, _ := json.Marshal(m)
		var js jobset.JobSet
		if err := utiljson.Unmarshal(data, &js); err != nil {
			out = append(out, "decoding the JobSet: "+err.Error())
			continue
		}
		subdomain := ""
		if js.Spec.Network == nil || ptr.Deref(js.Spec.Network.EnableDNSHostnames, true) {
			subdomain = js.Name
			if js.Spec.Network != nil && js.Spec.Network.Subdomain != "" {
				subdomain = js.Spec.Network.Subdomain
			}
		}
		for _, rjob := range js.Spec.ReplicatedJobs {
			job := batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{
					Name:   fmt.Sprintf("%s-%s-0", js.Name, rjob.Name),
					Labels: rjob.Template.Labels, Annotations: rjob.Template.Annotations,
				},
				Spec: *rjob.Template.Spec.DeepCopy(),
			}
			addClaimVolumes(&job, &js)
			answer := validateJob(job, subdomain)
			if answer.Error != "" {
				out = append(out, rjob.Name+": "+answer.Error)
			}
			for _, e := range append(answer.Job, answer.Pod...) {
				out = append(out, fmt.Sprintf("%s: %s: %s", rjob.Name, e.Field, e.Detail))
			}
		}
	}
	return out
}
