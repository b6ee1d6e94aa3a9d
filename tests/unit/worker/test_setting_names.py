"""One rename table (resource/worker_settings.SETTING_NAMES) for the operator's renderer and the CLI:
every row names a real spec field, setting and `fairway worker` flag."""

from __future__ import annotations

from fairway.cli import build_parser
from fairway.resource.spec import QueueSupervisorSpec
from fairway.resource.worker_settings import SETTING_NAMES, WorkerSettings


def test_every_row_names_a_real_field_setting_and_flag() -> None:
    worker = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "worker")[1]
    dests = {action.dest for action in worker._actions}
    for row in SETTING_NAMES:
        assert row.setting in WorkerSettings.model_fields, row
        assert row.spec is None or row.spec in QueueSupervisorSpec.model_fields, row
        assert row.flag is None or row.flag in dests, row


def test_no_name_is_listed_twice() -> None:
    for column in ("setting", "spec", "flag"):
        names = [getattr(row, column) for row in SETTING_NAMES if getattr(row, column) is not None]
        assert len(names) == len(set(names)), column
