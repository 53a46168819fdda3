# The image `runtime: sandbox` runs agents in under Docker (isolation.image). A worker whose
# engine lacks it builds it from this file (worker/agents/sandbox_image.py); by hand:
#   docker build -t evalrelay-sandbox:bookworm - < worker/agents/sandbox.Dockerfile
# It brings the system an agent's commands expect; the agent's own program is mounted
# from the worker. Python 3 runs the relay to the target's declared endpoints, Node.js
# runs the npm CLIs (Codex's launcher; Claude Code is a binary of its own). Copilot CLI
# needs Node.js 22, newer than Debian 12's: build on another base for it.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        bash ca-certificates coreutils curl git nodejs procps python3 \
    && rm -rf /var/lib/apt/lists/*
