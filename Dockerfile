# groupbroker in a container. Three targets:
#   broker (the default, last stage): `groupbroker serve` on 0.0.0.0:9092, data in the /data volume;
#   demo: kafka-python and examples/demo.py, for the demo producer and consumer services;
#   report: the analytics report over a data dir (docs/analytics.md).
# The address clients are told to use (Metadata, FindCoordinator) is $ADVERTISED_LISTENERS:
# docker run -p 9092:9092 groupbroker works as is from the host (localhost:9092); on a compose
# network set it to the service name, e.g. PLAINTEXT://broker:9092.

FROM python:3.11-slim AS demo
ENV PYTHONUNBUFFERED=1
RUN pip install --no-cache-dir kafka-python==3.0.12
COPY examples/demo.py /app/demo.py
USER nobody
ENTRYPOINT ["python", "/app/demo.py"]
CMD ["consume"]

# report: `groupbroker report` (PySpark in local mode) with the Java it needs.
FROM python:3.11-slim AS report
ENV PYTHONUNBUFFERED=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir '.[report]'
ENTRYPOINT ["groupbroker", "report"]
CMD ["--data-dir", "/data", "--out", "/report"]

FROM python:3.11-slim AS broker
ENV PYTHONUNBUFFERED=1 \
    ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
WORKDIR /src
# the whole context minus .dockerignore: pyproject.toml decides which packages get installed
COPY . .
RUN pip install --no-cache-dir . \
    && useradd --system --no-create-home groupbroker \
    && mkdir /data && chown groupbroker /data
USER groupbroker
VOLUME /data
EXPOSE 9092
# exec: the broker is PID 1 and gets SIGTERM from `docker stop` (it flushes and exits 0).
CMD ["sh", "-c", "exec groupbroker serve --host 0.0.0.0 --port 9092 --data-dir /data -o advertised.listeners=\"$ADVERTISED_LISTENERS\""]
