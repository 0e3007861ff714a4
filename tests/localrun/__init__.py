"""Tests of `tjc run --local`, with and without real training."""
