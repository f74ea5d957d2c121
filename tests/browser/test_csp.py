"""Every page passes the Content-Security-Policy: Chromium visits each page of frontend/urls.py as
the role that may open it (and the error pages as whoever meets them), runs its scripts, and the
test fails on any `securitypolicyviolation` event or CSP error on the console.

A page added to frontend/urls.py without a visit here fails the coverage check at the end."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from annotation.models import Caption, Clip, Dataset, Job, Prediction, Run
from annotation.services.accounts.invitations import invitation_create
from annotation.services.crowd.studies import study_save
from annotation.demo.load import demo_load
from annotation.services.pools.moments import moment_pool_create
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from annotation.services.proxies.matrices import (proxy_analysis_report_create, proxy_matrices_compute,
                                                  proxy_ndcg_report_create)
from annotation.services.releases.create import release_create
from annotation.services.reports.create import report_create
from annotation.services.pools.sampled import sampled_pool_create
from tests.browser.conftest import log_in, snap
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

# Runs before any page script, in every document: collects what the policy blocked.
WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(
  `${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile || document.URL}:${e.lineNumber}`));
"""
# Pages whose URL takes no GET (logout) or that serve files, not pages (media).
NOT_PAGES = {"logout", "media"}


class CspWatch:
    """Visits pages and keeps every CSP complaint, from the page's own event and from the console."""

    def __init__(self, page, server: str):
        self.page, self.server = page, server
        self.console: list[str] = []
        self.violations: dict[str, list[str]] = {}
        self.visited: set[str] = set()
        page.add_init_script(WATCH_CSP)
        page.on("console", self._console)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.console.append(f"{self.page.url}: {message.text}")

    def visit(self, path: str, *, status: int = 200, ready: str | None = None, name: str | None = None):
        response = self.page.goto(f"{self.server}{path}")
        assert response.status == status, f"{path}: HTTP {response.status}"
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        self.settle(ready)
        self.collect(path)
        self.visited.add(name or resolve(path.split("?")[0]).url_name)
        snap(self.page, f"csp-{path}")

    def settle(self, ready: str | None = None) -> None:
        if ready:
            self.page.wait_for_function(ready) if ready.startswith("()") else self.page.wait_for_selector(ready)
        try:  # let the page's own requests (API calls, charts, clip preloads) finish
            self.page.wait_for_load_state("networkidle", timeout=5000)
        except Exception:  # noqa: BLE001 - a page that keeps a request open is still checked below
            pass

    def collect(self, label: str) -> None:
        found = self.page.evaluate("() => window.__cspViolations")
        assert found is not None, "the violation listener did not run"
        if found:
            self.violations.setdefault(label, []).extend(found)


def frontend_page_names() -> set[str]:
    def walk(patterns, namespace):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, entry.namespace or namespace)
            elif isinstance(entry, URLPattern) and namespace == "frontend" and entry.name:
                yield entry.name
    return set(walk(get_resolver().url_patterns, None)) - NOT_PAGES


def dataset_with(name: str, clips: int, captions: int, duration: float | None = None) -> Dataset:
    dataset = Dataset.objects.create(name=name)
    made = [Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}", duration=duration)
            for i in range(1, clips + 1)]
    for i in range(1, captions + 1):
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=f"a red shape number {i} moves",
                               original_clip=made[(i - 1) % clips])
    return dataset


def run_of(dataset: Dataset, name: str, rows: list[tuple], kind: str = Run.Kind.CLIP) -> Run:
    """rows: (caption, clip[, start, end]) in rank order per caption."""
    run = Run.objects.create(dataset=dataset, name=name, kind=kind, checksum=name)
    captions = {c.external_id: c for c in dataset.captions.all()}
    clips = {c.external_id: c for c in dataset.clips.all()}
    ranks: dict[str, int] = {}
    for caption, clip, *span in rows:
        ranks[caption] = ranks.get(caption, 0) + 1
        Prediction.objects.create(run=run, caption=captions[caption], clip=clips[clip], rank=ranks[caption],
                                  score=1 - ranks[caption] / 100, start=span[0] if span else None,
                                  end=span[1] if span else None)
    return run


