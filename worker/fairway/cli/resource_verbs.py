"""Verbs about the resource itself: `fairway crd` and `fairway validate`."""

from __future__ import annotations

import argparse
import sys

from fairway.cli.common import INVALID, OK, Verbs, load_supervisors, print_errors


def cmd_crd(_: argparse.Namespace) -> int:
    from fairway.resource.crd import crd_yaml

    sys.stdout.write(crd_yaml())
    return OK


def cmd_validate(args: argparse.Namespace) -> int:
    label, supervisors = load_supervisors("validate", args.file)
    failed = print_errors(label, supervisors)
    for sup in supervisors:
        for warning in sup.report.warnings:
            print(f"{sup.where(label)}: warning: {warning}")
        if sup.report.valid:
            print(f"{sup.where(label)}: valid")
    return INVALID if failed else OK


def register(verbs: Verbs) -> None:
    crd = verbs.add_parser("crd", help="print the QueueSupervisor CustomResourceDefinition")
    crd.set_defaults(run=cmd_crd)

    validate = verbs.add_parser("validate", help="validate QueueSupervisor manifests")
    validate.add_argument("-f", "--file", required=True, help="YAML file with one or more documents, or -")
    validate.set_defaults(run=cmd_validate)
