"""BLAKE2b, the digest of tjc's own keys and checksums (the start-up cache, the TrainJobs met
by name), without importing `hashlib`, which loads OpenSSL when imported: a few milliseconds of
every run's start. BLAKE2b is CPython's own module (`_blake2`); another Python implementation
gets it from `hashlib`. Digests that must match another tool's (SHA-256 of a file, a key made
as upstream makes it) still use `hashlib`, imported where they are made. Pure.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (not CPython)
    from hashlib import blake2b

__all__ = ["blake2b"]
