"""collectstatic's storage when DEBUG is off: whitenoise's hashed, compressed copies, with
brotli as STATIC_BROTLI says."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage


class CompressedStatic(CompressedManifestStaticFilesStorage):
    """Every file hashed and gzipped, and brotli-compressed too unless STATIC_BROTLI is off.

    Brotli at its best quality is ~90 % of collectstatic's CPU on this machine (36 s of
    39 s, the API docs' bundles most of it); whitenoise serves gzip to a browser when no .br
    copy exists. A deploy that must be quick, or the test suite (tests/conftest.py), turns
    it off (docs/deployment.md).
    """

    def create_compressor(self, **kwargs: Any) -> Compressor:
        return super().create_compressor(use_brotli=settings.STATIC_BROTLI, **kwargs)
