"""Fuzzing tjc at its edges: the harness (worker under limits), the strategies, the campaign."""
