"""Complete catalogues (docs/contract.md §26): every string of the courier app, the recipient's
page, the notifications and the dashboard is marked, translated and not fuzzy, in every
language of settings.LANGUAGES.

`makemessages` runs into a copy of the catalogues (the repository's stay as they are), over
the sources as they are now: a string marked since the catalogue was last made comes out
untranslated. And the templates that couriers, recipients and shops read are scanned for text
left outside {% translate %}: a text node or a label attribute with words in it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

BASE = Path(settings.BASE_DIR)
TRANSLATED = [code for code, _ in settings.LANGUAGES if code != settings.LANGUAGE_CODE]
# What couriers and recipients read, every word of it through the catalogues.
SCANNED = [
    *sorted((BASE / "templates" / "tracking").glob("*.html")),
    BASE / "templates" / "_languages.html",
    *sorted((BASE / "couriers" / "templates" / "couriers").glob("*.html")),
    # What a shop reads: the dashboard, signing up and in.
    *sorted((BASE / "templates" / "dashboard").glob("*.html")),
    *sorted((BASE / "templates" / "registration").glob("*.html")),
]
_DROPPED = [  # what is no text a person reads, or is translated already
    r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}",
    r"{#.*?#}",
    r"{%\s*blocktranslate\b.*?{%\s*endblocktranslate\s*%}",
    r"<script\b.*?</script>",
    r"<style\b.*?</style>",
    r"{%.*?%}",
    r"{{.*?}}",
    r"&#?\w+;",
    # What a program reads, shown as it is typed: a command, an endpoint, a header or a JSON
    # sample in <code>, and a value or a column name in an element of class "mono" (a CSV
    # column's "motorbike", a phone "+855..."). The API's words stay English (§26).
    r"<code\b.*?</code>",
    r'<(\w+)\b[^>]*\bclass="[^"]*\bmono\b[^"]*"[^>]*>[^<]*</\1>',
    # An API field name, e.g. a column's heading: client_order_id, batch_id.
    r"\b[a-z]+(?:_[a-z]+)+\b",
]
# data-label: a table cell's heading, shown beside it on a phone (dashboard.css).
_READ_ATTRIBUTES = re.compile(r'\b(alt|title|aria-label|placeholder|data-label)="([^"]*)"')
_WORD = re.compile(r"[A-Za-z]{2,}")


def unmarked(source: str) -> list[str]:
    """The words of a template a person reads that are outside {% translate %}."""
    text = source
    for pattern in _DROPPED:
        text = re.sub(pattern, " ", text, flags=re.S)
    found = [
        f'{name}="{value}"' for name, value in _READ_ATTRIBUTES.findall(text) if _WORD.search(value)
    ]
    nodes = re.sub(r"<[^>]*>", "\n", text)
    # A block of a tag's attributes ({% block body_attrs %}) is no text node.
    nodes = re.sub(r'[\w-]+="[^"]*"', " ", nodes)
    found += [line.strip() for line in nodes.splitlines() if _WORD.search(line)]
    return found


@pytest.mark.parametrize("template", SCANNED, ids=lambda path: str(path.relative_to(BASE)))
def test_every_word_of_the_scanned_templates_is_marked(template):
    assert unmarked(template.read_text()) == []


def test_the_scan_finds_what_is_not_marked():
    assert unmarked('<p title="Map">{% translate "Map" %} Call us</p>') == [
        'title="Map"',
        "Call us",
    ]
    assert unmarked("{% blocktranslate %}Hello {{ name }}{% endblocktranslate %} {{ x }}") == []
    assert unmarked('<td data-label="Price">1</td>') == ['data-label="Price"']


def test_what_a_program_reads_is_left_as_it_is_typed():
    code = '<p><code>POST /api/v1/orders/bulk</code> <span class="mono">motorbike</span></p>'
    assert unmarked(code + "<th>client_order_id</th>") == []
    assert unmarked('<span class="mono">a <b>bold</b> word</span><th>Client order</th>') == [
        "bold",
        "word",
        "Client order",
    ]


@pytest.fixture
def catalogues(tmp_path, settings, monkeypatch):
    """makemessages over the sources into a copy of locale/: the copy's folder."""
    project = tmp_path / "project"
    project.mkdir()
    for entry in BASE.iterdir():
        if entry.name not in {"locale", ".venv", ".git", "staticfiles", "media"}:
            (project / entry.name).symlink_to(entry)
    shutil.copytree(BASE / "locale", project / "locale")
    settings.LOCALE_PATHS = [project / "locale"]
    monkeypatch.chdir(project)
    for language in TRANSLATED:
        call_command("makemessages", locale=[language], symlinks=True, verbosity=0)
        if any((BASE / "locale" / language / "LC_MESSAGES").glob("djangojs.po")):
            call_command(
                "makemessages", locale=[language], domain="djangojs", symlinks=True, verbosity=0
            )
    return project / "locale"


def entries(po: Path, *only: str) -> list[str]:
    """The msgids msgattrib picks out (--untranslated, --only-fuzzy), one line each."""
    out = subprocess.run(
        ["msgattrib", *only, "--no-obsolete", "--no-wrap", str(po)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    ids = re.findall(r'^msgid "(.*)"$', out, flags=re.M)
    return [msgid for msgid in ids if msgid]


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_marked_string_is_translated_and_none_is_fuzzy(catalogues, language):
    pos = sorted((catalogues / language / "LC_MESSAGES").glob("*.po"))
    assert pos, f"no catalogue for {language}: manage.py makemessages -l {language}"
    for po in pos:
        assert entries(po, "--untranslated") == [], f"untranslated in {po.name}"
        assert entries(po, "--only-fuzzy") == [], f"fuzzy in {po.name}"
        subprocess.run(["msgfmt", "--check", "-o", "/dev/null", str(po)], check=True)


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_catalogues_in_the_repository_are_the_sources_as_they_are(catalogues, language):
    """A string changed in the code is changed in the catalogue too (run makemessages)."""
    for po in sorted((catalogues / language / "LC_MESSAGES").glob("*.po")):
        ours = BASE / "locale" / language / "LC_MESSAGES" / po.name
        made = set(entries(po))
        kept = set(entries(ours))
        assert made - kept == set(), f"marked in the code, missing from {ours}"
        assert kept - made == set(), f"in {ours}, no longer in the code"


def test_the_compiled_catalogues_are_as_new_as_their_sources():
    """The pages read the .mo files: `make messages` (make run and make test run it)."""
    for po in sorted((BASE / "locale").glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        assert mo.exists(), f"{mo} is missing: make messages"
        assert mo.stat().st_mtime >= po.stat().st_mtime, f"{mo} is older: make messages"


def test_a_word_with_several_meanings_is_translated_for_each():
    """ "Failed" is a drop that could not be delivered, a batch that created nothing, a webhook
    delivery and a message that never got through: Khmer says each differently."""
    from django.utils import translation

    from events.models import DeliveryStatus
    from notifications.models import MessageStatus
    from orders.models import BatchStatus, DropStatus

    labels = (DropStatus.FAILED, BatchStatus.FAILED, DeliveryStatus.FAILED, MessageStatus.FAILED)
    assert {str(status.label) for status in labels} == {"Failed"}
    with translation.override("km"):
        khmer = [str(status.label) for status in labels]
    assert "Failed" not in khmer
    assert khmer[0] not in khmer[1:] and khmer[2] != khmer[3]
