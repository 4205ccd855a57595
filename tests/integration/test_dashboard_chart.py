"""The server-side loss chart: a pure function of the rounds, escaped, accessible."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from artoo_web.charts import describe, loss_chart

SVG = "{http://www.w3.org/2000/svg}"


def rounds(*losses: float) -> list[dict]:
    return [
        {
            "judged": i,
            "transition": "init→refine" if i == 0 else "refine→success",
            "loss": {"D": min(1.0, loss), "P": 0.5, "Omega": 0.1 * i, "L": loss},
        }
        for i, loss in enumerate(losses)
    ]


def test_chart_plots_l_d_and_omega_for_every_round():
    root = ET.fromstring(str(loss_chart(rounds(0.8, 0.4, 0.1))))
    assert root.get("role") == "img"
    series = {
        g.get("class"): g
        for g in root.iter(f"{SVG}g")
        if g.find(f"{SVG}polyline") is not None
    }
    assert set(series) == {"series series-l", "series series-d", "series series-omega"}
    for group in series.values():
        assert len(group.findall(f"{SVG}circle")) == 3


def test_chart_has_a_title_and_a_text_description_of_its_values():
    root = ET.fromstring(str(loss_chart(rounds(0.8, 0.4))))
    assert root.find(f"{SVG}title").text == "Loss per round: L, D and Ω"
    desc = root.find(f"{SVG}desc").text
    assert "round 0 init→refine: L 0.800" in desc and "round 1 refine→success" in desc
    labelled = root.get("aria-labelledby").split()
    assert labelled == [
        root.find(f"{SVG}title").get("id"),
        root.find(f"{SVG}desc").get("id"),
    ]


def test_chart_escapes_every_label():
    hostile = rounds(0.5)
    hostile[0]["transition"] = '<script>alert("x")</script>'
    svg = str(loss_chart(hostile))
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    ET.fromstring(svg)


def test_chart_scales_above_one_and_says_when_there_is_no_round():
    tall = ET.fromstring(str(loss_chart(rounds(1.6))))
    ticks = [t.text for t in tall.iter(f"{SVG}text")]
    assert "1.60" in ticks
    empty = str(loss_chart([]))
    assert "No GGS decision yet" in empty
    assert describe([]) == "No GGS decision yet."


def test_a_round_with_missing_loss_terms_is_skipped_not_fatal():
    broken = [{"judged": 0, "transition": "init→abandon", "loss": {"L": "n/a"}}]
    root = ET.fromstring(str(loss_chart(broken)))
    assert not list(root.iter(f"{SVG}circle"))
