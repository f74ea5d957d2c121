"""The production shape: no start on a public key, HTTPS settings from the environment with safe
defaults, `check --deploy` clean under docker-compose's environment, security headers, a demo
loader that refuses production.

Settings are read at import, so the environment-dependent cases run Django in a subprocess with an
environment built from scratch (nothing leaks in from the test run, which serves plain http)."""
from __future__ import annotations

import io
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from tests.conftest import REPO

SECURITY_SETTINGS = ("DEBUG", "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS",
                     "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER",
                     "USE_X_FORWARDED_HOST", "CLIENT_IP_HEADER", "SILENCED_SYSTEM_CHECKS", "AXES_FAILURE_LIMIT", "AXES_COOLOFF_TIME",
                     "REST_FRAMEWORK", "CONTENT_SECURITY_POLICY")


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """What a fresh shell on a server would have: no DEBUG, no SECRET_KEY, an empty var/ folder (so
    a developer's var/secret_key never hides a refusal)."""
    var = tmp_path / "var"
    var.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "REJUDGE_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings"}
    return env | extra


def run_manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)


def settings_under(env: dict[str, str]) -> dict:
    """The security settings as Django resolves them in that environment."""
    script = ("import json; from django.conf import settings; "
              f"print(json.dumps({{n: getattr(settings, n) for n in {SECURITY_SETTINGS!r}}}, default=str))")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def compose_environment(secret_key: str) -> dict[str, str]:
    """The `environment:` docker-compose.yml gives the web service, with ${VAR:-default} taken at its
    default and ${VAR:?message} (a value the operator must give) filled in as an operator would."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    given = {"SECRET_KEY": secret_key}

    def interpolate(value) -> str:
        def one(match: re.Match) -> str:
            name, op, default = match.group(1), match.group(2), match.group(3) or ""
            if op == ":?":
                assert name in given, f"docker-compose.yml requires {name}; the test must give it"
                return given[name]
            return default
        return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, str(value))

    return {key: interpolate(value) for key, value in compose["services"]["web"]["environment"].items()}


# --- SECRET_KEY ---------------------------------------------------------------------------------

def test_debug_off_without_a_secret_key_refuses_to_start_and_names_the_setting(tmp_path):
    done = run_manage(clean_env(tmp_path, DEBUG="0"), "check")
    assert done.returncode != 0
    assert "SECRET_KEY" in done.stderr and "ImproperlyConfigured" in done.stderr
    # The embedded default typed in by hand is no way around it either.
    done = run_manage(clean_env(tmp_path, DEBUG="0", SECRET_KEY="rejudge-embedded-default-not-for-production"), "check")
    assert done.returncode != 0 and "SECRET_KEY" in done.stderr


def test_debug_on_keeps_the_embedded_default_and_a_key_file_in_var_serves_debug_off(tmp_path):
    env = clean_env(tmp_path, DEBUG="1")
    assert run_manage(env, "check").returncode == 0
    # scripts/demo.sh writes var/secret_key once; admin commands run later with DEBUG off find it.
    key = secrets.token_urlsafe(50)
    (Path(env["REJUDGE_VAR_DIR"]) / "secret_key").write_text(key + "\n")
    script = "from django.conf import settings; print(settings.SECRET_KEY)"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=clean_env(tmp_path, DEBUG="0"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == key


def test_the_demo_makes_a_private_key_in_var_once_and_keeps_it(tmp_path):
    env = clean_env(tmp_path, PYTHON=sys.executable)
    key_file = Path(env["REJUDGE_VAR_DIR"]) / "secret_key"
    script = ["bash", str(REPO / "scripts" / "secret_key.sh")]
    subprocess.run(script, env=env, check=True, timeout=60)
    key = key_file.read_text().strip()
    assert len(key) >= 50 and (key_file.stat().st_mode & 0o777) == 0o600
    subprocess.run(script, env=env, check=True, timeout=60)
    assert key_file.read_text().strip() == key  # sessions survive a restart
    # scripts/demo.sh makes it before anything reads the settings.
    demo = (REPO / "scripts" / "demo.sh").read_text()
    assert demo.index("scripts/secret_key.sh") < demo.index("manage.py migrate")
    # With SECRET_KEY given, no file is made.
    other = tmp_path / "other"
    subprocess.run(script, env=env | {"REJUDGE_VAR_DIR": str(other), "SECRET_KEY": "given"}, check=True, timeout=60)
    assert not (other / "secret_key").exists()


# --- HTTPS, cookies, proxies -----------------------------------------------------------------------

def test_production_defaults_are_secure_and_the_demo_defaults_plain_http(tmp_path):
    production = settings_under(clean_env(tmp_path, DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50)))
    assert production["SECURE_SSL_REDIRECT"] is True
    assert production["SESSION_COOKIE_SECURE"] is True and production["CSRF_COOKIE_SECURE"] is True
    assert production["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600 and production["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    # Preloading is the domain owner's call (hard to undo): off unless asked, and its check says so.
    assert production["SECURE_HSTS_PRELOAD"] is False and production["SILENCED_SYSTEM_CHECKS"] == ["security.W021"]
    # No proxy is trusted unless named: a client could otherwise claim https or another host.
    assert production["SECURE_PROXY_SSL_HEADER"] is None and production["USE_X_FORWARDED_HOST"] is False
    assert production["CLIENT_IP_HEADER"] == ""

    demo = settings_under(clean_env(tmp_path, DEBUG="1"))  # what scripts/demo.sh runs with
    assert demo["SECURE_SSL_REDIRECT"] is False and demo["SECURE_HSTS_SECONDS"] == 0
    assert demo["SESSION_COOKIE_SECURE"] is False and demo["CSRF_COOKIE_SECURE"] is False


def test_each_https_setting_comes_from_the_environment(tmp_path):
    resolved = settings_under(clean_env(
        tmp_path, DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), REJUDGE_HTTPS="0", SECURE_HSTS_SECONDS="600",
        SECURE_HSTS_PRELOAD="1", SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto,https", USE_X_FORWARDED_HOST="1",
        REJUDGE_LOGIN_FAILURE_LIMIT="5", REJUDGE_LOGIN_COOLOFF_MINUTES="30", REJUDGE_THROTTLE_USER="5/min",
        REJUDGE_THROTTLE_ANON="off", REJUDGE_CSP_MEDIA_SRC="https://media.example.org",
        REJUDGE_CLIENT_IP_HEADER="X-Real-IP"))
    # REJUDGE_HTTPS=0 (plain http behind nothing, as the tests and benchmarks run) turns the rest off...
    assert resolved["SECURE_SSL_REDIRECT"] is False and resolved["SESSION_COOKIE_SECURE"] is False
    # ...but a setting named on its own wins.
    assert resolved["SECURE_HSTS_SECONDS"] == 600 and resolved["SECURE_HSTS_PRELOAD"] is True
    assert resolved["SILENCED_SYSTEM_CHECKS"] == []
    assert resolved["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert resolved["USE_X_FORWARDED_HOST"] is True
    assert resolved["AXES_FAILURE_LIMIT"] == 5 and resolved["AXES_COOLOFF_TIME"] == "0:30:00"
    assert resolved["CLIENT_IP_HEADER"] == "HTTP_X_REAL_IP"
    rates = resolved["REST_FRAMEWORK"]["DEFAULT_THROTTLE_RATES"]
    assert rates["user"] == "5/min" and rates["anon"] is None
    assert resolved["CONTENT_SECURITY_POLICY"]["DIRECTIVES"]["media-src"] == ["'self'", "https://media.example.org"]


def test_a_malformed_setting_is_refused_with_its_name(tmp_path):
    base = clean_env(tmp_path, DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50))
    for name, value in (("REJUDGE_THROTTLE_USER", "lots"), ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),
                        ("REJUDGE_LOGIN_FAILURE_LIMIT", "0")):
        done = run_manage(base | {name: value}, "check")
        assert done.returncode != 0 and name in done.stderr, (name, done.stderr[-500:])


def test_check_deploy_is_clean_under_docker_compose_environment(tmp_path):
    compose = compose_environment(secret_key=secrets.token_urlsafe(50))
    assert compose["DEBUG"] == "0"
    env = clean_env(tmp_path) | compose
    done = run_manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout and "WARNINGS" not in done.stderr + done.stdout
    # Behind docker-compose a TLS proxy talks to gunicorn: it is trusted for the scheme only.
    resolved = settings_under(env)
    assert resolved["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert resolved["SECURE_SSL_REDIRECT"] is True and resolved["SECURE_HSTS_SECONDS"] > 0
    assert resolved["CLIENT_IP_HEADER"] == "HTTP_X_FORWARDED_FOR"


def test_the_embedded_default_would_fail_check_deploy(tmp_path):
    """The other side of the test above: the check is not vacuous. DEBUG on (where the embedded key is
    still allowed) gives the original finding's warnings and more."""
    done = run_manage(clean_env(tmp_path, DEBUG="1"), "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W009", "security.W012", "security.W016",
                    "security.W018"):
        assert warning in done.stderr + done.stdout


