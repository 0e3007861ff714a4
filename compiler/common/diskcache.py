"""Blobs kept between runs under the user's cache folder, checked before they are used.

Start-up work whose result is a pure function of the package (the built-in runtimes parsed,
the CRDs' CEL rules compiled, the plugin order, the policy packs' facts) is stored under
`$XDG_CACHE_HOME` (or `~/.cache`) `/trainjob-compiler/<version>/<area>/<name>`, `<name>`
being a digest of everything the result depends on, chosen by the caller. Each file starts
with the BLAKE2b-256 digest of the rest (`compiler.common.digests`): a truncated, corrupt or
mixed-up file reads as absent, and the caller then does the work again, so the output never
depends on the cache. `TJC_CACHE_DIR` moves the folder (`off` turns the cache off); a folder
that cannot be read or written is ignored. The folder is trusted as much as the user's home
is (whoever can write it can write the user's Python files too); nothing here is executed,
every entry is data the caller checks for shape.

Called by `compiler.io.builtin`, `compiler.kube.cel`, `compiler.core.plugins.graph` and
`compiler.policy.cache`; holds no knowledge of any.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from compiler.common.digests import blake2b
from compiler.version import __version__

CACHE_ENV = "TJC_CACHE_DIR"
_DIGEST = 32


def folder(area: str) -> Path | None:
    """The folder of one area of the cache (None: the cache is off)."""
    configured = os.environ.get(CACHE_ENV)
    if configured == "off":
        return None
    if configured:
        return Path(configured) / area
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home folder to be found: no cache
            return None
    return Path(base) / "trainjob-compiler" / __version__ / area


def key(*parts: bytes | str) -> str:
    """A file name for an entry that depends on `parts` (and on the version)."""
    digest = blake2b(digest_size=_DIGEST)
    for part in (__version__, *parts):
        raw = part.encode() if isinstance(part, str) else part
        digest.update(blake2b(raw, digest_size=_DIGEST).digest())
    return digest.hexdigest()


def file_stamp(path: str) -> str:
    """The identity of a file an entry depends on without being read (a library, the code
    that does the work): its path, size and modification time, or `absent`."""
    try:
        stat = os.stat(path)
    except OSError:
        return "absent"
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def read(area: str, name: str) -> bytes | None:
    """A stored entry whose checksum matches, or None."""
    where = folder(area)
    if where is None:
        return None
    try:
        raw = (where / name).read_bytes()
    except OSError:
        return None
    payload = raw[_DIGEST:]
    return payload if _checksum(payload) == raw[:_DIGEST] else None


def write(area: str, name: str, payload: bytes) -> None:
    """Store an entry atomically (another process sees the old file or the new one); silently
    nothing when the folder cannot be written."""
    where = folder(area)
    if where is None:
        return
    temp = where / f".{name}.{os.getpid()}.tmp"
    try:
        where.mkdir(parents=True, exist_ok=True)
        temp.write_bytes(_checksum(payload) + payload)
        os.replace(temp, where / name)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def _checksum(payload: bytes) -> bytes:
    """What an entry is stored with, to be read back only whole and unchanged."""
    return blake2b(payload, digest_size=_DIGEST).digest()
