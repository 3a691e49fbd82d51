"""Django's makemessages over the surfaces we translate (docs/contract.md §26), so that
`manage.py makemessages -l km` needs no list of what to skip: not the virtualenv, tests,
benchmarks or collected files, and not the operator console (console/, templates/admin/),
which stays English like the API. Keep catalogues free of line numbers, so that a change
elsewhere in a file does not rewrite them (README.md, "Adding a language")."""

from __future__ import annotations

from django.core.management.commands import makemessages

SKIPPED = [
    ".venv",
    "staticfiles",
    "media",
    "tests",
    "bench",
    "test-artifacts",
    "console",
    "templates/admin",
    "*.egg-info",
]


class Command(makemessages.Command):
    def handle(self, *args, **options):
        options["ignore_patterns"] = [*options.get("ignore_patterns", []), *SKIPPED]
        options["add_location"] = options.get("add_location") or "file"
        options["no_obsolete"] = True
        return super().handle(*args, **options)
