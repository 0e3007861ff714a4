"""The two sides of `tjc diff`: folders, git revisions, each optionally through kustomize.

A git revision is read without a checkout (`git ls-tree` and `git cat-file`); with
`--kustomize` the revision's tree is exported (`git archive`) into a temporary folder so that
`kustomize build` sees the overlays and their bases as they were. Problems are InputErrors
(exit 2).
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.errors import InputError
from compiler.io.loader import MAX_BYTES, SUFFIXES, Source, read_sources


def _problem(message: str) -> InputError:
    return InputError(Diagnostic(Severity.ERROR, "TJC-DIFF-INPUT", message))


def _run(argv: Sequence[str], what: str = "", cwd: Path | None = None) -> bytes:
    try:
        done = subprocess.run(list(argv), capture_output=True, check=False, cwd=cwd)
    except OSError as exc:
        raise _problem(f"cannot run {argv[0]}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise _problem(what or f"{' '.join(argv[:2])}: {lines[-1] if lines else 'failed'}")
    return done.stdout


def _git(*argv: str, what: str = "") -> str:
    return _run(["git", *argv], what).decode("utf-8", errors="replace")


def _check_rev(rev: str) -> None:
    _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
         what=f"{rev} is not a revision of the git repository of this folder")


def git_sources(rev: str, paths: Sequence[str]) -> list[Source]:
    """The YAML/JSON files below `paths` as they are in revision `rev`, named `rev:path`."""
    _check_rev(rev)
    listing = _git("ls-tree", "-r", "-z", "-l", "--full-name", rev, "--", *paths)
    sizes: dict[str, int] = {}
    for entry in listing.split("\0"):  # `<mode> <type> <object> <size>\t<path>`
        meta, _, name = entry.partition("\t")
        if len(meta.split()) == 4 and meta.split()[1] == "blob":
            sizes[name] = int(meta.split()[3])
    names = sorted(n for n in sizes if PurePosixPath(n).suffix in SUFFIXES
                   and not any(p.startswith(".") for p in PurePosixPath(n).parts))
    for name in names:  # bounded as a file on disk is
        if sizes[name] > MAX_BYTES:
            raise _problem(f"{rev}:{name} is larger than {MAX_BYTES >> 20} MiB")
    return [Source(f"{rev}:{name}", _git("cat-file", "blob", f"{rev}:{name}"))
            for name in names]


def _built(folder: Path, label: str, skipped: Sequence[str] = ()) -> Source:
    """`kustomize build` of a folder (kustomize from PATH, else `kubectl kustomize`), named
    after `label`; `skipped` names the links the export left out, for kustomize's error when
    it needed one."""
    from compiler.cli.kustomize_build import command

    try:
        text = _run([*command(), str(folder)]).decode("utf-8", errors="replace")
    except InputError as exc:
        if not skipped:
            raise
        shown = ", ".join(skipped[:3]) + (", ..." if len(skipped) > 3 else "")
        raise _problem(f"{exc.diagnostic.message} (not exported: {len(skipped)} symlinks that "
                       f"point outside the repository: {shown})") from None
    return Source(f"kustomize build {label}", text)


def _extract(archive: bytes, folder: str) -> list[str]:
    """Extract a `git archive` tar with tarfile's data filter; a member it refuses (a symlink
    to an absolute path or out of the tree) is left out and named in the answer."""
    if not hasattr(tarfile, "data_filter"):  # Python before 3.11.4
        raise _problem("tjc diff --git --kustomize needs Python 3.11.4 or later")
    skipped: list[str] = []

    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            skipped.append(member.name)
            return None

    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter=keep)
    return skipped


def git_kustomize_sources(rev: str, paths: Sequence[str]) -> list[Source]:
    """`kustomize build` of each path as it is in revision `rev`."""
    _check_rev(rev)
    prefix = _git("rev-parse", "--show-prefix").strip()
    top = _git("rev-parse", "--show-toplevel").strip()
    archive = _run(["git", "-C", top, "archive", "--format=tar", rev])  # the whole tree
    with tempfile.TemporaryDirectory(prefix="tjc-diff-") as tmp:
        skipped = _extract(archive, tmp)
        return [_built(Path(tmp, prefix, path), f"{rev}:{prefix}{path}", skipped)
                for path in paths]


def sources(side: str, paths: Sequence[str], *, git: bool, kustomize: bool) -> list[Source]:
    """The inputs of one side of the diff."""
    if git and kustomize:
        return git_kustomize_sources(side, paths or ["."])
    if git:
        return git_sources(side, paths or ["."])
    if kustomize:
        return [_built(Path(side), side)]
    return read_sources([side])
