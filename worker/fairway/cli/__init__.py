"""The `fairway` command: one entry point, one verb per job.

Each verb's parser sits next to its command in the module for its layer; verbs that belong to
another package (the operator's `render` and `operator`) join through the `fairway.verbs` entry-point
group, so this package never imports them. Verbs import what they need when they run, so
`fairway validate` does not pay for redis or kopf.
Exit codes: 0 success, 1 the input is invalid (or the work failed), 2 the input is unusable.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib.metadata import entry_points

from fairway.cli import local_verbs, queue_verbs, resource_verbs, worker_verb
from fairway.cli.common import Verb, VerbFailed

PLUGIN_GROUP = "fairway.verbs"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairway", description="Fair Redis job queues on Kubernetes.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for module in (resource_verbs, worker_verb, queue_verbs, local_verbs):
        module.register(verbs)
    for plugin in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        plugin.load()(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Verb = args.run
    try:
        return run(args)
    except VerbFailed as failed:
        return failed.code
