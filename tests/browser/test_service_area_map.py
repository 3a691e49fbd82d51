"""A service area drawn on the console's map (console/coverage.py, console/area_map.js):
Leaflet.draw's tools change the area, the GeoJSON text follows the map and the map follows
the text, and what is saved is what was drawn."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from geo.geometry import geometry_from_geojson
from geo.models import ServiceArea
from tests.browser.axe import assert_accessible
from tests.browser.helpers import admin_log_in
from tests.geo.helpers import polygon

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CENTRE = polygon(104.88, 11.53, 104.96, 11.60)


def drag(page: Page, handle, dx: float, dy: float) -> None:
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y + dy, steps=8)
    page.mouse.up()


def click_at(page: Page, the_map, points: list[tuple[float, float]]) -> None:
    """Clicks at each point, given as shares of the map's width and height."""
    box = the_map.bounding_box()
    for share_x, share_y in points:
        page.mouse.click(box["x"] + box["width"] * share_x, box["y"] + box["height"] * share_y)
        # As a person clicks: Leaflet.draw drops clicks that follow each other within a few
        # milliseconds (they look like a double click).
        page.wait_for_timeout(300)


def area_text(page: Page) -> dict:
    return json.loads(page.locator("#id_geojson").input_value())


def test_an_operator_moves_a_corner_of_an_area_on_the_map(operator, page):
    area = ServiceArea.objects.create(name="Phnom Penh centre", geojson=CENTRE)
    admin_log_in(page)
    page.goto(f"/admin/geo/servicearea/{area.pk}/change/")
    the_map = page.get_by_test_id("area-map")
    expect(the_map.locator("path.leaflet-interactive")).to_have_count(1)
    expect(page.get_by_text("GeoJSON (advanced)")).to_be_visible()
    assert_accessible(page, exclude=[".breadcrumbs"])  # Django admin's own, on every page

    page.get_by_role("link", name="Edit layers").click()
    corners = the_map.locator(".leaflet-editing-icon")
    expect(corners).to_have_count(8)  # four corners and four middles
    drag(page, corners.first, 60, -40)

    moved = area_text(page)  # the text follows the map as the corner moves
    assert moved["type"] == "Polygon" and moved != CENTRE
    before, after = CENTRE["coordinates"][0][:-1], moved["coordinates"][0][:-1]
    (was,) = [corner for corner in before if corner not in after]  # one corner moved...
    (now,) = [corner for corner in after if corner not in before]
    assert now[0] > was[0] and now[1] > was[1]  # ...right and up, as it was dragged
    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.get_by_text("was changed successfully")).to_be_visible()
    area.refresh_from_db()
    assert area.geojson == moved
    geometry_from_geojson(area.geojson)  # still a valid area


def test_an_operator_draws_a_new_area_and_the_text_follows(operator, page):
    admin_log_in(page)
    page.goto("/admin/geo/servicearea/add/")
    page.get_by_label("Name").fill("Chbar Ampov")
    the_map = page.get_by_test_id("area-map")
    expect(page.get_by_test_id("area-map-status")).to_contain_text("No area yet")

    page.get_by_role("link", name="Draw a polygon").click()
    click_at(page, the_map, [(0.3, 0.3), (0.7, 0.3), (0.5, 0.7), (0.3, 0.3)])

    expect(the_map.locator("path.leaflet-interactive")).to_have_count(1)
    drawn = area_text(page)
    assert drawn["type"] == "Polygon" and len(drawn["coordinates"][0]) == 4  # a closed triangle
    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.get_by_text("was added successfully")).to_be_visible()
    assert ServiceArea.objects.get(name="Chbar Ampov").geojson == drawn


def test_typing_geojson_redraws_the_map(operator, page):
    area = ServiceArea.objects.create(name="Phnom Penh centre", geojson=CENTRE)
    admin_log_in(page)
    page.goto(f"/admin/geo/servicearea/{area.pk}/change/")
    the_map = page.get_by_test_id("area-map")
    page.get_by_text("GeoJSON (advanced)").click()
    two_parts = {
        "type": "MultiPolygon",
        "coordinates": [CENTRE["coordinates"], polygon(104.97, 11.53, 105.0, 11.56)["coordinates"]],
    }

    page.locator("#id_geojson").fill("{not json")
    expect(page.get_by_test_id("area-map-status")).to_contain_text("not a Polygon or MultiPolygon")
    expect(the_map.locator("path.leaflet-interactive")).to_have_count(1)
    page.locator("#id_geojson").fill(json.dumps(two_parts))
    expect(the_map.locator("path.leaflet-interactive")).to_have_count(2)
    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.get_by_text("was changed successfully")).to_be_visible()
    area.refresh_from_db()
    assert area.geojson == two_parts
