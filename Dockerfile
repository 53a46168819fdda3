# One image for every evalrelay service: workers, the collector and the watcher.
FROM python:3.11-slim

RUN useradd --create-home --uid 1000 evalrelay
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bridge ./bridge
COPY worker ./worker
COPY workspace_templates ./workspace_templates
RUN pip install --no-cache-dir .

USER evalrelay
ENV EVALRELAY_HOME=/home/evalrelay/.evalrelay
ENTRYPOINT ["evalrelay"]
CMD ["--help"]
