"""Benchmarks (`make bench`): compile throughput, render versus the libyaml floor, memory."""
