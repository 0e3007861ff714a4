"""Kubernetes' core and batch validation of the Jobs and Pods a JobSet becomes, in Python.

The CRDs and JobSet take any pod template; kube-apiserver refuses the Jobs or Pods made from a
bad one (422) long after, and the TrainJob hangs. These modules say so before anything is
created, each rule after the function of `k8s.io/kubernetes` `pkg/apis/core/validation` or
`pkg/apis/batch/validation` it follows (named in its module):

- `base`: the `Problem`s reported, the `Scope` a spec is checked in, shared value tests;
- `volumefiles` (TJC-POD-VOLUME: the files volumes write, modes, subPaths), `volumes` (names,
  one source, what a source needs), `mounts` (TJC-POD-MOUNT);
- `containers` (TJC-POD-CONTAINER), `ports` (TJC-POD-PORT), `env` (TJC-POD-ENV),
  `resources` (TJC-POD-RESOURCES), `probes` (TJC-POD-PROBE), `security` (TJC-POD-SECURITY),
  `podfields` (TJC-POD-SPEC), `job` (TJC-POD-JOB);
- `check` runs them all on a pod spec, pod template or Job spec; `refusals` is admission's
  use of them on runtimes and TrainJob runtime patches.

Pure: plain data in, problems out; nothing here raises on malformed input, and only `refusals`
knows where runtimes and TrainJobs hold their templates.
"""
