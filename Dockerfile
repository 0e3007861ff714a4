# The `tjc` command in an image, for `tjc controller` in a cluster (deploy/) or `tjc render`
# in a pipeline. Three stages: the wheel `make wheels` builds, for the image's platform
# (packaging/wheels/build.sh: the CUE evaluator and the loader's fast path inside, built with Go
# and zig), installed into a virtual environment, and the final image holding that on Python
# 3.11 slim.
#
#   docker build -t ghcr.io/example/trainjob-compiler:latest .
#   docker build --target krm -t ghcr.io/example/trainjob-compiler-krm:latest .
#   docker build --target argocd-cmp -t ghcr.io/example/trainjob-compiler-argocd-cmp:latest .

# --- the wheel (what `make wheels` builds; the sources it needs, .dockerignore admits) --------
FROM python:3.11-slim-bookworm AS wheel
COPY --from=golang:1.25-bookworm /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# compiler/runtimes, compiler/schemas and compiler/policies are symlinks to these folders.
COPY pyproject.toml setup.py MANIFEST.in README.md constraints.txt ./
COPY runtimes/ runtimes/
COPY schemas/ schemas/
COPY policies/ policies/
COPY compiler/ compiler/
COPY cuebridge/ cuebridge/
COPY yamlext/ yamlext/
COPY packaging/wheels/ packaging/wheels/
RUN out="$(TJC_WHEEL_ARCHES="$(uname -m)" packaging/wheels/build.sh | tail -n 1)" \
    && mkdir -p dist && cp "$out"/*.whl dist/

# --- the package, from the wheel, without the dev extra ---------------------------------------
FROM python:3.11-slim-bookworm AS python
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/tjc
COPY constraints.txt /tmp/
COPY --from=wheel /src/dist/ /tmp/dist/
RUN wheel="$(ls /tmp/dist/*.whl)" \
    && /opt/tjc/bin/pip install -c /tmp/constraints.txt "$wheel[controller]" \
    && /opt/tjc/bin/python -c "import compiler.io.builtin, compiler.io.fastload as f; assert f.available()"

# --- the image ---------------------------------------------------------------------------------
FROM python:3.11-slim-bookworm AS tjc
# 65532: a numeric user, so the kubelet can check runAsNonRoot without reading /etc/passwd.
RUN groupadd --gid 65532 tjc \
    && useradd --uid 65532 --gid 65532 --home-dir /tmp --no-create-home \
       --shell /usr/sbin/nologin tjc
COPY --from=python /opt/tjc /opt/tjc
# The CUE evaluator is inside the package (compiler/_native/). The root filesystem may be
# read-only (deploy/ makes it so): no bytecode is written, and HOME is the writable /tmp.
ENV PATH=/opt/tjc/bin:$PATH \
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
