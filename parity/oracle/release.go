package main

// What differs in Kubeflow Trainer's Go API between releases, for the release this folder's
// go.mod pins (v2.3.0). Every other served release has its own copy of this file beside its
// go.mod in releases/<version>/ (build.sh builds the rest of this folder's sources with it):
// the shared sources call only these functions.

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobruntimes "github.com/kubeflow/trainer/v2/pkg/runtime"
	"github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

// newRuntimes is the runtime registry the manager builds (core.New; v2.2 added the config).
func newRuntimes(ctx context.Context, c client.Client, indexer client.FieldIndexer) (map[string]jobruntimes.Runtime, error) {
	return core.New(ctx, c, indexer, nil)
}

// webhookSkips says whether the validating webhook passes a runtime with these labels over:
// from v2.3 its objectSelector leaves out trainer.kubeflow.org/webhook-validation: disabled
// (manifests/base/webhook/patch_validating.yaml).
func webhookSkips(labels map[string]string) bool {
	return labels["trainer.kubeflow.org/webhook-validation"] == "disabled"
}

// validateTrainingRuntime is the TrainingRuntime webhook's ValidateCreate (typed from v2.2).
func validateTrainingRuntime(ctx context.Context, rt *trainer.TrainingRuntime) error {
	_, err := (&webhooks.TrainingRuntimeValidator{}).ValidateCreate(ctx, rt)
	return err
}

// validateClusterTrainingRuntime is the ClusterTrainingRuntime webhook's ValidateCreate.
func validateClusterTrainingRuntime(ctx context.Context, rt *trainer.ClusterTrainingRuntime) error {
	_, err := (&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate(ctx, rt)
	return err
}

// managedExternally says whether the controller leaves the TrainJob alone: from v2.3 the
// reconciler returns early for a managedBy other than its own (pkg/controller/
// trainjob_controller.go, pkg/util/trainjob.IsManagedByExternalController).
func managedExternally(tj *trainer.TrainJob) bool {
	return trainjob.IsManagedByExternalController(tj)
}

// addClaimVolumes adds what JobSet's controller (v0.11 and later, addVolumes) adds for its
// volumeClaimPolicies: a PVC volume `<template>-<jobset>` for each template a container or
// init container mounts.
func addClaimVolumes(job *batchv1.Job, js *jobset.JobSet) {
	mounted := map[string]bool{}
	pod := &job.Spec.Template.Spec
	for _, c := range append(append([]corev1.Container{}, pod.Containers...), pod.InitContainers...) {
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
		}
	}
	for _, policy := range js.Spec.VolumeClaimPolicies {
		for _, tpl := range policy.Templates {
			if !mounted[tpl.Name] {
				continue
			}
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: tpl.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: tpl.Name + "-" + js.Name},
			}})
		}
	}
}

// newPodSecurityEvaluator: k8s.io/pod-security-admission's evaluator; its emulated version
// (nil: the binary's own) is an argument since Kubernetes 1.35.
func newPodSecurityEvaluator(checks []policy.Check) (policy.Evaluator, error) {
	return policy.NewEvaluator(checks, nil)
}
