package main

// The API server's create path for a custom resource, assembled from the pieces the
// apiextensions-apiserver uses: decode-time pruning, null pruning and ObjectMeta coercion,
// structural defaulting, then the CRD strategy (ObjectMeta, OpenAPI schema, embedded
// resources, list types, CEL rules).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

type crdKind struct {
	namespaced bool
	structural *structuralschema.Structural
	validate   func(context.Context, *unstructured.Unstructured) field.ErrorList
}

// loadCRDs reads every CRD file of dir into kind -> create path.
func loadCRDs(dir string) (map[string]*crdKind, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	kinds := map[string]*crdKind{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			continue
		}
		k, err := newCRDKind(&crd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		kinds[crd.Spec.Names.Kind] = k
	}
	return kinds, nil
}

func newCRDKind(crd *apiextensionsv1.CustomResourceDefinition) (*crdKind, error) {
	version := crd.Spec.Versions[0]
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
		version.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, err
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version.Name, Kind: crd.Spec.Names.Kind}
	var status *apiextensions.CustomResourceSubresourceStatus
	if version.Subresources != nil && version.Subresources.Status != nil {
		status = &apiextensions.CustomResourceSubresourceStatus{}
	}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	strategy := customresource.NewStrategy(nil, namespaced, gvk, validator, nil, structural, status, nil, nil)
	return &crdKind{
		namespaced: namespaced,
		structural: structural,
		validate: func(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
			strategy.PrepareForCreate(ctx, u)
			return strategy.Validate(ctx, u)
		},
	}, nil
}

// admit runs the create path on obj in place; the errors the API server would return.
func (k *crdKind) admit(ctx context.Context, obj map[string]interface{}) (errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			errs = field.ErrorList{field.InternalError(nil, fmt.Errorf("panic: %v", r))}
		}
	}()
	u := &unstructured.Unstructured{Object: obj}
	meta, found, err := schemaobjectmeta.GetObjectMeta(obj, true)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, err.Error())}
	}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	structuralpruning.Prune(obj, k.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, k.structural)
	if ferr := schemaobjectmeta.Coerce(nil, obj, k.structural, false, true); ferr != nil {
		return field.ErrorList{ferr}
	}
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if found {
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, err.Error())}
		}
	}
	structuraldefaulting.Default(obj, k.structural)
	if k.namespaced && u.GetNamespace() == "" {
		u.SetNamespace("default")
	} else if !k.namespaced {
		u.SetNamespace("")
	}
	return k.validate(ctx, u)
}
