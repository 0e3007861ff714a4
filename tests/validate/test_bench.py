"""The benchmark's corpus and its kubeconform comparison measure what they claim.

The corpus is deterministic, varied where caches would otherwise hide costs (image tags), and
about 5% invalid; kubeconform (pinned, built by bench/kubeconform.sh into the user's cache)
with the schemas made from the CRDs refuses exactly the TrainJobs whose schema errors tjc
reports, so the two tools check the same files for the same schema.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import corpus, kubeconform


def test_corpus_is_deterministic_varied_and_partly_invalid() -> None:
    runtimes, jobs = corpus.corpus(400, seed=3)
    assert (runtimes, jobs) == corpus.corpus(400, seed=3)
    images = [j["spec"]["trainer"].get("image") for j in jobs]
    tagged = {i for i in images if i}
    assert len(tagged) > 0.5 * len(jobs)  # nearly every job has its own image tag
    assert sum("runtimePatches" in j["spec"] for j in jobs) > 40
    assert {j["spec"]["runtimeRef"]["kind"] for j in jobs} == {"ClusterTrainingRuntime",
                                                              "TrainingRuntime"}


@pytest.mark.slow
def test_kubeconform_refuses_what_tjc_finds_schema_errors_in(tmp_path: Path) -> None:
    files = corpus.write_tree(tmp_path / "repo", 300, seed=5)
    schemas = kubeconform.write_schemas(tmp_path / "schemas")
    done = subprocess.run(kubeconform.command(kubeconform.binary(), schemas,
                                              str(tmp_path / "repo")),
                          capture_output=True, text=True, check=False)
    assert f"{len(files)} resources found" in done.stdout, done.stdout + done.stderr
    refused = {line.split(" - ")[0] for line in done.stdout.splitlines() if " is invalid" in line}
    tjc = subprocess.run([sys.executable, "-m", "compiler", "validate", "--no-default-policies",
                          str(tmp_path / "repo")], capture_output=True, text=True, check=False)
    schema_rules = re.compile(r"\[TJC-(SCHEMA-(TYPE|PATTERN|MINIMUM)|UNKNOWN-FIELD)\]$")
    found = {line.split(":")[0] for line in tjc.stdout.splitlines()
             if schema_rules.search(line)}
    assert refused and refused == found