# --- Headers on every response -----------------------------------------------------------------------

@pytest.mark.django_db
def test_pages_and_api_carry_the_security_headers(client):
    for url in ("/login/", "/api/v1/schema/", "/no-such-page/"):
        response = client.get(url)
        assert response["X-Content-Type-Options"] == "nosniff", url
        assert response["Referrer-Policy"] == "same-origin", url
        assert response["X-Frame-Options"] == "DENY", url
        assert response["Cross-Origin-Opener-Policy"] == "same-origin", url
        policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
        assert policy["default-src"] == "'self'" and policy["script-src"] == "'self'", url
        assert policy["style-src"] == "'self'" and policy["object-src"] == "'none'", url
        assert policy["frame-ancestors"] == "'none'" and policy["form-action"] == "'self'", url
        assert "unsafe" not in response["Content-Security-Policy"], url


@pytest.mark.django_db
def test_https_settings_take_effect(client, settings):
    """What the production defaults do to a request (Django's own middleware, our values)."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    plain = client.get("/login/")
    assert plain.status_code == 301 and plain["Location"] == "https://testserver/login/"
    proxied = client.get("/login/", headers={"X-Forwarded-Proto": "https"})
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert proxied.cookies["csrftoken"]["secure"] is True


# --- The demo loader --------------------------------------------------------------------------------

@pytest.mark.django_db
def test_load_demo_refuses_with_debug_off_unless_forced(settings):
    from annotation.models import Dataset

    settings.DEBUG = False
    with pytest.raises(CommandError, match=r"DEBUG.*--force"):
        call_command("load_demo")
    assert not Dataset.objects.filter(name="demo").exists()  # refused before writing anything
    call_command("load_demo", "--force", stdout=io.StringIO())
    assert Dataset.objects.filter(name="demo").exists()
