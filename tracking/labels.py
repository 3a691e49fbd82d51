"""Parcel labels (docs/contract.md §24): one A6 page per drop, 100 × 150 mm, with the
business, the recipient's first name, the area, and the drop's short code as text, as a
Code 128 barcode and as a QR code, for the courier to scan.

One label (GET /orders/<drop_id>/label.pdf) or many in one PDF, a page each (the dashboard's
batch page and orders list). What a label shows is read in one query for any number of
drops, always within one business (and, for the API, its key's environment): another's
drop is simply not found.
ReportLab draws the PDF, its barcodes included (docs/decisions.md, "Labels are drawn by
ReportLab").
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterable
from typing import NamedTuple

from django.db.models import QuerySet
from reportlab.graphics.barcode import code128
from reportlab.graphics.barcode.qrencoder import QRCode, QRErrorCorrectLevel
from reportlab.lib.units import mm
from reportlab.pdfgen.canvas import Canvas

from accounts.models import Business
from geo.services import load_coverage
from orders.models import Batch, Drop
from orders.selectors import stored_results

# ISO 216 A6, portrait.
PAGE_SIZE = (100 * mm, 150 * mm)
# The light margin a QR code needs around it, in modules (ISO/IEC 18004).
QR_QUIET_MODULES = 4
# How many drops one PDF may hold: a batch's most (docs/contract.md §4).
MAX_LABELS = 5000


class Label(NamedTuple):
    """What one label shows."""

    short_code: str
    business: str
    first_name: str
    area: str
    client_order_id: str  # the business's own reference


def drop_labels(
    *, business: Business, environments: Iterable[str], drop_ids: Iterable[uuid.UUID]
) -> list[Label]:
    """The labels of these drops of this business in these environments, in the order asked;
    drops that are not theirs (or do not exist) are left out."""
    ids = list(dict.fromkeys(drop_ids))[:MAX_LABELS]
    drops = Drop.objects.filter(business=business, environment__in=environments, pk__in=ids)
    by_id = dict(zip(ids, range(len(ids)), strict=True))
    labels = _labels_of(business, drops)
    return [label for _, label in sorted(labels, key=lambda pair: by_id[pair[0]])]


def batch_labels(*, business: Business, batch: Batch) -> list[Label]:
    """The labels of every drop the batch accepted, in the order they were sent (its stored
    answer's order), read by their ids."""
    ids = [uuid.UUID(entry.drop_id) for entry in stored_results(batch) if entry.accepted]
    return drop_labels(business=business, environments=[batch.environment], drop_ids=ids)


class LabelRow(NamedTuple):
    """What a label reads of its drop: the columns, in the query's order."""

    pk: uuid.UUID
    short_code: str
    recipient_name: str
    lat: float
    long: float
    client_order_id: str


def _labels_of(business: Business, drops: QuerySet[Drop]) -> list[tuple[uuid.UUID, Label]]:
    rows = [LabelRow._make(row) for row in drops.order_by().values_list(*LabelRow._fields)]
    coverage = load_coverage()
    areas = coverage.locate([row.lat for row in rows], [row.long for row in rows])
    return [
        (
            row.pk,
            Label(
                short_code=row.short_code,
                business=business.name,
                first_name=_first_name(row.recipient_name),
                area=coverage.areas[area[0]].name if area else "",
                client_order_id=row.client_order_id,
            ),
        )
        for row, area in zip(rows, areas, strict=True)
    ]


def _first_name(name: str) -> str:
    """The recipient's first name only: a label is read by anyone who handles the parcel."""
    words = name.split()
    return words[0] if words else ""


def labels_pdf(labels: list[Label]) -> bytes:
    """One PDF, an A6 page per label, in order."""
    out = io.BytesIO()
    canvas = Canvas(out, pagesize=PAGE_SIZE, pageCompression=1)
    canvas.setTitle("Parcel labels" if len(labels) != 1 else f"Label {labels[0].short_code}")
    for label in labels:
        _draw(canvas, label)
        canvas.showPage()
    canvas.save()
    return out.getvalue()


def _draw(canvas: Canvas, label: Label) -> None:
    width, height = PAGE_SIZE
    left = 8 * mm
    canvas.setFont("Helvetica-Bold", 13)
    canvas.drawString(left, height - 14 * mm, label.business[:40])
    canvas.setLineWidth(0.8)
    canvas.line(left, height - 18 * mm, width - left, height - 18 * mm)
    canvas.setFont("Helvetica", 9)
    canvas.drawString(left, height - 26 * mm, "To")
    # The business's own reference, for whoever packs the parcel.
    canvas.drawRightString(width - left, height - 26 * mm, label.client_order_id[:40])
    canvas.setFont("Helvetica-Bold", 22)
    canvas.drawString(left, height - 36 * mm, label.first_name[:24])
    canvas.setFont("Helvetica", 9)
    canvas.drawString(left, height - 44 * mm, "Area")
    canvas.setFont("Helvetica-Bold", 14)
    canvas.drawString(left, height - 51 * mm, label.area[:36])
    # The barcode: 0.4 mm modules, 22 mm tall, centred, its quiet zones inside the page.
    barcode = code128.Code128(label.short_code, barWidth=0.4 * mm, barHeight=22 * mm)
    barcode.drawOn(canvas, (width - barcode.width) / 2, 70 * mm)
    canvas.setFont("Courier-Bold", 20)
    canvas.drawCentredString(width / 2, 61 * mm, label.short_code)
    _draw_qr(canvas, label.short_code, x=(width - 40 * mm) / 2, y=14 * mm, side=40 * mm)


def _draw_qr(canvas: Canvas, text: str, *, x: float, y: float, side: float) -> None:
    """A QR code of `text`, `side` square with its 4-module quiet zone, as one filled path:
    ReportLab's widget draws a shape per module and encodes twice, ~5x slower for a page."""
    code = QRCode(None, QRErrorCorrectLevel.M)
    code.addData(text)
    code.make()  # the version that fits, the mask of least penalty (ISO/IEC 18004)
    count = code.getModuleCount()
    module = side / (count + 2 * QR_QUIET_MODULES)
    left, top = x + QR_QUIET_MODULES * module, y + side - QR_QUIET_MODULES * module
    path = canvas.beginPath()
    for row in range(count):
        for col in range(count):
            if code.isDark(row, col):
                path.rect(left + col * module, top - (row + 1) * module, module, module)
    canvas.drawPath(path, stroke=0, fill=1)
