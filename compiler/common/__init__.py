"""The vocabulary every layer shares: `diagnostics` (the one problem type), `errors` (the typed
errors the library raises) and `jsondata` (deep copy and paths in JSON-like data).
Imports nothing else of the package but `compiler.version`.
"""
