"""Tests for trainjob-compiler."""
