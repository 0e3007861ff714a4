"""Kubernetes API machinery as the API server and Go client do it, with no Kubeflow Trainer
knowledge: `quantity`, `strategicmerge` (strategic merge patch), `roundtrip` (the Go typed round
trip), `defaults` (CRD defaulting), `structural` (the structural pass), `schema` and `cel` (the
CRDs' OpenAPI and CEL rules), `objectmeta` and `podresources` (ObjectMeta and pod resource
rules), `podspec/` (core and batch validation of the Jobs and Pods a JobSet becomes);
`_crd_facts`, `_crd_types` and `_go_facts` are generated. Imports only `common`.
"""
