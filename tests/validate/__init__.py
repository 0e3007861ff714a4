"""Tests of `tjc validate`: CLI and reports, upstream's webhook rules and quirks, one verdict."""
