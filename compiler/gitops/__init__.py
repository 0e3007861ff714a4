"""The GitOps modes: `passthrough` (transformer pipe, Helm post-renderer, Argo CD plugin), `krm`
(the kustomize KRM function) and `diffing` (`tjc diff`). Pure: the CLI does their reading,
writing and processes.
"""
