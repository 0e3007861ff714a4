"""`tjc run --local`: run the JobSet compiled for one TrainJob as processes on this machine.

`plan` turns the compiled objects into one process per pod (with what the kubelet and the
JobSet controller would give it); `runner` starts them in JobSet order and applies the
JobSet's success and failure policies. The helpers `kubelet`, `hosts` and `shims` hold the
pieces of a pod's environment. Used by `compiler.cli.run_cmd`; imports nothing of the CLI.
"""
