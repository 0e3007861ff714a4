"""Tests of reading inputs: the loaders, YAML as kubectl reads it, folder walks, caches."""
