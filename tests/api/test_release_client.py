"""The researcher's client (clients/python) against the real platform: a release of the
hand-worked example pool (tests/annotation/services/reports/test_report_metrics.py) is listed, downloaded
and verified over the live server's REST API, and the client's local `evaluate` gives exactly the
platform's `evaluate` numbers on the same qrels and run files (C@1/5/10, AP, nDCG@10)."""
from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.management import call_command
from rejudge_client import APIError, Client, evaluate, open_release

from annotation.services.accounts.users import api_token_for
from annotation.services.exports.labels import EXPORTS
from annotation.services.releases.create import release_create
from annotation.storage import stored_file_chunks
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user
from tests.objectstore import object_store  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.django_db(transaction=True)

# The client's names and trec_eval's names the platform prints for the same measures.
MEASURES = {"Success@1": "success_1", "Success@5": "success_5", "Success@10": "success_10", "AP": "map",
            "nDCG@10": "ndcg_cut_10"}


def _platform_scores(run, qrels_path) -> dict:
    out = io.StringIO()
    call_command("evaluate", str(run), "--judgments", str(qrels_path), "--judgments-format", "qrels",
                 "--measures", *MEASURES, "--output", "json", stdout=out)
    return json.loads(out.getvalue())


def test_the_client_downloads_verifies_and_scores_a_platform_release(live_server, tmp_path):
    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire", title="Example, corrected", licence="CC-BY-4.0",
                             authors=["A. Author"])
    token = api_token_for(user=make_user("researcher"))
    client = Client(live_server.url, token=token)

    listed = client.releases()
    assert [(r.id, r.slug, r.sha256, r.bytes) for r in listed] == [
        (release.pk, "example-fire@v1", release.sha256, release.bytes)]
    folder = client.download("example-fire@v1", tmp_path / "downloads")
    assert sorted(p.name for p in (tmp_path / "downloads").iterdir()) == ["example-fire-v1"]
    local = open_release(folder)
    assert len(local.verify()) == len(release.files)

    # The platform scores the qrels of the archive it stores, not the client's copy.
    with zipfile.ZipFile(io.BytesIO(b"".join(stored_file_chunks(EXPORTS, release.archive)))) as archive:
        server_qrels = archive.read("example-fire-v1/qrels.txt")
    (tmp_path / "server-qrels.txt").write_bytes(server_qrels)
    assert (folder / "qrels.txt").read_bytes() == server_qrels

    for run in ("A", "B"):  # B ties scores within q1: both sides must break ties as trec_eval does
        run_file = tmp_path / "files" / f"{run}.trec"
        ours = evaluate(local, run_file, measures=list(MEASURES))
        platform = _platform_scores(run_file, tmp_path / "server-qrels.txt")
        assert ours.measures == {name: platform["measures"][te] for name, te in MEASURES.items()}
        assert ours.queries == sorted(platform["per_query"])
        for query, values in ours.per_query.items():
            assert values == {name: platform["per_query"][query][te] for name, te in MEASURES.items()}
    # Hand-worked anchor (the metrics report's corrected textbook AP of run A): q1 [v2 v1 v3] finds 2
    # of 3 relevant at ranks 1 and 2, q2 1 of 2 at rank 1, q3 both, q4 has none relevant.
    assert evaluate(local, tmp_path / "files" / "A.trec", measures=["AP"]).measures["AP"] == \
        pytest.approx((2 / 3 + 1 / 2 + 1 + 0) / 4)


@pytest.fixture
def bucket(settings, object_store):  # noqa: F811
    name = object_store.new_bucket()
    settings.STORAGES = settings.STORAGES | object_store.storages(name, areas=settings.STORAGE_AREAS)
    settings.REJUDGE_STORAGE_DOWNLOADS = "redirect"
    return name


@pytest.mark.objectstore
def test_from_object_storage_the_client_follows_the_signed_url_and_resumes_with_a_range(live_server, tmp_path,
                                                                                       bucket):
    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire", title="Example, corrected", licence="CC-BY-4.0",
                             authors=["A. Author"])
    data = b"".join(stored_file_chunks(EXPORTS, release.archive))
    dest = tmp_path / "downloads"
    dest.mkdir()
    # An earlier attempt that stopped after 1,000 bytes: the bucket serves the rest as a range.
    (dest / ".example-fire-v1.zip.part").write_bytes(data[:1000])
    client = Client(live_server.url, token=api_token_for(user=make_user("researcher")))
    seen = []
    client._http.event_hooks["response"] = [lambda response: seen.append(
        (response.status_code, response.request.url.host, response.request.url.port,
         "authorization" in response.request.headers, response.request.headers.get("range")))]

    folder = client.download(release.pk, dest)

    assert open_release(folder).qrels() and sorted(p.name for p in dest.iterdir()) == ["example-fire-v1"]
    api_port = int(live_server.url.rsplit(":", 1)[1])
    redirect, signed = [s for s in seen if s[4]]  # the archive requests (the detail one has no range)
    assert redirect[0] == 302 and redirect[2] == api_port and redirect[3]
    # the signed URL is another origin: no token sent there, and the range survives the redirect
    assert signed == (206, "127.0.0.1", signed[2], False, "bytes=1000-") and signed[2] != api_port


def test_anonymous_reads_are_refused_by_default_and_work_when_releases_are_public(live_server, tmp_path, settings):
    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire", title="Example, corrected", licence="CC-BY-4.0",
                             authors=["A. Author"])
    with pytest.raises(APIError, match="pass an API token") as refused:
        Client(live_server.url).releases()
    assert refused.value.status in (401, 403)
    settings.REJUDGE_RELEASES_PUBLIC = True
    folder = Client(live_server.url).download("example-fire", tmp_path / "public")
    assert open_release(folder).slug == release.slug == "example-fire@v1"
