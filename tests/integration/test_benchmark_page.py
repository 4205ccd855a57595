"""A stored control benchmark: the store_benchmark command and the staff page."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from artoo_web.models import Benchmark, Run
from bench.control_report import Result, build_record, render

pytestmark = pytest.mark.django_db


def record_for(runs: dict[tuple[str, str], Run], session: str = "s1") -> dict:
    results = [
        Result(
            scenario,
            "recoverable",
            "environmental",
            "environmental",
            strategy,
            1,
            str(run.id),
            solved=strategy == "ggs",
            directive="accept" if strategy == "ggs" else "abandon",
            rounds=2,
            prompt_tokens=1000,
            completion_tokens=200,
            wall_s=40,
        )
        for (strategy, scenario), run in runs.items()
    ]
    record = build_record(
        {"name": "control", "session": session, "model": "local 1.5b"}, results
    )
    record["report"] = render(record)
    return record


@pytest.fixture
def stored(tmp_path, user):
    runs = {
        (strategy, "moved"): Run.objects.create(owner=user, raw_input=strategy)
        for strategy in ("ggs", "retry")
    }
    path = tmp_path / "control.json"
    path.write_text(json.dumps(record_for(runs)))
    out = StringIO()
    call_command("store_benchmark", str(path), stdout=out)
    return runs, out.getvalue()


def test_staff_see_the_latest_benchmark_with_its_chart_and_links_to_its_runs(
    client, staff_user, stored
):
    runs, said = stored
    client.force_login(staff_user)

    page = client.get(reverse("benchmark-latest")).content.decode()

    assert said.startswith(f"Stored benchmark #{Benchmark.objects.get().pk}")
    assert 'id="bench-chart-svg"' in page
    assert '<tr id="bench-ggs-1"><td>ggs</td><td>1</td><td>1/1</td>' in page
    assert "1/1 (100 %)" in page and "0/1 (0 %)" in page
    assert "GGS vs retry on recoverable scenarios (pass 1)" in page
    for run in runs.values():
        assert f'href="{reverse("run-detail", args=[run.id])}"' in page
    assert (
        client.get(reverse("run-detail", args=[runs["ggs", "moved"].id])).status_code
        == 200
    )


def test_a_run_of_the_memory_off_arm_is_marked_on_the_page(
    client, staff_user, user, tmp_path
):
    run = Run.objects.create(owner=user, raw_input="ggs")
    record = record_for({("ggs", "moved"): run})
    bare = {**record["results"][0], "pass_no": 2, "memory": False}
    record["results"].append(bare)
    path = tmp_path / "control.json"
    path.write_text(json.dumps(record))
    call_command("store_benchmark", str(path), stdout=StringIO())
    client.force_login(staff_user)

    page = client.get(reverse("benchmark-latest")).content.decode()

    assert page.count("<td>2, memory off</td>") == 1
    assert "<td>1</td><td>yes</td>" in page


def test_the_page_shows_the_newest_and_any_earlier_one_by_id(
    client, staff_user, stored, tmp_path
):
    first = Benchmark.objects.get()
    path = tmp_path / "second.json"
    path.write_text(json.dumps({**first.record, "session": "s2"}))
    call_command("store_benchmark", str(path), stdout=StringIO())
    client.force_login(staff_user)

    latest = client.get(reverse("benchmark-latest")).content.decode()
    earlier = client.get(reverse("benchmark-detail", args=[first.pk])).content.decode()

    assert 'id="bench-meta">s2 ' in latest
    assert 'id="bench-meta">s1 ' in earlier
    assert (
        client.get(reverse("benchmark-detail", args=[first.pk + 99])).status_code == 404
    )


def test_the_page_is_for_signed_in_staff_only(client, user, stored):
    anonymous = client.get(reverse("benchmark-latest"))
    client.force_login(user)
    not_staff = client.get(reverse("benchmark-latest"))

    assert anonymous.status_code == 302
    assert anonymous.url.startswith(reverse("login"))
    assert not_staff.status_code == 403


def test_with_nothing_stored_the_page_says_how_to_run_the_bench(client, staff_user):
    client.force_login(staff_user)

    page = client.get(reverse("benchmark-latest")).content.decode()

    assert 'id="bench-none"' in page and "bench/control.py" in page


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"not json", "not valid JSON"),
        (b"[1, 2]", "A record is a JSON object"),
        (b'{"name": "control"}', "'session'"),
        (b"\xff\xfe", "not valid UTF-8"),
        ("HUGE", "at most 5 MiB"),
    ],
)
def test_a_file_that_is_not_a_record_is_refused_and_nothing_is_stored(
    tmp_path, content, message
):
    path = tmp_path / "bad.json"
    if content == "HUGE":
        content = b" " * (5 * 1024 * 1024 + 1)
    path.write_bytes(content)

    with pytest.raises(CommandError, match=message):
        call_command("store_benchmark", str(path))
    assert not Benchmark.objects.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"results": [{"scenario": "x"}]}, r"results\[0\]\.strategy"),
        ({"summaries": "many"}, "'summaries' must be a list"),
        ({"chart": [{"strategy": "ggs", "pass": True}]}, r"chart\[0\]\.pass"),
        ({"model": "m\x00"}, "NUL"),
        ({"comparison": ["\ud800"]}, "lone surrogate"),
    ],
)
def test_a_record_of_the_wrong_shape_is_refused_naming_the_field(
    tmp_path, user, change, message
):
    run = Run.objects.create(owner=user, raw_input="x")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**record_for({("ggs", "moved"): run}), **change}))

    with pytest.raises(CommandError, match=message):
        call_command("store_benchmark", str(path))
    assert not Benchmark.objects.exists()


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command("store_benchmark", str(tmp_path / "none.json"))
