# syntax=docker/dockerfile:1
#
# ksched's container image: `docker build -t ksched:0.1.0 .` (BuildKit, the default builder since
# Docker 23). Two stages:
#
# - builder: the full Python image (it carries gcc and the C headers) builds the ksched wheel,
#   Cython kernels included, and wheels of every runtime dependency;
# - runtime: the slim image of the same Python release installs those wheels and nothing else
#   (no compiler, no sources, no pip cache), and runs as a numeric non-root user.
#
# The runtime stage writes nothing outside /tmp: bytecode is precompiled at install time and
# PYTHONDONTWRITEBYTECODE stops new .pyc files, so the container runs with
# readOnlyRootFilesystem and an emptyDir at /tmp (deploy/base/deployment.yaml).
#
# Base images are pinned by version tag; pin them by digest as well (python:3.11.7-slim-bookworm@sha256:...)
# when your registry policy asks for it.

ARG PYTHON_VERSION=3.11.7

FROM python:${PYTHON_VERSION}-bookworm AS builder
WORKDIR /src
# The build backend needs only these: pyproject.toml (metadata, build requirements), setup.py (the
# Cython extensions), README.md (the package's long description) and the package itself.
COPY pyproject.toml setup.py README.md ./
COPY ksched ./ksched
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime
LABEL org.opencontainers.image.title="ksched" \
      org.opencontainers.image.description="A Kubernetes scheduler with kube-scheduler's decisions and a compiled hot path" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# The wheels are bind-mounted from the builder for this one step, so they never become a layer.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels /wheels/ksched-*.whl \
    && ksched version
# 65532 is the conventional "nonroot" id; no entry in /etc/passwd is needed.
USER 65532:65532
# /metrics, /healthz and /readyz (deploy/base/deployment.yaml passes --bind-address and --secure-port).
EXPOSE 10259
ENTRYPOINT ["ksched", "run"]
