"""Tests of `tjc controller` without a cluster, and of the deployment manifests."""
