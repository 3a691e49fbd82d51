"""A throwaway certificate authority (openssl), for an https receiver on loopback."""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@dataclass(frozen=True)
class CertificateAuthority:
    folder: Path

    @property
    def cert(self) -> Path:
        return self.folder / "ca.pem"

    def server_context(self, name: str) -> ssl.SSLContext:
        """A server context with a certificate for `name`, signed by this authority."""
        key, request, cert = (self.folder / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        extensions = self.folder / f"{name}.ext"
        extensions.write_text(f"subjectAltName=DNS:{name}\n")
        _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                 "-subj", f"/CN={name}", "-out", str(request))  # fmt: skip
        _openssl("x509", "-req", "-in", str(request), "-CA", str(self.cert),
                 "-CAkey", str(self.folder / "ca.key"), "-CAcreateserial", "-days", "2",
                 "-extfile", str(extensions), "-out", str(cert))  # fmt: skip
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """What ssl.create_default_context() gives, trusting this authority alone."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the name
        context.load_verify_locations(cafile=self.cert)
        return context


def certificate_authority(folder: Path) -> CertificateAuthority:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.pem"),
             "-subj", "/CN=Test CA")  # fmt: skip
    return CertificateAuthority(folder)
