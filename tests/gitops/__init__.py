"""Tests of the GitOps modes, alone and inside kustomize, Helm and Argo CD."""
