"""The `tjc` command line: flag parsing and dispatch only; the work is in
`compiler.render.pipeline`."""
