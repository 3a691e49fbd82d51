"""Signing out of the courier app in a real browser (docs/couriers.md "Signing in"): the Sign
out button posts with the page's CSRF token and lands on the sign-in page, and the app's pages
send there afterwards; a new password set by an operator does the same at the next tap."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from couriers.services import set_courier_password
from tests.browser.test_courier_app import courier, phone, sign_in  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_sign_out_lands_on_sign_in_and_the_app_stays_there(courier, phone):  # noqa: F811
    page = phone()
    sign_in(page, courier)

    page.get_by_role("button", name="Sign out").click()

    expect(page).to_have_url(re.compile(r"/courier/sign-in$"))
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    page.goto("/courier/")
    expect(page).to_have_url(re.compile(r"/courier/sign-in$"))
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)


def test_a_new_password_signs_the_open_app_out(courier, phone):  # noqa: F811
    page = phone()
    sign_in(page, courier)

    set_courier_password(courier=courier, password="a brand new password")
    page.reload()

    expect(page).to_have_url(re.compile(r"/courier/sign-in$"))
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
