# One image, two entrypoints: `fairway operator` and `fairway worker` (the default).
# Build stage: a virtualenv with Fairway and its dependencies (wheels; hiredis ships binary wheels).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/fairway
COPY pyproject.toml README.md /src/
COPY worker /src/worker
COPY operator /src/operator
RUN /opt/fairway/bin/pip install /src

# Final stage: the slim base plus the virtualenv, no compilers, no pip cache, a numeric non-root user.
FROM python:3.11-slim AS runtime
COPY --from=build /opt/fairway /opt/fairway
ENV PATH=/opt/fairway/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
ENTRYPOINT ["fairway"]
CMD ["worker", "--config", "/etc/fairway/worker.yaml"]
