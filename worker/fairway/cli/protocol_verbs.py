"""`fairway scripts`: the complete producer scripts other languages call (docs/protocol.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairway.cli.common import OK, UNUSABLE, Verbs


def cmd_scripts(args: argparse.Namespace) -> int:
    from fairway.queue.protocol.scripts import PRODUCER_SCRIPTS, complete_source

    if args.out is None:
        for name in PRODUCER_SCRIPTS:
            sys.stdout.write(complete_source(name))
        return OK
    out = Path(args.out)
    texts = {name: complete_source(name) for name in PRODUCER_SCRIPTS}  # (read before anything is written)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            path = out / f"{name}.lua"
            path.write_text(text)
            print(path)
    except OSError as exc:
        print(f"fairway scripts: cannot write to {out}: {exc.strerror or exc}", file=sys.stderr)
        return UNUSABLE
    return OK


def register(verbs: Verbs) -> None:
    scripts = verbs.add_parser(
        "scripts", help="print the complete enqueue scripts other languages call (or write them with --out)"
    )
    scripts.add_argument("--out", default=None, metavar="DIR", help="write enqueue.lua and enqueue_tenant.lua here")
    scripts.set_defaults(run=cmd_scripts)
