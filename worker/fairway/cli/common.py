"""What every verb shares: exit codes, reading input files, reading and validating supervisor
manifests (validate, render, up), and the Redis options of the verbs that talk to Redis."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fairway.resource.manifests import (
    ManifestError,
    ValidationReport,
    describe,
    is_supervisor,
    load_documents,
    validate_document,
)
from fairway.resource.names import DEFAULT_REDIS_URL, REDIS_URL_ENV
from fairway.resource.spec import KIND

Verb = Callable[[argparse.Namespace], int]
Verbs = Any  # argparse's private _SubParsersAction: what `add_subparsers` returns

OK, INVALID, UNUSABLE = 0, 1, 2  # exit codes: success; invalid input or failed work; unusable input


def read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(f"cannot read {path}: not UTF-8 text") from exc


@dataclass(frozen=True)
class Supervisor:
    """One document of a manifest file, validated."""

    index: int  # 1-based position in the file
    document: Mapping[str, Any]
    report: ValidationReport

    def where(self, label: str) -> str:
        return f"{label}: document {self.index} ({self.report.name or 'unnamed'})"


@dataclass(frozen=True)
class ManifestFile:
    label: str
    supervisors: list[Supervisor]
    skipped: list[str]  # "document 2 (ConfigMap settings)": documents that are not QueueSupervisors


def read_supervisors(path: str) -> ManifestFile:
    """Every QueueSupervisor in the file, validated, and the other documents it skipped; ManifestError
    when the file cannot be used at all (unreadable, not YAML, no QueueSupervisor in it)."""
    label = input_label(path)
    documents = load_documents(read_input(path))
    supervisors, skipped = [], []
    for index, doc in enumerate(documents, start=1):
        if is_supervisor(doc):
            supervisors.append(Supervisor(index, doc, validate_document(doc)))
        elif doc is not None:
            skipped.append(f"document {index} ({describe(doc)})")
    if not supervisors:
        found = f"; it holds {', '.join(skipped)}" if skipped else ""
        raise ManifestError(f"no QueueSupervisor in it (kind: {KIND}){found}")
    return ManifestFile(label, supervisors, skipped)


def input_label(path: str) -> str:
    return "stdin" if path == "-" else path


class VerbFailed(Exception):
    """A verb stops with this exit code; what went wrong is already printed."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def load_supervisors(verb: str, path: str) -> ManifestFile:
    """Every QueueSupervisor validated, skipped documents noted on stderr; a file that cannot be used
    at all ends the verb (exit 2)."""
    try:
        manifest = read_supervisors(path)
    except ManifestError as exc:
        print(f"fairway {verb}: {input_label(path)}: {exc}", file=sys.stderr)
        raise VerbFailed(UNUSABLE) from None
    for skipped in manifest.skipped:
        print(f"fairway {verb}: {manifest.label}: {skipped}: skipped, not a QueueSupervisor", file=sys.stderr)
    return manifest


def valid_supervisors(verb: str, path: str) -> list[Supervisor]:
    """Every QueueSupervisor, all valid; otherwise their problems are printed and the verb ends (exit 1)."""
    manifest = load_supervisors(verb, path)
    if print_errors(manifest.label, manifest.supervisors):
        raise VerbFailed(INVALID)
    return manifest.supervisors


def print_errors(label: str, supervisors: list[Supervisor]) -> bool:
    """Each invalid document's problems on stderr, field first; True when any document is invalid."""
    bad = False
    for sup in supervisors:
        for problem in sup.report.errors:
            print(f"{sup.where(label)}: {problem}", file=sys.stderr)
        bad = bad or not sup.report.valid
    return bad


REDIS_URL_HELP = f"Redis URL (default: ${REDIS_URL_ENV}, else {DEFAULT_REDIS_URL})"


def redis_url_default() -> str:
    """One rule for every verb: --redis, else FAIRWAY_REDIS_URL, else the local default."""
    from fairway.queue.connection import redis_url_from_env  # (redis-py loads only for verbs that use it)

    return redis_url_from_env()


def add_redis_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", default=redis_url_default(), help=REDIS_URL_HELP)
    parser.add_argument("--cluster", action="store_true", help="the Redis is a Redis Cluster")


def port_number(text: str) -> int:
    """argparse type for a TCP port to listen on: 0-65535, 0 = any free one (argparse names the flag)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: give 1-65535 (or 0 for any free one)")
    return value


def tenant_group(text: str) -> str:
    """argparse type for a tenant group: its queue prefix, written `tenant-` or as served, `@tenant-`."""
    return text.removeprefix("@")


def add_group_option(parser: argparse.ArgumentParser, dest: str) -> None:
    """One option for the tenant group on every verb: `--group` or `--prefix` (both spellings work, so
    scripts written for either keep working), `tenant-` or `@tenant-`."""
    from fairway.resource.names import DEFAULT_TENANT_PREFIX

    parser.add_argument(
        "--group",
        "--prefix",
        dest=dest,
        type=tenant_group,
        default=DEFAULT_TENANT_PREFIX,
        help=f"the tenant group by its queue prefix (default {DEFAULT_TENANT_PREFIX}, or @{DEFAULT_TENANT_PREFIX})",
    )


def redis_for(args: argparse.Namespace) -> Any:
    """The Redis client a verb's --redis/--cluster options name (imported here, when a verb runs)."""
    from fairway.queue.connection import connect

    return connect(args.redis, True if args.cluster else None)
