FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# collectstatic needs settings, not secrets: DEBUG=1 lets it load them with the development key,
# for this build step only (the containers run with DEBUG=0 and the SECRET_KEY they are given).
RUN DATABASE_URL=sqlite:////tmp/build.sqlite3 DEBUG=1 python manage.py collectstatic --no-input -v0
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
