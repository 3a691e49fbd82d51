"""collectstatic's storage with DEBUG off (core/static.py): hashed and gzipped always,
brotli-compressed as STATIC_BROTLI says; the suite's shared collection is gzip only."""

from __future__ import annotations

from core.static import CompressedStatic


def compressed_copies(settings, tmp_path, *, brotli: bool) -> set[str]:
    settings.STATIC_BROTLI = brotli
    (tmp_path / "app.js").write_text("var delivered = 'a drop, on time';\n" * 400)
    storage = CompressedStatic(location=tmp_path, base_url="/static/")
    return {name for _, name in storage.compress_files(["app.js"])}


def test_brotli_and_gzip_copies_by_default(settings, tmp_path):
    assert compressed_copies(settings, tmp_path, brotli=True) == {"app.js.gz", "app.js.br"}


def test_gzip_only_when_brotli_is_off(settings, tmp_path):
    assert compressed_copies(settings, tmp_path, brotli=False) == {"app.js.gz"}
    assert not (tmp_path / "app.js.br").exists()


def test_the_suites_collection_is_hashed_and_gzipped_without_brotli(collected_static):
    files = [path.name for path in collected_static.rglob("*") if path.is_file()]
    assert "staticfiles.json" in files  # the manifest of hashed names
    assert any(name.startswith("dashboard.") and name.endswith(".css.gz") for name in files)
    assert not [name for name in files if name.endswith(".br")]
