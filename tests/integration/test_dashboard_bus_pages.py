"""A long run's page shows its newest bus messages; older pages load on request."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from artoo_web.dashboard.messages import BUS_PAGE
from artoo_web.models import BusMessage

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def store(run, count: int) -> list[int]:
    BusMessage.objects.bulk_create(
        BusMessage(
            run=run,
            sender="R2",
            recipient="R3",
            type="Note",
            payload={"n": i},
        )
        for i in range(count)
    )
    return list(BusMessage.objects.filter(run=run).values_list("id", flat=True))


def shown(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<li id="msg-(\d+)"', html)]


def earlier_url(html: str) -> str | None:
    found = re.search(r'hx-get="([^"]+)"\s+hx-target="#bus-timeline"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_a_long_run_shows_its_newest_page_and_the_earlier_control(client, user, run):
    ids = store(run, BUS_PAGE + 5)
    client.force_login(user)

    html = client.get(reverse("run-detail", args=[run.id])).content.decode()

    assert shown(html) == ids[-BUS_PAGE:]
    assert f'data-last-id="{ids[-1]}"' in html
    assert earlier_url(html) == (
        reverse("run-bus", args=[run.id]) + f"?before={ids[-BUS_PAGE]}"
    )


def test_the_control_loads_the_page_before_and_then_goes(client, user, run):
    ids = store(run, BUS_PAGE + 5)
    client.force_login(user)
    html = client.get(reverse("run-detail", args=[run.id])).content.decode()

    response = client.get(earlier_url(html), headers=HTMX)
    part = response.content.decode()

    assert response.status_code == 200
    assert shown(part) == ids[:5]
    assert 'id="bus-earlier"' in part and 'hx-swap-oob="true"' in part
    assert earlier_url(part) is None


def test_a_middle_page_offers_the_page_before_it(client, user, run):
    ids = store(run, 2 * BUS_PAGE + 1)
    client.force_login(user)
    url = reverse("run-bus", args=[run.id])

    part = client.get(f"{url}?before={ids[-BUS_PAGE]}", headers=HTMX).content.decode()

    assert shown(part) == ids[1 : BUS_PAGE + 1]
    assert earlier_url(part) == f"{url}?before={ids[1]}"


def test_a_short_run_shows_every_message_and_no_control(client, user, run):
    ids = store(run, 3)
    client.force_login(user)

    html = client.get(reverse("run-detail", args=[run.id])).content.decode()

    assert shown(html) == ids
    assert earlier_url(html) is None


def test_another_user_cannot_read_the_earlier_messages(client, run, other_user):
    ids = store(run, 3)
    client.force_login(other_user)

    response = client.get(reverse("run-bus", args=[run.id]) + f"?before={ids[-1]}")

    assert response.status_code == 404
    assert "msg-" not in response.content.decode()


def test_the_earlier_messages_need_a_login_and_a_message_id(client, user, run):
    url = reverse("run-bus", args=[run.id])
    assert client.get(f"{url}?before=1").status_code == 302
    client.force_login(user)
    assert client.get(f"{url}?before=x").status_code == 400
