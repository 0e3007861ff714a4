"""Policy as code: CUE policy packs applied to TrainJobs, runtimes and the compiled JobSets.

`packs` loads pack files against the contract (`contract.cue`), `views` and `prune` build what a
rule sees, `engine` evaluates and memoizes, `check` locates violations in the inputs, and
`testcases` runs a pack folder's own cases. The CUE evaluator itself is `compiler.policy.cuelib`,
which `cueproc` runs in a process of its own (`cueworker`), bounded in memory and time.
"""
