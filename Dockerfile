# One image, two entrypoints: `fairway operator` and `fairway worker` (the default).
# BASE is any image with Python 3.11 as `python` and its venv module. The default is the public
# image, pinned by digest (refresh: `docker buildx imagetools inspect python:3.11-slim-bookworm`);
# where no registry is reachable, `./dev image` builds a Debian base locally and passes it here.
ARG BASE=python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

# Build stage: a virtualenv with the locked dependencies (their own cached layer: a change to the
# source reinstalls nothing), then Fairway itself with no dependency resolution.
FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/fairway
COPY requirements/runtime.txt /src/requirements/runtime.txt
RUN /opt/fairway/bin/pip install --require-hashes -r /src/requirements/runtime.txt
COPY pyproject.toml README.md /src/
COPY worker /src/worker
COPY operator /src/operator
RUN /opt/fairway/bin/pip install --no-deps --no-build-isolation /src

# Final stage: the base plus the virtualenv, no compilers, no pip cache, a numeric non-root user
# that needs no passwd entry and no home (nothing in Fairway reads either).
FROM ${BASE} AS runtime
COPY --from=build /opt/fairway /opt/fairway
ENV PATH=/opt/fairway/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
ENTRYPOINT ["fairway"]
CMD ["worker", "--config", "/etc/fairway/worker.yaml"]
