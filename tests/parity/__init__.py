"""Differential tests against upstream's own Go code (the parity oracle), and their helpers."""
