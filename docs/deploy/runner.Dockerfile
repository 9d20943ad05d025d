# syntax=docker/dockerfile:1
#
# The runner image: `plughost-runner --connect` on a machine other than the host's.
# Build from the repository's root (the build context must hold sdk/, runner/ and
# constraints.txt):
#
#   docker build -f docs/deploy/runner.Dockerfile -t plughost-runner:0.1.0 .
#
# It holds the SDK and the runner distribution only, never the host (`plughost`):
# a runner on another machine needs neither the host's code nor its dependencies
# (MCP, the console, search), and what is not installed cannot be attacked or
# drift out of date. Plugins are not in this image: mount them at /plugins, or
# bake them into an image built FROM this one (runner-plugins.Dockerfile).

# One pinned base for both stages, so the virtual environment built in the first
# stage finds the very same interpreter in the second. The official Python image,
# slim variant on Debian bookworm: glibc (so pyzmq, msgpack and pydantic-core
# install as prebuilt manylinux wheels, no compiler needed), security updates from
# Debian and the Docker Official Images team. Pin it further by digest in your own
# registry (python:3.11.14-slim-bookworm@sha256:...) for byte-identical rebuilds.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- build: install the two distributions into a virtual environment -------------
FROM ${PYTHON_IMAGE} AS build

# No .pyc files from pip's own run, no version check, no cache kept in a layer.
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
# Only what the install reads: the constraints (the exact versions the test suite
# ran with) and the two distributions' source folders. host/ is never copied.
COPY constraints.txt ./
COPY sdk/ sdk/
COPY runner/ runner/

# A venv under /opt keeps the image's own Python untouched and is copied whole into
# the runtime stage. Regular (not editable) installs: the runtime stage has no /src.
RUN python -m venv /opt/plughost \
    && /opt/plughost/bin/pip install --constraint constraints.txt ./sdk ./runner

# --- runtime: the venv, a user of its own, nothing else --------------------------
FROM ${PYTHON_IMAGE}

# A fixed uid/gid (not a name): Kubernetes' runAsUser/fsGroup and file ownership on
# volumes speak numbers. No login shell, no home outside the data directory.
RUN groupadd --system --gid 10001 plughost \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /var/lib/plughost --shell /usr/sbin/nologin plughost \
    && mkdir -p /plugins /var/lib/plughost \
    && chown 10001:10001 /var/lib/plughost

COPY --from=build /opt/plughost /opt/plughost

# PYTHONUNBUFFERED: log lines reach `docker logs` / `kubectl logs` as they happen.
# PYTHONDONTWRITEBYTECODE: the plugin folder is read-only; do not even try to
# write __pycache__ there.
ENV PATH=/opt/plughost/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# /plugins stays owned by root (mode 755): the runner's user can read the plugins
# but never change them, so a plugin cannot rewrite itself or its neighbours.
# /var/lib/plughost is where plugins keep their data and temp directories
# (--data-dir); it is the one writable place, declared a volume.
VOLUME ["/var/lib/plughost"]
WORKDIR /var/lib/plughost
USER 10001:10001

# The runner distribution's console script. Everything but the host's address is
# fixed here: the credential file is a secret mounted at a known path (a Docker
# secret, a Kubernetes Secret), the plugins are at /plugins. --connect comes from
# CMD so `docker run IMAGE --connect tcp://HOST:PORT` or a pod's `args` sets it.
# Exec form: the runner is PID 1 and gets SIGTERM itself; it handles it (a PID 1
# without a handler would ignore it) by draining its calls, then exiting 0.
ENTRYPOINT ["plughost-runner", "--credentials", "/run/secrets/plughost/credentials.json", "--plugins", "/plugins", "--data-dir", "/var/lib/plughost"]
CMD ["--connect", "tcp://plughost-host:7700"]