@pytest.fixture
def site():
    """The demo (pool, ranking study, accounts) plus a report of every kind the pages show."""
    demo = demo_load()
    accounts = {a["role"]: (a["username"], a["password"]) for a in demo["accounts"]}
    reports = [report_create(pool=demo["pool"], kind="agreement", params={"n_boot": 0}),
               report_create(pool=demo["pool"], kind="metrics")]
    job = Job.objects.create(kind="import_run", status=Job.Status.SUCCEEDED, params={"name": "model-x"},
                             progress_done=9, progress_total=9, result={"run_id": demo["runs"][0].pk})

    moments_data = dataset_with("moments", clips=3, captions=2, duration=10)
    spans = moment_pool_create(dataset=moments_data, name="spans", runs=[
        run_of(moments_data, "moment-A", [("q1", "v1", 0, 10), ("q2", "v2", 0, 5)], kind=Run.Kind.MOMENT),
        run_of(moments_data, "moment-B", [("q1", "v2", 0, 10), ("q2", "v1", 0, 5)], kind=Run.Kind.MOMENT)])
    moment_metrics = moment_metrics_report_create(pool=spans, ks=(1, 2))
    deep_data = dataset_with("deep", clips=30, captions=3)
    deep_runs = [run_of(deep_data, f"deep-{shift}", [(f"q{q}", f"v{(q * 5 + shift + 7 * r) % 30 + 1}")
                                                    for q in (1, 2, 3) for r in range(20)]) for shift in (0, 1)]
    deep = sampled_pool_create(dataset=deep_data, name="deep", runs=deep_runs, strata=[[1, 2, 1], [3, 20, 0.25]], seed=1)
    infap = infap_report_create(pool=deep)

    proxy_data = dataset_with("proxies", clips=4, captions=4)
    (modern,) = proxy_matrices_compute(dataset=proxy_data, proxies=["bow"], mode="modern")
    (paper,) = proxy_matrices_compute(dataset=proxy_data, proxies=["bow"], mode="paper")
    ranked = run_of(proxy_data, "proxy-run", [(f"q{q}", f"v{v}") for q in range(1, 5) for v in range(1, 5)])
    proxy_reports = [proxy_ndcg_report_create(run=ranked, artefact=modern),
                     proxy_analysis_report_create(dataset=proxy_data, artefacts=[modern, paper], thresholds=[0.3, 1.0])]
    release = release_create(allow_unresolved=True, pools=[demo["pool"]], name="demo-fire")
    return {"demo": demo, "accounts": accounts, "reports": reports, "job": job, "spans": spans, "release": release,
            "moment_metrics": moment_metrics, "deep": deep, "infap": infap, "proxy_reports": proxy_reports}


