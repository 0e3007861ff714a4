"""Hostile inputs and fuzzing: each gives one located line and a documented exit code."""
