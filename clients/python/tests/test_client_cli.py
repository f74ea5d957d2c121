import json
import subprocess
import sys
from pathlib import Path

from conftest import build_archive
from test_client_local import RUN

from rejudge_client.cli import main


def test_list_download_verify_evaluate(server, tmp_path, capsys, monkeypatch):
    archive, files = build_archive("demo", 2)
    server.add_release(5, "demo", 2, archive, files)
    server.token = "s3cret"
    monkeypatch.setenv("REJUDGE_TOKEN", "s3cret")

    assert main(["list", "--url", server.url]) == 0
    assert "demo@v2" in capsys.readouterr().out

    assert main(["download", "demo", "--url", server.url, "--dest", str(tmp_path)]) == 0
    assert f"downloaded and verified: {tmp_path / 'demo-v2'}" in capsys.readouterr().out

    assert main(["verify", str(tmp_path / "demo-v2")]) == 0
    assert "13 files match" in capsys.readouterr().out

    run = tmp_path / "good.trec"
    run.write_text(RUN)
    assert main(["evaluate", str(run), "--release", str(tmp_path / "demo-v2"), "--measures", "C@1", "AP"]) == 0
    out = capsys.readouterr().out
    assert "C@1  0.5000" in out and "AP   0.7083" in out and "conventions: trec_eval 9" in out
    assert main(["evaluate", str(run), "--release", str(tmp_path / "demo-v2"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["num_q"] == 2


def test_errors_go_to_stderr_with_exit_status_1(server, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("REJUDGE_URL", raising=False)
    assert main(["list"]) == 1
    assert "no server: pass --url" in capsys.readouterr().err

    archive, _ = build_archive("demo", 2, tamper={"fire.json": b'{"q1": {"c1": 0}}'})  # same size, other bytes
    zip_path = tmp_path / "demo-v2.zip"
    zip_path.write_bytes(archive)
    assert main(["verify", str(zip_path)]) == 1
    assert "fire.json: SHA-256 is" in capsys.readouterr().err

    server.token = "s3cret"
    monkeypatch.delenv("REJUDGE_TOKEN", raising=False)
    assert main(["download", "5", "--url", server.url, "--dest", str(tmp_path / "d")]) == 1
    assert "401 Unauthorized" in capsys.readouterr().err


def test_the_installed_command_runs():
    script = Path(sys.executable).parent / "rejudge-client"  # pip's console script for the package
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=300)
    assert (out.returncode, out.stdout.strip()) == (0, "rejudge-client 0.1.0")
