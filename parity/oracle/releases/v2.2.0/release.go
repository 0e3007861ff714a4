package main

// What differs in Kubeflow Trainer's Go API between releases, for v2.2.0 and v2.2.1 (this folder's
// go.mod): the functions the oracle's shared sources call (../../release.go says what each is).

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
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

// newRuntimes: core.New with no configuration, as the tests build it.
func newRuntimes(ctx context.Context, c client.Client, indexer client.FieldIndexer) (map[string]jobruntimes.Runtime, error) {
	return core.New(ctx, c, indexer, nil)
}

// webhookSkips: the validating webhook has no objectSelector before v2.3.
func webhookSkips(map[string]string) bool {
	return false
}

// validateTrainingRuntime: the typed validator (from v2.2).
func validateTrainingRuntime(ctx context.Context, rt *trainer.TrainingRuntime) error {
	_, err := (&webhooks.TrainingRuntimeValidator{}).ValidateCreate(ctx, rt)
	return err
}

// validateClusterTrainingRuntime: the typed validator (from v2.2).
func validateClusterTrainingRuntime(ctx context.Context, rt *trainer.ClusterTrainingRuntime) error {
	_, err := (&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate(ctx, rt)
	return err
}

// managedExternally: before v2.3 the reconciler builds the objects whatever managedBy says.
func managedExternally(*trainer.TrainJob) bool {
	return false
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

// newPodSecurityEvaluator: k8s.io/pod-security-admission's evaluator (emulated version nil:
// the binary's own).
func newPodSecurityEvaluator(checks []policy.Check) (policy.Evaluator, error) {
	return policy.NewEvaluator(checks, nil)
}
