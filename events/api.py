"""HTTP for events and webhook endpoints: parse, call a service or selector, render."""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist
from django.utils import timezone
from rest_framework import viewsets
from rest_framework.decorators import action

from core.api import ApiError, envelope, json_body, validation_error
from core.formats import iso_z
from core.replica import reads_may_lag, reads_on_primary
from core.serializers import parse_query
from events.endpoints import (
    EndpointRefused,
    create_endpoint,
    delete_endpoint,
    resend_delivery,
    rotate_secret,
    send_test_event,
    update_endpoint,
)
from events.inputs import DeliveriesQuery, EndpointChange, EndpointCreate, EventsQuery
from events.models import WebhookEndpoint
from events.schema import (
    DELIVERIES,
    ENDPOINT,
    ENDPOINT_CREATE,
    ENDPOINT_DELETE,
    ENDPOINT_UPDATE,
    ENDPOINTS,
    EVENTS,
    RESEND,
    ROTATE_SECRET,
    SEND_TEST,
)
from events.selectors import (
    deliveries_of,
    delivery_object,
    delivery_page,
    endpoint_object,
    endpoints_of,
    event_object,
    event_seq,
    events_after,
    find_delivery,
    find_endpoint,
)


def _refused(exc: EndpointRefused) -> ApiError:
    return ApiError(409, exc.code, exc.message)


class EventViewSet(viewsets.ViewSet):
    @EVENTS
    @reads_may_lag
    def list(self, request):
        query = parse_query(request, EventsQuery)
        business, environment = request.auth.business, request.auth.environment
        after_seq = None
        if "after" in query:
            # On the primary: an id read there a moment ago may not have reached the replica,
            # and a page after it from the replica is only shorter (the feed is in commit order).
            with reads_on_primary():
                after_seq = event_seq(
                    business=business, environment=environment, public_id=query["after"]
                )
            if after_seq is None:
                raise validation_error(
                    [{"field": "after", "message": "No event with this id in this environment."}]
                )
        page = events_after(
            business=business,
            environment=environment,
            after_seq=after_seq,
            event_type=query.get("type"),
            limit=query["limit"],
        )
        return envelope({"events": [event_object(e) for e in page.rows], "has_more": page.has_more})


class WebhookEndpointViewSet(viewsets.ViewSet):
    lookup_url_kwarg = "endpoint_id"
    lookup_value_regex = "[^/]+"

    def _endpoint(self, request, endpoint_id: str) -> WebhookEndpoint:
        endpoint = find_endpoint(
            business=request.auth.business,
            environment=request.auth.environment,
            endpoint_id=endpoint_id,
        )
        if endpoint is None:
            raise ApiError(404, "NOT_FOUND", "No such webhook endpoint.")
        return endpoint

    @ENDPOINTS
    def list(self, request):
        endpoints = endpoints_of(
            business=request.auth.business, environment=request.auth.environment
        )
        return envelope({"endpoints": [endpoint_object(e) for e in endpoints]})

    @ENDPOINT_CREATE
    def create(self, request):
        body = EndpointCreate.parse(json_body(request))
        try:
            issued = create_endpoint(
                business=request.auth.business, environment=request.auth.environment, **body
            )
        except EndpointRefused as exc:
            raise _refused(exc) from exc
        return envelope({**endpoint_object(issued.endpoint), "secret": issued.secret}, 201)

    @ENDPOINT
    def retrieve(self, request, endpoint_id=None):
        return envelope(endpoint_object(self._endpoint(request, endpoint_id)))

    @ENDPOINT_UPDATE
    def partial_update(self, request, endpoint_id=None):
        endpoint = self._endpoint(request, endpoint_id)
        changes = EndpointChange.parse(json_body(request))
        try:
            endpoint = update_endpoint(endpoint=endpoint, **changes)
        except WebhookEndpoint.DoesNotExist as exc:  # deleted meanwhile
            raise ApiError(404, "NOT_FOUND", "No such webhook endpoint.") from exc
        return envelope(endpoint_object(endpoint))

    @ENDPOINT_DELETE
    def destroy(self, request, endpoint_id=None):
        endpoint = self._endpoint(request, endpoint_id)
        delete_endpoint(endpoint=endpoint)
        return envelope({"id": str(endpoint.pk), "deleted": True})

    @ROTATE_SECRET
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, endpoint_id=None):
        endpoint = self._endpoint(request, endpoint_id)
        try:
            issued = rotate_secret(endpoint=endpoint, at=timezone.now())
        except WebhookEndpoint.DoesNotExist as exc:
            raise ApiError(404, "NOT_FOUND", "No such webhook endpoint.") from exc
        endpoint = issued.endpoint
        return envelope(
            {
                **endpoint_object(endpoint),
                "secret": issued.secret,
                "previous_secret_expires_at": iso_z(endpoint.previous_secret_expires_at),
            }
        )

    @SEND_TEST
    @action(detail=True, methods=["post"], url_path="test")
    def send_test(self, request, endpoint_id=None):
        endpoint = self._endpoint(request, endpoint_id)
        try:
            event = send_test_event(endpoint=endpoint, at=timezone.now())
        except WebhookEndpoint.DoesNotExist as exc:
            raise ApiError(404, "NOT_FOUND", "No such webhook endpoint.") from exc
        except EndpointRefused as exc:
            raise _refused(exc) from exc
        return envelope(event_object(event))

    @DELIVERIES
    @action(detail=True, methods=["get"])
    def deliveries(self, request, endpoint_id=None):
        endpoint = self._endpoint(request, endpoint_id)
        query = parse_query(request, DeliveriesQuery)
        before = None
        if "before" in query:
            before = find_delivery(endpoint=endpoint, delivery_id=query["before"])
            if before is None:
                raise validation_error(
                    [{"field": "before", "message": "No delivery with this id at this endpoint."}]
                )
        page = delivery_page(endpoint=endpoint, before=before, limit=query["limit"])
        return envelope(
            {
                "deliveries": [delivery_object(d) for d in page.rows],
                "has_more": page.has_more,
            }
        )

    @RESEND
    @action(
        detail=True,
        methods=["post"],
        url_path=r"deliveries/(?P<delivery_id>[^/]+)/resend",
        url_name="resend",
    )
    def resend(self, request, endpoint_id=None, delivery_id=None):
        endpoint = self._endpoint(request, endpoint_id)
        delivery = find_delivery(endpoint=endpoint, delivery_id=delivery_id)
        if delivery is None:
            raise ApiError(404, "NOT_FOUND", "No such delivery of this endpoint.")
        try:
            resend_delivery(delivery=delivery, at=timezone.now())
            resent = deliveries_of(endpoint=endpoint).get(pk=delivery.pk)
        except ObjectDoesNotExist as exc:  # the endpoint was deleted meanwhile
            raise ApiError(404, "NOT_FOUND", "No such delivery of this endpoint.") from exc
        except EndpointRefused as exc:
            raise _refused(exc) from exc
        return envelope(delivery_object(resent))
