"""Tests of the API server's rules in tjc: schema, CEL, ObjectMeta, pod and Job rules."""
