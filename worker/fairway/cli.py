"""The `fairway` command: one entry point, one verb per job.

Verbs import what they need when they run, so `fairway validate` does not pay for redis or kopf.
Exit codes: 0 success, 1 the input is invalid (or the work failed), 2 the input is unusable.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from fairway.manifests import ManifestError, load_documents, validate_document

Verb = Callable[[argparse.Namespace], int]


def _read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(f"cannot read {path}: not UTF-8 text") from exc


def cmd_crd(_: argparse.Namespace) -> int:
    from fairway.crd import crd_yaml

    sys.stdout.write(crd_yaml())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    label = "stdin" if args.file == "-" else args.file
    try:
        documents = load_documents(_read_input(args.file))
        if not documents:
            raise ManifestError("no documents found")
        reports = [validate_document(doc) for doc in documents]
    except ManifestError as exc:
        print(f"fairway validate: {label}: {exc}", file=sys.stderr)
        return 2
    failed = False
    for index, report in enumerate(reports, start=1):
        where = f"{label}: document {index} ({report.name or 'unnamed'})"
        for problem in report.errors:
            print(f"{where}: {problem}", file=sys.stderr)
        for warning in report.warnings:
            print(f"{where}: warning: {warning}")
        if report.valid:
            print(f"{where}: valid")
        failed = failed or not report.valid
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairway", description="Fair Redis job queues on Kubernetes.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    crd = verbs.add_parser("crd", help="print the QueueSupervisor CustomResourceDefinition")
    crd.set_defaults(run=cmd_crd)

    validate = verbs.add_parser("validate", help="validate QueueSupervisor manifests")
    validate.add_argument("-f", "--file", required=True, help="YAML file with one or more documents, or -")
    validate.set_defaults(run=cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Verb = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
