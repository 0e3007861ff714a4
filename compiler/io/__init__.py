"""Reading inputs and writing outputs: `loader` (YAML/JSON with source positions, as kubectl
reads them; `kubectlstream`, `yamlread`, `yamlscalars`, `yamltags`, `fastload`, `loadlimits`),
`inputs` (what kind each document is, the runtime table), `builtin` (the shipped runtimes),
`toolfiles` (GitOps tool files beside manifests), `sshkeys` (MPI key material), `emit`
(canonical YAML and JSON text). Above the core, below every application.
"""
