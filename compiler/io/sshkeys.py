"""MPI SSH key sources for `tjc render`: the only place key material is made or read.

Upstream's MPI plugin creates, once per TrainJob, an ECDSA P-521 key pair: the private key as a
PEM `EC PRIVATE KEY` block (SEC1) and the public key as an OpenSSH authorized_keys line. The
compiler core receives keys through `CompileOptions.ssh_keys`; this edge module provides the
two sources the CLI offers: fresh keys per TrainJob (`generate`) or one existing P-521 private
key file for every TrainJob (byte-stable output for GitOps, with the key kept in a secret store).
"""

from __future__ import annotations

import os
import stat

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from compiler.common.diagnostics import error
from compiler.common.errors import InputError
from compiler.core.context import SSHKeyPair, SSHKeySource

MAX_KEY_BYTES = 64 * 1024


def _pair(key: ec.EllipticCurvePrivateKey) -> SSHKeyPair:
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH)
    return SSHKeyPair(private, public + b"\n")


def generated() -> SSHKeySource:
    """A source that makes a new ECDSA P-521 key pair for every TrainJob."""
    return lambda namespace, name: _pair(ec.generate_private_key(ec.SECP521R1()))


def _read_key_file(path: str) -> bytes:
    """A regular file's first MAX_KEY_BYTES + 1 bytes; never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(error("TJC-SSH-KEY", f"cannot read SSH key {path}: "
                               f"{exc.strerror or exc}")) from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(error("TJC-SSH-KEY", f"SSH key {path} is not a regular file"))
        data = handle.read(MAX_KEY_BYTES + 1)
    if len(data) > MAX_KEY_BYTES:
        raise InputError(error("TJC-SSH-KEY", f"SSH key {path} is larger than "
                               f"{MAX_KEY_BYTES} bytes; a PEM P-521 key is about 400"))
    return data


def from_file(path: str) -> SSHKeySource:
    """A source that returns the key pair of one PEM ECDSA P-521 private key file."""
    data = _read_key_file(path)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise InputError(error("TJC-SSH-KEY", f"{path} is not an unencrypted PEM private "
                               "key")) from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp521r1":
        raise InputError(error("TJC-SSH-KEY", f"{path} is not an ECDSA P-521 key; upstream's "
                               "MPI Secret holds ECDSA P-521 keys"))
    pair = _pair(key)
    return lambda namespace, name: pair
