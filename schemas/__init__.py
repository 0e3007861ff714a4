"""Schema generation for trainjob-compiler: `python -m schemas.generate` (see generate.py)."""
