"""The one pipeline every application runs a TrainJob through (`session.Session.process`).

Admission, the compile, the policy packs and locating, with the run's memos (`session`); the
TrainJobs met by name (`names`); the quirk warnings (`quirks`). Below the applications (validate,
render, the GitOps modes, the controller), above the core and the loader.
"""
