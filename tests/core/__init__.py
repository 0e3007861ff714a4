"""Tests of the compile: pure pieces, golden cases, properties, provenance, the library API."""
