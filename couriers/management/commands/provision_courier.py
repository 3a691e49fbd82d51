"""provision_courier: a courier who can sign in to the courier app (docs/contract.md §20)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from couriers.services import CourierRefused, provision_courier


class Command(BaseCommand):
    help = "Create a courier who signs in to /courier/ with phone and password."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--phone", required=True, help="E.164, e.g. +85512345678")
        parser.add_argument("--vehicle", default="motorbike", help="a vehicle type's code")
        parser.add_argument("--password", required=True)
        parser.add_argument("--json", action="store_true", help='print {"courier_id": …}')

    def handle(self, *args, name, phone, vehicle, password, json: bool, **options):
        try:
            courier = provision_courier(name=name, phone=phone, vehicle=vehicle, password=password)
        except CourierRefused as refused:
            raise CommandError(str(refused)) from refused
        if json:
            self.stdout.write(_dumps({"courier_id": courier.pk}))
        else:
            self.stdout.write(f"Courier {courier.pk} ({courier.name}) signs in with {phone}.")


def _dumps(value: dict) -> str:
    return json.dumps(value)
