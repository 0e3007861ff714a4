# The `tjc` command in an image, for `tjc controller` in a cluster (deploy/) or `tjc render`
# in a pipeline. Three stages: Go builds the CUE evaluator library, Python installs the package
# into a virtual environment, and the final image holds just those two on Python 3.11 slim.
#
#   docker build -t ghcr.io/example/trainjob-compiler:latest .
#   docker build --target krm -t ghcr.io/example/trainjob-compiler-krm:latest .
#   docker build --target argocd-cmp -t ghcr.io/example/trainjob-compiler-argocd-cmp:latest .

# --- the CUE evaluator (cuebridge/, as `make setup` builds it) -------------------------------
FROM golang:1.25-bookworm AS cue
WORKDIR /src/cuebridge
COPY cuebridge/go.mod cuebridge/go.sum ./
RUN go mod download
COPY cuebridge/*.go ./
RUN go build -mod=readonly -trimpath -buildmode=c-shared -o /out/libtjccue.so .

# --- the package, non-editable, without the dev extra ----------------------------------------
FROM python:3.11-slim-bookworm AS python
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/tjc
WORKDIR /src
# compiler/runtimes, compiler/schemas and compiler/policies are symlinks to these folders.
COPY pyproject.toml README.md constraints.txt ./
COPY runtimes/ runtimes/
COPY schemas/ schemas/
COPY policies/ policies/
COPY compiler/ compiler/
RUN /opt/tjc/bin/pip install -c constraints.txt ".[controller]" \
    && /opt/tjc/bin/python -c "import compiler.io.builtin"

# --- the image ---------------------------------------------------------------------------------
FROM python:3.11-slim-bookworm AS tjc
# 65532: a numeric user, so the kubelet can check runAsNonRoot without reading /etc/passwd.
RUN groupadd --gid 65532 tjc \
    && useradd --uid 65532 --gid 65532 --home-dir /tmp --no-create-home \
       --shell /usr/sbin/nologin tjc
COPY --from=python /opt/tjc /opt/tjc
COPY --from=cue /out/libtjccue.so /usr/local/lib/trainjob-compiler/libtjccue.so
# compiler/policy/cuelib.py loads the library from TJC_LIBCUE. The root filesystem may be read-only
# (deploy/ makes it so): no bytecode is written, and HOME is the writable /tmp.
ENV PATH=/opt/tjc/bin:$PATH \
    TJC_LIBCUE=/usr/local/lib/trainjob-compiler/libtjccue.so \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
ENTRYPOINT ["tjc"]
CMD ["controller", "--all-namespaces", "--leader-elect"]

# --- kustomize for the Argo CD plugin image (the version e2e/tools/go.mod pins) ----------------
FROM golang:1.25-bookworm AS kustomize
RUN CGO_ENABLED=0 GOBIN=/out go install -trimpath sigs.k8s.io/kustomize/kustomize/v5@v5.7.1

# --- target krm: the KRM container function (kustomize/kpt run it with no arguments) ----------
FROM tjc AS krm
CMD ["krm"]

# --- target argocd-cmp: the repo-server sidecar of deploy/argocd (runs as Argo CD's uid 999) --
FROM tjc AS argocd-cmp
COPY --from=kustomize /out/kustomize /usr/local/bin/kustomize
USER 999:999
CMD []

# --- the default target: the controller image above ------------------------------------------
FROM tjc
