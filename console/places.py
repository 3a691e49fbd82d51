"""Operator console for the gazetteer's places: one by one, or loaded from a CSV file.

Loading is two steps (docs/operator.md): the upload shows a preview, every row with its
problems and what it would replace, and writes nothing; **Save** writes every valid row in
one transaction (geo.places.load_places). The preview carries the file's text signed, so
what is saved is exactly what was previewed, checked again at the moment it is saved.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import ADDITION, LogEntry
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from core.csv_files import MAX_FILE_BYTES, MAX_FILE_LABEL, CsvUnreadable
from geo.geocoders import forget_cached_results
from geo.models import Place
from geo.places import ALIAS_SEPARATOR, LoadedPlaces, load_places, read_places

LOAD_PERMISSION = "geo.load_places"
SIGNING_SALT = "console.places.load"
PREVIEW_SECONDS = 3600  # a preview left open longer is uploaded again
ROWS_SHOWN = 500  # of each table of the preview; past it they are counted


class PlacesFileForm(forms.Form):
    file = forms.FileField(
        label="CSV file",
        allow_empty_file=True,  # geo.places says so in its own words
        widget=forms.FileInput(attrs={"accept": ".csv,text/csv"}),
        help_text=(
            f"UTF-8, comma or semicolon separated, at most {MAX_FILE_LABEL}. Columns: name, "
            f"aliases (separated by {ALIAS_SEPARATOR}), lat, long; city if you like."
        ),
    )

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError(
                f"The file is {upload.size / 1024 / 1024:.1f} MB; at most {MAX_FILE_LABEL} can "
                "be loaded at once: split it into smaller files."
            )
        return b"".join(upload.chunks())


@admin.register(Place)
class PlaceAdmin(admin.ModelAdmin):
    list_display = ["name", "city", "lat", "long"]
    search_fields = ["name", "aliases", "city"]
    change_list_template = "admin/geo/place/change_list.html"

    def get_urls(self):
        own = [
            path("load/", self.admin_site.admin_view(self.load_view), name="geo_place_load"),
            path(
                "load/save/",
                self.admin_site.admin_view(self.save_view),
                name="geo_place_load_save",
            ),
        ]
        return own + super().get_urls()

    def has_load_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(LOAD_PERMISSION)

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_load": self.has_load_permission(request)}
        return super().changelist_view(request, extra_context)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        forget_cached_results()  # cached "not found" answers may now be found

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        forget_cached_results()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        forget_cached_results()

    def load_view(self, request: HttpRequest) -> HttpResponse:
        """GET: the upload form. POST: the file's preview, nothing written."""
        if not self.has_load_permission(request):
            raise PermissionDenied
        form = PlacesFileForm(request.POST or None, request.FILES or None)
        if request.method != "POST":
            return self._page(request, form=form)
        if not form.is_valid():
            return self._page(request, form=form, status=400)
        data = form.cleaned_data["file"]
        try:
            preview = read_places(data)
        except CsvUnreadable as unreadable:
            for message in unreadable.messages:
                form.add_error("file", message)
            return self._page(request, form=form, status=400)
        token = signing.dumps(
            {"user": request.user.pk, "text": data.decode("utf-8-sig")},
            salt=SIGNING_SALT,
            compress=True,
        )
        return self._page(
            request,
            form=PlacesFileForm(),
            preview=preview,
            valid=preview.valid,
            invalid=preview.invalid,
            more_valid=max(0, len(preview.valid) - ROWS_SHOWN),
            more_invalid=max(0, len(preview.invalid) - ROWS_SHOWN),
            token=token,
        )

    def save_view(self, request: HttpRequest) -> HttpResponse:
        """POST from a preview's Save: every valid row, in one transaction."""
        if not self.has_load_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return redirect(reverse("admin:geo_place_load"))
        try:
            signed = signing.loads(
                request.POST.get("token", ""), salt=SIGNING_SALT, max_age=PREVIEW_SECONDS
            )
        except signing.BadSignature:  # expired, altered, or not from this page
            messages.error(request, "That preview has expired: upload the file again.")
            return redirect(reverse("admin:geo_place_load"))
        if signed.get("user") != request.user.pk:
            raise PermissionDenied
        try:
            loaded = load_places(data=signed["text"].encode())
        except CsvUnreadable as unreadable:  # cannot happen to a previewed file
            messages.error(request, " ".join(unreadable.messages))
            return redirect(reverse("admin:geo_place_load"))
        if loaded.added:  # the console's log (Recent actions, each place's History)
            LogEntry.objects.log_actions(
                user_id=request.user.pk,
                queryset=loaded.added,
                action_flag=ADDITION,
                change_message="Loaded from a CSV file.",
            )
        messages.success(request, _loaded_sentence(loaded))
        return redirect(reverse("admin:geo_place_changelist"))

    def _page(self, request, *, form, status: int = 200, **context) -> TemplateResponse:
        return TemplateResponse(
            request,
            "admin/geo/place/load.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": "Load places from a CSV file",
                "form": form,
                "rows_shown": ROWS_SHOWN,
                "separator": ALIAS_SEPARATOR,
                **context,
            },
            status=status,
        )


def _loaded_sentence(loaded: LoadedPlaces) -> str:
    if not loaded.added:
        return f"No place saved: all {loaded.left_out} row(s) of the file have problems."
    replaced = (
        f", replacing {loaded.replaced} with the same name and city" if loaded.replaced else ""
    )
    left_out = f"; {loaded.left_out} row(s) with problems were left out" if loaded.left_out else ""
    return f"Saved {len(loaded.added)} place(s) from the file{replaced}{left_out}."
