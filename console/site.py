"""The operator console's admin site: Django's, with the index grouped by what operators look
after rather than by the app a model happens to live in."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.urls import re_path, reverse

# Sections of the index that gather models of several apps: section label -> its name and
# the models in it ("app_label.model_name"). The courier is couriers.Driver, what it rides is
# fleet's, what it earns its pay plans; an operator looking for couriers finds all in one place.
SECTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "couriers": (
        "Couriers",
        frozenset(
            {
                "couriers.driver",
                "couriers.payplan",
                "fleet.vehicletype",
                # The cash desk (console/cash.py, docs/contract.md §23).
                "billing.couriercashaccount",
                "billing.hubcashentry",
            }
        ),
    ),
}
_SECTION_OF = {model: label for label, (_, models) in SECTIONS.items() for model in models}


def _section_of(model_dict: dict, app: dict) -> str:
    meta = model_dict["model"]._meta
    return _SECTION_OF.get(f"{meta.app_label}.{meta.model_name}", app["app_label"])


class ConsoleSite(admin.AdminSite):
    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        """The index's sections: each app's models, less those a section in SECTIONS takes.

        With an app_label (a section's own page), the section of that label; for an app whose
        models all moved (fleet), the section that holds them, so its breadcrumb still leads
        somewhere.
        """
        sections: dict[str, dict] = {}
        held_by: dict[str, set[str]] = {}  # app label -> the sections holding its models
        for app in super().get_app_list(request):
            for model_dict in app["models"]:
                label = _section_of(model_dict, app)
                if label not in sections:
                    sections[label] = self._section(app, label)
                sections[label]["models"].append(model_dict)
                held_by.setdefault(app["app_label"], set()).add(label)
        listed = sorted(sections.values(), key=lambda section: section["name"].lower())
        for section in listed:
            section["models"].sort(key=lambda model_dict: model_dict["name"])
        if app_label is None:
            return listed
        wanted = {app_label} if app_label in sections else held_by.get(app_label, set())
        return [section for section in listed if section["app_label"] in wanted]

    def _section(self, app: dict, label: str) -> dict:
        if label == app["app_label"]:
            return {**app, "models": []}
        return {
            "name": SECTIONS[label][0],
            "app_label": label,
            "app_url": reverse(
                "admin:app_list", kwargs={"app_label": label}, current_app=self.name
            ),
            "has_module_perms": True,
            "models": [],
        }

    def get_urls(self):
        # A section's own page (/admin/couriers/), beside the apps' pages Django makes; first,
        # since Django's list ends with a catch-all.
        labels = "|".join(SECTIONS)
        section_page = self.admin_view(self.app_index)
        own = [re_path(rf"^(?P<app_label>{labels})/$", section_page, name="app_list")]
        return own + super().get_urls()


class ConsoleAdminConfig(AdminConfig):
    """django.contrib.admin with the console's site as admin.site (config/settings.py)."""

    default_site = "console.site.ConsoleSite"
