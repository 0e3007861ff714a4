"""`tjc controller`: the thin reconcile controller for TrainJobs.

Watches TrainJobs and the objects they own (`informer`), queues their keys (`workqueue`),
and reconciles each (`reconcile`) by compiling it with the core and server-side applying the
result (`kube`), keeping upstream's status rules (`status`) and runtime snapshot
(`snapshot`, verified against a digest in the status). It writes only over objects the
TrainJob controls (`ownership`, `objects`), uses only the SSH Secret it made (`sshsecret`)
and refuses what no cluster could run (`limits`). `memo` remembers the snapshot and compile a
reconcile verified, so a JobSet status change compiles nothing; `rest` is the HTTPS client,
`kubeconfig` reads and checks its kubeconfig as client-go does.
`livepolicy` keeps the policy set current as its settings files change (the last good one
when a change does not load). `leader` elects one active replica through a Lease, `metrics`
serves Prometheus metrics and health probes, `manager` wires it all. `reports` keeps a
PolicyReport per namespace (`--policy-reports`). `tjc webhook` lives here too: `judge`
reaches the controller's verdict on one object (the pipeline says where in the inputs a
finding is to be fixed), `review` reads and answers AdmissionReviews, `webhookserver` serves
them over TLS with the certificate `servingcert` reloads. The core never imports this
package.
"""
