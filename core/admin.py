"""Base classes for the operator console's pages (Django admin)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is appended by services, never edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class GatedActionsAdmin(admin.ModelAdmin):
    """Operator actions each need their own permission (docs/contract.md §16).

    Django drops an action the user lacks from the menu and answers a forged POST of it with
    a quiet "No action selected"; we answer 403, so a refusal is never mistaken for a no-op.
    """

    def changelist_view(self, request, extra_context=None):
        if request.method == "POST":
            own = {self.get_action(action)[1] for action in self.actions or ()}
            chosen = set(request.POST.getlist("action")) & own
            if chosen - set(self.get_actions(request)):
                raise PermissionDenied
        return super().changelist_view(request, extra_context)
