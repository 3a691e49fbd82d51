"""axe-core, the accessibility engine, from npm: fetched once, checked, run inside a page.

`make test` fetches the pinned tarball from the npm registry (tests need no Node): its
SHA-512 must match the registry's integrity value below, or nothing is kept. The engine is
injected into the page by Playwright and run there; a test fails on any serious or critical
violation (tests/browser/test_accessibility.py: the dashboard, the admin index and the
tracking page).

    python tests/browser/axe.py     # fetch it now (what `make test-deps` does)
"""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

AXE_VERSION = "4.14.1"
TARBALL = f"https://registry.npmjs.org/axe-core/-/axe-core-{AXE_VERSION}.tgz"
# `npm view axe-core@4.14.1 dist.integrity`
INTEGRITY = (
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2r"
    "hu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
)
CACHE = Path(__file__).resolve().parents[2] / ".cache" / f"axe-core-{AXE_VERSION}.min.js"
BLOCKING = ("serious", "critical")
TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice")


def axe_script() -> Path:
    """The path of axe.min.js, fetched and verified on first use."""
    if not CACHE.exists():
        with urllib.request.urlopen(TARBALL, timeout=60) as response:
            tarball = response.read()
        digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
        if digest != INTEGRITY:
            raise RuntimeError(f"axe-core {AXE_VERSION} from npm does not match its integrity")
        with tarfile.open(fileobj=io.BytesIO(tarball)) as archive:
            script = archive.extractfile("package/axe.min.js").read()
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_bytes(script)
    return CACHE


def violations(page, *, exclude: list[str] = ()) -> list[dict]:
    """Serious and critical axe violations of the page as it is now (WCAG 2.1 A and AA)."""
    page.add_script_tag(path=str(axe_script()))
    result = page.evaluate(
        """async ([exclude, tags]) => await axe.run(
            {include: [document], exclude: exclude.map((s) => [s])},
            {runOnly: {type: "tag", values: tags}}
        )""",
        [list(exclude), list(TAGS)],
    )
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "targets": [n["target"] for n in v["nodes"]][:5],
        }
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]


def assert_accessible(page, *, exclude: list[str] = ()) -> None:
    found = violations(page, exclude=exclude)
    assert not found, "axe-core: serious or critical violations:\n" + "\n".join(
        f"- {v['impact']} {v['id']}: {v['help']} at {v['targets']}" for v in found
    )


if __name__ == "__main__":
    print(axe_script())
    sys.exit(0)
