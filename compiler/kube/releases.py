"""The data of each served Kubeflow Trainer release, as that release's own Go module has it.

`release_data(version)` gives one release's schemas of the three Trainer CRDs (the schema
tree and its CEL rules) and of the JobSet CRD of the JobSet release it is built with, its
built-in runtimes, the Go encoding facts of its JobSet and patch types and (from v2.2) its
Flux script templates, and the module versions it is built with (its JobSet release among
them). `jobset_release(version)` names the Trainer release whose data holds a JobSet
release's schema. All of it is generated from the pinned modules by
`python -m schemas.generate` (`make schemas`; `make schemas-check` fails on a stale file),
none of it copied by hand:

- the newest release (`DEFAULT`) is where the rest of the compiler reads it: `schemas/<kind>
  .json`, `runtimes/`, `compiler.kube._go_facts`, and the Flux templates installed beside the
  package (`_native/flux/`, or `build/flux/` of a checkout);
- an older release is in `schemas/releases/<v2_2_1>/`: `<kind>.patch.json`, a JSON merge patch
  (RFC 7386) of its CRD schema against the newest release's (the schemas share most of their
  tree; no schema holds a null, so a patch says everything), `jobset.patch.json` (the same
  for its JobSet's CRD), `runtimes/` (byte copies of its built-in runtimes) and
  `gofacts.patch.json` (the same for the Go facts); its Flux templates
  are installed in `releases/<v2_2_1>/` of the folders above. `schemas/releases/modules.json`
  names every release's Trainer, JobSet and k8s.io/apimachinery versions.

Nothing here chooses a release: callers pass one. Pure apart from reading packaged files.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Final

from compiler.common.records import dataclass

RELEASES: Final = ("v2.1.0", "v2.2.0", "v2.2.1", "v2.3.0")  # oldest first
DEFAULT: Final = RELEASES[-1]
TRAINER_KINDS: Final = ("trainjob", "trainingruntime", "clustertrainingruntime")
FLUX_TEMPLATES: Final = ("broker.toml", "entrypoint.sh", "init.sh")

PACKAGE: Final = Path(__file__).resolve().parent.parent
SCHEMA_DIR: Final = PACKAGE / "schemas"
RELEASES_DIR: Final = SCHEMA_DIR / "releases"
_FLUX_DIRS: Final = (PACKAGE / "_native" / "flux", PACKAGE.parent / "build" / "flux")


def data_key(version: str) -> str:
    """The folder name of a release's data: `v2.2.1` -> `v2_2_1`."""
    return version.replace(".", "_")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: `patch` applied to `target` (a new value; the arguments are not changed)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def schema_text(schema: dict[str, Any]) -> str:
    """A schema as the packaged files hold it."""
    return json.dumps(schema, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class ReleaseData:
    """One release's packaged data; `version` is one of `RELEASES`."""

    version: str

    @property
    def newest(self) -> bool:
        """Whether this is the release the rest of the compiler reads by default."""
        return self.version == DEFAULT

    @property
    def folder(self) -> Path:
        """`schemas/releases/<key>/` of an older release (the newest has none)."""
        return RELEASES_DIR / data_key(self.version)

    @property
    def modules(self) -> dict[str, str]:
        """Module path -> version: Kubeflow Trainer, JobSet and k8s.io/apimachinery."""
        found: dict[str, str] = _modules()[self.version]
        return found

    @property
    def jobset(self) -> str:
        """The JobSet release this Trainer release is built with (and needs installed)."""
        return self.modules["sigs.k8s.io/jobset"]

    def schema_source(self, kind: str) -> bytes:
        """The JSON Schema of `kind` (a key of `schematree.KIND_KEYS`' values: `trainjob`,
        `trainingruntime`, `clustertrainingruntime`, `jobset`) as bytes; `jobset` is the CRD
        of the JobSet release this release is built with (`jobset`)."""
        return _schema_source(self.version, kind)

    def schema(self, kind: str) -> dict[str, Any]:
        """The JSON Schema of `kind`, parsed (a new dict each call)."""
        loaded: dict[str, Any] = json.loads(self.schema_source(kind))
        return loaded

    def runtime_files(self) -> tuple[Path, ...]:
        """The built-in runtime files, in file-name order (names as in `<builtin>/NAME`)."""
        folder = PACKAGE / "runtimes" if self.newest else self.folder / "runtimes"
        return tuple(sorted(folder.glob("*.yaml")))

    def go_types(self) -> dict[str, Any]:
        """The Go encoding facts (`compiler.kube._go_facts.GO_TYPES`' shape): `jobset_spec`,
        and `jobset_spec_patch` (v2.2 and later) or `pod_template_override` (v2.1)."""
        return _go_types(self.version)

    @property
    def has_flux(self) -> bool:
        """Whether the release has the Flux plugin (v2.2 and later)."""
        return self.version not in ("v2.1.0",)

    def flux_template(self, name: str) -> str:
        """One of upstream's Flux templates (FLUX_TEMPLATES), as installed with the package or
        in a checkout by `make setup`; FileNotFoundError when it is not there, or the release
        has no Flux plugin."""
        if name not in FLUX_TEMPLATES or not self.has_flux:
            raise FileNotFoundError(f"Kubeflow Trainer {self.version} has no Flux template "
                                    f"{name}")
        sub = Path() if self.newest else Path("releases", data_key(self.version))
        for folder in _FLUX_DIRS:
            path = folder / sub / name
            if path.is_file():
                return path.read_text(encoding="utf-8")
        raise FileNotFoundError(f"Flux template {name} of Kubeflow Trainer {self.version} is "
                                "not installed")


def jobset_release(jobset: str) -> str | None:
    """The newest Trainer release built with the JobSet release `jobset` (whose data holds
    that JobSet's schema), or None when no served release is."""
    found = [version for version in RELEASES if _modules()[version]["sigs.k8s.io/jobset"] == jobset]
    return found[-1] if found else None


def jobset_versions() -> tuple[str, ...]:
    """The JobSet releases whose schemas are held, oldest first."""
    return tuple(dict.fromkeys(_modules()[version]["sigs.k8s.io/jobset"] for version in RELEASES))


def release_data(version: str) -> ReleaseData:
    """The data of a served release; ValueError naming the served ones for any other."""
    if version not in RELEASES:
        raise ValueError(f"Kubeflow Trainer {version} is not served; expected one of "
                         f"{', '.join(RELEASES)}")
    return ReleaseData(version)


@functools.cache
def _modules() -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = json.loads(
        (RELEASES_DIR / "modules.json").read_text(encoding="utf-8"))
    return found


@functools.cache
def _schema_source(version: str, kind: str) -> bytes:
    if kind not in (*TRAINER_KINDS, "jobset"):
        raise ValueError(f"no schema for {kind!r}; expected one of "
                         f"{', '.join((*TRAINER_KINDS, 'jobset'))}")
    base = (SCHEMA_DIR / f"{kind}.json").read_bytes()
    if version == DEFAULT:
        return base
    patch = json.loads((RELEASES_DIR / data_key(version) / f"{kind}.patch.json").read_bytes())
    return schema_text(merge_patch(json.loads(base), patch)).encode("utf-8")


@functools.cache
def _go_types_text(version: str) -> str:
    from compiler.kube._go_facts import GO_TYPES
    if version == DEFAULT:
        return json.dumps(GO_TYPES)
    patch = json.loads((RELEASES_DIR / data_key(version) / "gofacts.patch.json").read_bytes())
    return json.dumps(merge_patch(GO_TYPES, patch))


def _go_types(version: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(_go_types_text(version))  # a copy callers may change
    return found
