"""Offline validation of TrainJobs and runtimes: what the cluster would reject, and the upstream
quirks a user would not expect (`tjc validate`, and `tjc render` before it compiles).

Four layers, one `Diagnostic` type: structural (JSON Schema of the CRDs, `schema`), CEL
(`x-kubernetes-validations` of the CRDs, `cel`), semantic (upstream's webhooks and plugin
validators, `webhook`), and quirk warnings (`quirks`). Everything wrong is reported in one run.
Pure: documents in, diagnostics out. The CLI and the render application call it.
"""
