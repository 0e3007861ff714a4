//go:build !trainer_v2_1

package main

import (
	"reflect"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// patchTypes: from v2.2 a TrainJob patches its runtime with runtimePatches, whose JobSet part
// is the JobSetSpecPatch.
func patchTypes() map[string]reflect.Type {
	return map[string]reflect.Type{"jobset_spec_patch": reflect.TypeOf(trainer.JobSetSpecPatch{})}
}
