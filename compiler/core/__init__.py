"""The compiler proper: one TrainJob and its runtime in, the objects Kubeflow Trainer creates out.

`compile` drives it: `admission` (what the API server refuses; `webhook` holds upstream's
webhook rules), `resolve` (which runtime), `context` (upstream's runtime Info), `plugins/`
(one module per upstream plugin, in graph order, returning edits applied with `upsert`'s rules),
`resources` (node resource facts), `limits` and `podrefusals` (what the cluster would refuse of
the JobSet made). Pure: reads no file, clock, environment or random source,
and imports no application, CLI, controller or policy code.
"""
