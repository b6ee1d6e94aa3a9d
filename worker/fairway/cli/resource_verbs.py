"""Verbs about the resource itself: `fairway crd` and `fairway validate`."""

from __future__ import annotations

import argparse
import sys

from fairway.cli.common import INVALID, OK, VerbFailed, Verbs, load_supervisors, print_errors


def cmd_crd(_: argparse.Namespace) -> int:
    from fairway.resource.crd import crd_yaml

    sys.stdout.write(crd_yaml())
    return OK


def cmd_validate(args: argparse.Namespace) -> int:
    """Every file, every document: one file's unusable input does not hide the others' results."""
    outcome = OK
    for path in args.file:
        try:
            manifest = load_supervisors("validate", path)
        except VerbFailed as failed:
            outcome = max(outcome, failed.code)
            continue
        if print_errors(manifest.label, manifest.supervisors):
            outcome = max(outcome, INVALID)
        for sup in manifest.supervisors:
            for warning in sup.report.warnings:
                print(f"{sup.where(manifest.label)}: warning: {warning}")
            if sup.report.valid:
                print(f"{sup.where(manifest.label)}: valid")
    return outcome


def register(verbs: Verbs) -> None:
    crd = verbs.add_parser("crd", help="print the QueueSupervisor CustomResourceDefinition")
    crd.set_defaults(run=cmd_crd)

    validate = verbs.add_parser("validate", help="validate QueueSupervisor manifests")
    validate.add_argument(
        "-f",
        "--file",
        required=True,
        nargs="+",
        action="extend",
        help="YAML files with one or more documents each (or - for stdin); other kinds are skipped with a note, "
        "and a file with no QueueSupervisor at all is refused (exit 2: a misspelt kind is not a pass)",
    )
    validate.set_defaults(run=cmd_validate)
