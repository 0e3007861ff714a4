//go:build trainer_v2_1

package main

import (
	"reflect"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// patchTypes: in v2.1 a TrainJob patches its runtime's Pod templates with
// podTemplateOverrides.
func patchTypes() map[string]reflect.Type {
	return map[string]reflect.Type{"pod_template_override": reflect.TypeOf(trainer.PodTemplateOverride{})}
}
