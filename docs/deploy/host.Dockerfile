# syntax=docker/dockerfile:1
#
# The host image: `plughost serve --config FILE`, accepting remote runners and,
# if configured, serving every tool over MCP HTTP. Build from the repository's root:
#
#   docker build -f docs/deploy/host.Dockerfile -t plughost-host:0.1.0 .
#
# The configuration file, the data directory (with the host's key pair under
# [host.remote] keys_dir) and the MCP bearer token come from outside: a mounted
# file, a volume, a secret. Nothing deployment-specific is baked in.

# Same pinned base as the runner image, for the same reasons (see runner.Dockerfile).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- build -----------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY constraints.txt ./
COPY sdk/ sdk/
COPY runner/ runner/
COPY host/ host/
# The host depends on the SDK and on the runner distribution (it spawns local
# runners by module name), so all three are installed, without the dev extras.
RUN python -m venv /opt/plughost \
    && /opt/plughost/bin/pip install --constraint constraints.txt ./sdk ./runner ./host

# --- runtime ---------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 plughost \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /var/lib/plughost --shell /usr/sbin/nologin plughost \
    && mkdir -p /plugins /etc/plughost /var/lib/plughost \
    && chown 10001:10001 /var/lib/plughost
COPY --from=build /opt/plughost /opt/plughost
ENV PATH=/opt/plughost/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# /var/lib/plughost holds what must survive a restart: the host's CurveZMQ key pair
# and the issued credentials (keys_dir; lose them and every runner's credential
# must be issued again), and the plugins' data directories.
VOLUME ["/var/lib/plughost"]
WORKDIR /var/lib/plughost
USER 10001:10001

# 7700: remote runners connect here ([host.remote] listen = "tcp://0.0.0.0:7700").
# 8765: MCP streamable HTTP, when [serve] mcp = "http" (bearer token required).
# EXPOSE documents; the configuration file decides what is actually listened on.
EXPOSE 7700 8765

# Exec form, so plughost is PID 1 and receives SIGTERM: its first SIGTERM drains
# calls in flight (runner.shutdown_drain seconds) before it exits.
ENTRYPOINT ["plughost", "serve", "--config", "/etc/plughost/plughost.toml"]
