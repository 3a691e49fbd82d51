"""Sign-in forms' throttle: failed sign-ins counted per client address and per username."""

from __future__ import annotations

from django import forms

from accounts import ratelimit


class RateLimitedLoginMixin:
    """Failed sign-ins are counted per client address and per username from that address;
    past either limit (accounts/ratelimit.py) the form refuses.

    A password check costs ~270 ms of CPU on purpose, and Django hashes for an unknown username
    too (so timing does not tell which exist). So the lockouts, one cache read, come before
    authenticate(): a locked-out address or username is refused without any hashing, and a
    locked-out guesser learns nothing from further attempts, not even a correct password.
    """

    rate_limited_messages = {
        ratelimit.ADDRESS: (
            "Too many failed sign-in attempts from your address. "
            f"Try again in {ratelimit.WINDOW_SECONDS // 60} minutes."
        ),
        ratelimit.USERNAME: (
            "Too many failed sign-in attempts for this account from your address. "
            f"Try again in {ratelimit.WINDOW_SECONDS // 60} minutes, or reset your password."
        ),
        ratelimit.UNAVAILABLE: "Signing in is paused for a moment. Try again in a minute.",
    }

    def clean(self):
        username = (self.data.get("username") or "").strip()
        address = ratelimit.client_address(self.request)
        if locked := ratelimit.locked_out_by(username, address):
            raise forms.ValidationError(self.rate_limited_messages[locked], code="rate_limited")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            ratelimit.record_failure(username, address)
            raise
        # Only a sign-in that succeeded clears the count: a form with the password left out
        # also gets here, and must not reset a guesser's count between guesses.
        if self.get_user() is not None:
            ratelimit.clear_failures(username, address)
        return cleaned
