# syntax=docker/dockerfile:1
#
# Plugins baked into a runner image: what the Kubernetes example runs. Build the
# runner image first (runner.Dockerfile), then, from the repository's root:
#
#   docker build -f docs/deploy/runner-plugins.Dockerfile -t plughost-runner-plugins:0.1.0 .
#
# An image per plugin set (rather than a volume filled at run time) gives every
# runner of a Deployment the very same plugin versions, makes a new plugin version a
# new image tag that a rollout replaces member by member, and keeps the plugins
# read-only: they belong to root, and the runner runs as uid 10001.

ARG RUNNER_IMAGE=plughost-runner:0.1.0
FROM ${RUNNER_IMAGE}

# Two of the example plugins stand in for yours (the Kubernetes example's credential
# allows exactly these two). A plugin with third-party dependencies
# installs them here too, as root, into the runner's venv:
#   USER 0
#   RUN pip install --no-cache-dir -r /plugins/my_plugin/requirements.txt
#   USER 10001:10001
# COPY leaves the files owned by root: readable by the runner, never writable by it.
COPY plugins_example/unit_converter/ /plugins/unit_converter/
COPY plugins_example/image_tools/ /plugins/image_tools/
