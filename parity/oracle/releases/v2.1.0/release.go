package main

// What differs in Kubeflow Trainer's Go API between releases, for v2.1.0 (this folder's
// go.mod): the functions the oracle's shared sources call (../../release.go says what each is).

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobruntimes "github.com/kubeflow/trainer/v2/pkg/runtime"
	"github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

// newRuntimes: core.New has no config argument before v2.2.
func newRuntimes(ctx context.Context, c client.Client, indexer client.FieldIndexer) (map[string]jobruntimes.Runtime, error) {
	return core.New(ctx, c, indexer)
}

// webhookSkips: the validating webhook has no objectSelector before v2.3.
func webhookSkips(map[string]string) bool {
	return false
}

// validateTrainingRuntime: the untyped CustomValidator of controller-runtime v0.22.
func validateTrainingRuntime(ctx context.Context, rt *trainer.TrainingRuntime) error {
	_, err := (&webhooks.TrainingRuntimeWebhook{}).ValidateCreate(ctx, rt)
	return err
}

// validateClusterTrainingRuntime: the untyped CustomValidator of controller-runtime v0.22.
func validateClusterTrainingRuntime(ctx context.Context, rt *trainer.ClusterTrainingRuntime) error {
	_, err := (&webhooks.ClusterTrainingRuntimeWebhook{}).ValidateCreate(ctx, rt)
	return err
}

// managedExternally: before v2.3 the reconciler builds the objects whatever managedBy says.
func managedExternally(*trainer.TrainJob) bool {
	return false
}

// addClaimVolumes: JobSet v0.10 has no volumeClaimPolicies.
func addClaimVolumes(*batchv1.Job, *jobset.JobSet) {}

// newPodSecurityEvaluator: k8s.io/pod-security-admission's evaluator, without the emulated
// version argument of Kubernetes 1.35.
func newPodSecurityEvaluator(checks []policy.Check) (policy.Evaluator, error) {
	return policy.NewEvaluator(checks)
}
