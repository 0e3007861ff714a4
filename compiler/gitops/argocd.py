"""The Argo CD plugin's two decisions: which applications it claims, and which render options
an Application may set.

Called by `tjc argocd discover` and `tjc argocd generate` (`compiler.cli.argocd_cmd`), which
read the files, run kustomize and read the environment. Pure: text and documents in, answers
out; it must not reach the shell, the disk or the environment.

Who owns what: the platform team installs the plugin and sets the sidecar's environment (the
policies: `PLATFORM_ENV`), which an Application cannot change (Argo CD hands an Application's
plugin env to the commands only with the prefix `ARGOCD_ENV_`). The Application sets
`TJC_ARGS`, read as `ARGOCD_ENV_TJC_ARGS`: split on blanks, never by a shell, each word
checked against `ALLOWED`; anything else is refused by name, so the sync fails visibly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from compiler.common.records import dataclass
from compiler.core.admission import FIELD_VALIDATION
from compiler.core.release import SERVED
from compiler.core.resolve import RUNTIME_KINDS
from compiler.io.loader import Document
from compiler.kube.releases import jobset_versions

APP_ARGS_ENV = "ARGOCD_ENV_TJC_ARGS"  # the Application's plugin env TJC_ARGS
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_KINDS = ("TrainJob", *RUNTIME_KINDS)
TRAINER_BYTES = TRAINER_GROUP.encode()  # a file without it holds no Trainer kind

# The sidecar's own settings, set by the platform team (see `platform_arguments`).
POLICY_ENV, POLICY_VALUES_ENV, SKIP_ENV = "TJC_POLICY", "TJC_POLICY_VALUES", "TJC_SKIP"
PLATFORM_ENV = (POLICY_ENV, POLICY_VALUES_ENV, SKIP_ENV)


def trainer_kind(doc: Document) -> str | None:
    """`Kind namespace/name` when the document is a Trainer kind (any version of the group:
    one the render refuses is still the plugin's to report), else None."""
    api, kind = doc.data.get("apiVersion"), doc.data.get("kind")
    if not isinstance(api, str) or not api.startswith(f"{TRAINER_GROUP}/") or \
            kind not in TRAINER_KINDS:
        return None
    meta = doc.data.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    scope = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
    return f"{kind} {scope}{meta.get('name', '')}"


def first_claim(documents: Iterable[Document]) -> str | None:
    """The first Trainer kind among the documents, as `trainer_kind` names it, or None."""
    return next((found for doc in documents if (found := trainer_kind(doc))), None)


# --- TJC_ARGS: the render options an Application may set --------------------------------------

@dataclass(frozen=True)
class AppOptions:
    """The render options of an Application's TJC_ARGS."""

    keep_trainjobs: bool = False
    builtin_runtimes: bool = True
    field_validation: str = "strict"
    name_hash: bool = False
    trainer_version: str | None = None  # else the repository's .tjc.yaml, else the newest
    jobset_version: str | None = None

    def render_arguments(self) -> list[str]:
        """The `tjc render` arguments these options stand for."""
        return [*(["--keep-trainjobs"] if self.keep_trainjobs else []),
                *([] if self.builtin_runtimes else ["--no-builtin-runtimes"]),
                *(["--name-hash"] if self.name_hash else []),
                f"--field-validation={self.field_validation}",
                *([f"--trainer-version={self.trainer_version}"] if self.trainer_version else []),
                *([f"--jobset-version={self.jobset_version}"] if self.jobset_version else [])]


_Flag = Callable[[AppOptions], AppOptions]

_FLAGS: dict[str, _Flag] = {
    "-q": lambda o: o,  # notices are never printed by the plugin: accepted, changes nothing
    "--quiet": lambda o: o,
    "--keep-trainjobs": lambda o: replace(o, keep_trainjobs=True),
    "--no-builtin-runtimes": lambda o: replace(o, builtin_runtimes=False),
    "--name-hash": lambda o: replace(o, name_hash=True),  # a changed TrainJob syncs
}
_VALUED: dict[str, tuple[tuple[str, ...], Callable[[AppOptions, str], AppOptions]]] = {
    "--field-validation": (FIELD_VALIDATION, lambda o, v: replace(o, field_validation=v)),
    "--trainer-version": (SERVED, lambda o, v: replace(o, trainer_version=v)),
    "--jobset-version": (jobset_versions(), lambda o, v: replace(o, jobset_version=v)),
}
ALLOWED = (*_FLAGS, *(f"{name} {'|'.join(values)}" for name, (values, _) in _VALUED.items()))

_POLICIES = "the policies are the platform's: the plugin sidecar's " + \
    ", ".join(PLATFORM_ENV)
_WHY = {
    **dict.fromkeys(("--policy", "--policy-values", "--pss-level", "--skip",
                     "--no-default-policies"), _POLICIES),
    "--no-validate": "the checks and the policies cannot be turned off",
    "--mpi-ssh-key": "it would put a private key into Argo CD's manifests, a new one on "
                     "every refresh; create the SSH Secret the job needs yourself",
    **dict.fromkeys(("-o", "--output", "--output-dir", "--dry-run", "--check"),
                    "the plugin prints the manifests Argo CD applies"),
}
_PATHS = "the plugin renders the application's folder only; no paths or patterns"


class RefusedArgument(ValueError):
    """A word of TJC_ARGS that an Application may not use; the message names it."""

    def __init__(self, argument: str, why: str) -> None:
        super().__init__(f"TJC_ARGS: {argument} is not allowed: {why} (allowed: "
                         f"{', '.join(ALLOWED)})")
        self.argument = argument


def app_options(text: str) -> AppOptions:
    """The options of TJC_ARGS, split on blanks (no quotes, no shell); RefusedArgument for
    the first word that is not an allowed option (or not an allowed value of one)."""
    options, words = AppOptions(), text.split()
    while words:
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if word in _FLAGS:
            options = _FLAGS[word](options)
        elif name in _VALUED:
            if not eq:
                value = words.pop(0) if words else ""
            allowed, apply = _VALUED[name]
            if value not in allowed:
                raise RefusedArgument(f"{name} {value}".rstrip(),
                                      f"{name} takes one of {', '.join(allowed)}")
            options = apply(options, value)
        else:
            raise RefusedArgument(word, _why(name))
    return options


def _why(name: str) -> str:
    if name in _WHY:
        return _WHY[name]
    if name == "-" or not name.startswith("-"):
        return _PATHS
    return "not among the options an Application may set"


def platform_arguments(environ: dict[str, str]) -> list[str]:
    """The `tjc render` policy arguments of the sidecar's own environment: TJC_POLICY
    (folders of CUE packs, `:`-separated), TJC_POLICY_VALUES (a values file), TJC_SKIP (rule
    ids or packs, comma-separated). Each value is one argument, `--option=value`, so none is
    ever read as another option."""
    found = [f"--policy={p}" for p in environ.get(POLICY_ENV, "").split(":") if p]
    if environ.get(POLICY_VALUES_ENV):
        found.append(f"--policy-values={environ[POLICY_VALUES_ENV]}")
    if environ.get(SKIP_ENV, "").strip(", "):
        found.append(f"--skip={environ[SKIP_ENV]}")
    return found