def test_every_page_passes_the_content_security_policy(browser, server, site, tmp_path):
    demo, accounts = site["demo"], site["accounts"]
    pool, study, dataset = demo["pool"], demo["study"], demo["dataset"]

    def session(role: str | None) -> CspWatch:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
        watch = CspWatch(page, server)
        watches.append(watch)
        if role:
            log_in(page, server, *accounts[role])
            watch.settle()
            watch.collect(f"/ as {role}")
            watch.visited.add("home")
        return watch

    contexts, watches, errors = [], [], []
    try:
        # Signed out: the login page, a wrong password, the lockout page, a page that does not exist.
        anonymous = session(None)
        anonymous.visit("/login/")
        anonymous.page.fill("#id_username", "nobody")
        anonymous.page.fill("#id_password", "wrong")
        anonymous.page.click("button[type=submit]")
        anonymous.page.wait_for_selector("#login-error")
        anonymous.collect("/login/ refused")
        anonymous.visit("/no-such-page/", status=404, name="(404)")
        # An invitation link, as a rater opens it to set their own password.
        invited = get_user_model().objects.get(username=accounts["rater"][0])
        anonymous.visit(f"/invite/{invitation_create(user=invited).token}/")

        # A rater: their start page, judging (a training pair answered, so its feedback shows too),
        # ranking, and the page they may not open.
        rater = session("rater")
        rater.page.wait_for_selector(f"a[href='/judge/{pool.pk}/']")
        rater.visit(f"/judge/{pool.pk}/", ready="() => document.getElementById('judge').dataset.armed === 'true'")
        rater.page.keyboard.press("1")
        rater.page.wait_for_selector("#feedback[data-result]")
        rater.collect("judge feedback")
        rater.page.click("#guidelines-open")
        rater.page.wait_for_selector("#guidelines[open]")
        rater.collect("judge guidelines")
        rater.visit(f"/rank/{study.pk}/", ready="() => document.getElementById('rank').dataset.armed === 'true'")
        rater.visit("/admin-ui/", status=403, name="(403)")

        # A researcher: datasets, reports and moments, read-only.
        researcher = session("researcher")
        researcher.visit("/reports/")
        researcher.visit(f"/moments/pools/{site['spans'].pk}/")
        researcher.visit("/account/token/")
        researcher.visit("/releases/")
        researcher.visit(f"/releases/{site['release'].pk}/")
        # A run submitted from the release page: the form posts to release-submit, which sends the
        # researcher back to the page (its answer checked like any page's).
        run_file = tmp_path / "submitted.trec"
        dataset_of_release = site["release"].dataset
        caption = dataset_of_release.captions.order_by("pk").first().external_id
        clip = dataset_of_release.clips.order_by("pk").first().external_id
        run_file.write_text(f"{caption} Q0 {clip} 1 0.9 submitted\n")  # scored, so the admin can accept it
        researcher.page.set_input_files("#release-submission-form [name=file]", str(run_file))
        researcher.page.fill("#release-submission-form [name=name]", "submitted-model")
        with researcher.page.expect_navigation():
            researcher.page.click("#release-submission-form [type=submit]")
        researcher.settle()
        researcher.collect("release-submit")
        researcher.visited.add("release-submit")

        # An admin: every admin page, with their forms and charts.
        admin = session("admin")
        for path in ("/admin-ui/", f"/admin-ui/datasets/{dataset.pk}/", "/admin-ui/pools/", f"/admin-ui/pools/{pool.pk}/",
                     f"/admin-ui/pools/{pool.pk}/attention/", "/admin-ui/raters/", "/admin-ui/researchers/",
                     f"/admin-ui/jobs/{site['job'].pk}/",
                     "/reports/", *(f"/reports/{r.pk}/" for r in site["reports"]), "/moments/",
                     f"/moments/pools/{site['spans'].pk}/", f"/moments/pools/{site['deep'].pk}/",
                     f"/moments/pools/{site['spans'].pk}/moment-metrics/{site['moment_metrics'].pk}/",
                     f"/moments/pools/{site['deep'].pk}/infap/{site['infap'].pk}/", "/proxies/",
                     *(f"/proxies/reports/{r.pk}/" for r in site["proxy_reports"]),
                     "/releases/", f"/releases/{site['release'].pk}/"):
            admin.visit(path)
        # The admin's switch for anonymous submissions posts to release-submission-policy, which
        # sends them back to the release page.
        admin.visit(f"/releases/{site['release'].pk}/")
        with admin.page.expect_navigation():
            admin.page.click("#release-submission-policy [type=submit]")
        admin.settle()
        admin.collect("release-submission-policy")
        admin.visited.add("release-submission-policy")
        # The researcher's run, once scored, has an accept form on the admin's release page; it posts
        # to release-submission-accept, which sends the admin back to the page.
        for _ in range(60):
            if admin.page.locator("form.submission-accept").count():
                break
            admin.page.wait_for_timeout(500)
            admin.page.reload()
        with admin.page.expect_navigation():
            admin.page.click("form.submission-accept [type=submit]")
        admin.settle()
        admin.collect("release-submission-accept")
        admin.visited.add("release-submission-accept")
        # A refused form shows its problems inline (elements made by the page script).
        refused = tmp_path / "known.csv"
        refused.write_text("caption,clip,answer,role,explanation\nno-such-caption,no-such-clip,maybe,gold,\n")
        admin.visit(f"/admin-ui/pools/{pool.pk}/")
        admin.page.set_input_files("#known-file", str(refused))
        admin.page.click("#known-upload [type=submit]")
        admin.page.wait_for_selector("#known-upload .issues")
        admin.collect("known-pairs form refused")
        # Django's own admin pages (Records), the lockout records among them.
        for path in ("/admin/", "/admin/auth/user/", "/admin/auth/user/add/", "/admin/axes/accessattempt/"):
            admin.visit(path, name=f"(django admin {path})")

        # The detectors work: a style attribute added now is reported, as an event and on the console.
        before = len(admin.console)
        with admin.page.expect_console_message(lambda m: "Content Security Policy" in m.text):
            probe = admin.page.evaluate("""() => new Promise((done) => {
                document.addEventListener('securitypolicyviolation', (e) => done(e.violatedDirective), {once: true});
                document.body.insertAdjacentHTML('beforeend', '<b style="color: red">probe</b>'); })""")
        assert probe.startswith("style-src") and len(admin.console) > before
        del admin.console[before:]

        # A crowd worker, arriving by the study link (signed in by it): consent, guidelines, the
        # judging page with the quota bar, stopping for now, coming back and meeting the quota, the
        # completion page; and the admin's rater-quality page.
        crowd = study_save(pool=pool, platform="prolific", title="Crowd study", completion_code="CSPDONE", quota_pairs=1,
                           consent_text="Your answers are stored.", training_required=False)
        admin.visit(f"/admin-ui/pools/{pool.pk}/quality/")
        worker = session(None)
        worker.visit(f"/study/{crowd.token}/?PROLIFIC_PID=cspworker1&STUDY_ID=st&SESSION_ID=se", ready="#consent-agree",
                     name="study-entry")
        worker.visited.add("study-stage")
        worker.page.click("#consent-agree")
        worker.page.wait_for_selector("#guidelines-start")
        worker.collect("study guidelines")
        worker.page.click("#guidelines-start")
        worker.settle("() => document.getElementById('judge')?.dataset.armed === 'true'")
        worker.collect("study work")
        worker.page.click("#crowd-leave")
        worker.page.wait_for_selector("#left-title")
        worker.collect("study left")
        worker.visited.update({"study-consent", "study-start", "study-work", "study-leave"})
        worker.visit(f"/study/{crowd.token}/work/", ready="() => document.getElementById('judge').dataset.armed === 'true'")
        worker.page.keyboard.press("2")
        worker.page.wait_for_selector("#completion-code", timeout=WAIT_MS)
        worker.collect("study completion")
        # A second worker returns the task from the "stopped for now" page; an admin opening a
        # study link is asked, and signs out only by choosing to.
        second = session(None)
        second.visit(f"/study/{crowd.token}/?PROLIFIC_PID=cspworker2&STUDY_ID=st&SESSION_ID=se", ready="#consent-agree",
                     name="study-entry")
        second.page.click("#consent-agree")
        second.page.click("#guidelines-start")
        second.page.click("#crowd-leave")
        second.page.click("#crowd-return")
        second.page.wait_for_selector("#returned-title")
        second.collect("study returned")
        second.visited.update({"study-enter", "study-return"})
        admin.visit(f"/study/{crowd.token}/?PROLIFIC_PID=cspadmin&STUDY_ID=st&SESSION_ID=se", ready="#choice-switch",
                    name="study-entry")
        admin.page.click("#choice-switch")
        admin.page.wait_for_selector("#consent-agree")
        admin.collect("study switch")
        admin.visited.add("study-switch")

        # Last, as it locks this address out: the lockout page.
        anonymous.visit("/login/")
        for _ in range(settings.AXES_FAILURE_LIMIT):
            response = anonymous.page.request.post(f"{server}/login/", form={
                "username": "locked-out", "password": "wrong",
                "csrfmiddlewaretoken": anonymous.page.input_value("input[name=csrfmiddlewaretoken]")})
        assert response.status == 429
        anonymous.page.fill("#id_username", "locked-out")
        anonymous.page.fill("#id_password", "wrong")
        anonymous.page.click("button[type=submit]")
        anonymous.page.wait_for_selector("text=Too many failed logins")
        anonymous.collect("lockout page")
    finally:
        for context in contexts:
            context.close()

    violations = {page: found for w in watches for page, found in w.violations.items()}
    assert violations == {}, f"CSP violations: {violations}"
    assert [line for w in watches for line in w.console] == []
    assert errors == [], f"JavaScript errors: {errors}"
    missing = frontend_page_names() - set().union(*(w.visited for w in watches))
    assert not missing, f"pages this test never visited: {sorted(missing)}"
