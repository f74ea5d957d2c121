"""The judging simulation report page: its four charts inline, sanitised, under the site's CSP;
and the sanitiser's allowlist on hostile SVG."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.services.judging.simulation import judging_simulation_create
from frontend.views.judging_reports import UnsafeSvg, svg_sanitised
from tests.annotation.services.judging.simulation_world import tiny_world
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _page(role: str, report_id: int):
    client = Client()
    client.force_login(make_user(role))
    return client.get(f"/reports/{report_id}/")


def test_the_report_page_inlines_the_four_charts_and_links_the_files():
    _, pool, _ = tiny_world()
    report = judging_simulation_create(pool=pool, params={"strategies": ["shallow_first", "sampled"], "replays": 2})
    response = _page("researcher", report.pk)
    assert response.status_code == 200
    html = response.content.decode()
    assert "script-src 'self'" in response["Content-Security-Policy"]
    svgs = re.findall(r"<svg\b[^>]*>", html)
    for chart in ("relevant_found", "metric_error", "kendall_tau", "ci_coverage"):
        assert f"{chart}.svg" in html  # the download link
    assert len([s for s in svgs if 'role="img"' in s]) >= 4
    charts = html[html.index('id="charts-title"'):]
    charts = charts[:charts.index("</section>")]
    assert "<script" not in charts and " style=" not in charts and " on" not in re.sub(r"\s+", " ", "".join(svgs))
    assert f"/api/v1/reports/{report.pk}/file/?name=curves.csv" in html
    assert "Relevant pairs found against judgments spent" in html
    assert "Share judged for 90% of relevant" in html  # the tables' headers in words


def test_raters_do_not_see_report_pages():
    _, pool, _ = tiny_world()
    report = judging_simulation_create(pool=pool, params={"strategies": ["shallow_first"], "replays": 1})
    assert _page("rater", report.pk).status_code in (302, 403, 404)


HOSTILE = """<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10"
  onload="alert(1)">
  <title id="t">chart</title>
  <script>alert(2)</script>
  <style>rect { fill: red }</style>
  <a href="javascript:alert(3)"><rect width="5" height="5"/></a>
  <foreignObject><div xmlns="http://www.w3.org/1999/xhtml">hi</div></foreignObject>
  <image href="https://evil.example/x.png"/>
  <g clip-path="url(#c)" fill="url(https://evil.example/#p)">
    <line x1="0" y1="0" x2="1" y2="1" style="stroke: #123456; stroke-width: 2; behavior: url(x.htc)" onclick="x()"/>
    <text x="1" y="2" aria-labelledby="t">a &lt; b</text>
  </g>
</svg>"""


def test_the_sanitiser_keeps_drawing_and_drops_everything_active():
    out = str(svg_sanitised(HOSTILE, prefix="chart-x"))
    for gone in ("script", "alert", "<style", "<a ", "foreignObject", "<image", "evil.example", "onclick", "onload",
                 "behavior", "htc"):
        assert gone not in out, gone
    line = re.search(r"<line [^>]*>", out).group(0)  # style= became presentation attributes
    assert 'stroke="#123456"' in line and 'stroke-width="2"' in line and 'x2="1"' in line
    assert 'clip-path="url(#chart-x-c)"' in out and 'id="chart-x-t"' in out  # ids prefixed per chart
    assert 'aria-labelledby="chart-x-t"' in out and "a &lt; b" in out
    assert out.startswith('<svg viewBox="0 0 10 10" role="img" xmlns="http://www.w3.org/2000/svg">')


@pytest.mark.parametrize("text", [
    '<!DOCTYPE svg [<!ENTITY x "y">]><svg xmlns="http://www.w3.org/2000/svg">&x;</svg>',
    "<html><body>not svg</body></html>",
    "<svg",
])
def test_the_sanitiser_refuses_what_is_not_a_plain_svg_document(text):
    with pytest.raises(UnsafeSvg):
        svg_sanitised(text, prefix="c")
