"""Fixtures for the operator tests: see support/kopf_kmock.py."""

from support.kopf_kmock import k8s, operator  # noqa: F401
