"""Tests of the CUE policy packs and the policy engine."""
