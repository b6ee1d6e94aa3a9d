"""The Redis key layout has one source, fairway.queue.protocol.keys: Python's key names, the Lua scripts' key
parts and the docs' key tables all come from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fairway.queue.protocol import scripts
from fairway.queue.protocol.keys import (
    GLOBAL_KEYS,
    QUEUE_KEYS,
    TENANT_GROUP_KEYS,
    GlobalKeys,
    KeyPart,
    QueueKeys,
    TenantGroupKeys,
    lua_prelude,
)

DOCS = Path(__file__).resolve().parents[3] / "docs"


def rows(parts: tuple[KeyPart, ...], name: str) -> list[str]:
    return [f"| `{name.format(part=k.part)}` | {k.type} | {k.contents} |" for k in parts]


def test_protocol_doc_quotes_the_queue_and_global_key_tables() -> None:
    text = (DOCS / "protocol.md").read_text()
    for row in [*rows(QUEUE_KEYS, "fairway:{{Q}}:{part}"), *rows(GLOBAL_KEYS, "fairway:{part}")]:
        assert row in text, f"docs/protocol.md lacks the key table row {row}"


def test_tenants_doc_quotes_the_tenant_group_key_table() -> None:
    text = (DOCS / "tenants.md").read_text()
    for row in rows(TENANT_GROUP_KEYS, "{part}"):
        assert row in text, f"docs/tenants.md lacks the key table row {row}"


def test_python_key_names_are_the_table_parts_after_the_hash_tagged_base() -> None:
    q, g, glob = QueueKeys("fairway", "emails"), TenantGroupKeys("fairway", "tenant-"), GlobalKeys("fairway")
    assert (q.ready, q.failed_index) == ("fairway:{emails}:ready", "fairway:{emails}:failed_index")
    assert (g.ring, g.tenant("42")) == ("fairway:{tenants:tenant-}:ring", "fairway:{tenants:tenant-}:t:42")
    assert glob.active == "fairway:active"
    with pytest.raises(ValueError, match="not in the key table"):

        class Broken(QueueKeys):
            nonsense = QueueKeys.__dict__["ready"].__class__(QUEUE_KEYS, "nonsense")


SCRIPTS = Path(scripts.__file__).parent / "scripts"


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.lua")), ids=lambda p: p.name)
def test_script_sources_name_key_parts_only_through_the_table(path: Path) -> None:
    """Sources write QK.<part> / GK.<part>; no script spells a key part as a literal next to a key
    base, and every part it names is in the table (the loader refuses others)."""
    code = "\n".join(line.split("--", 1)[0] for line in path.read_text().splitlines())  # code only
    known = {("QK", k.part.rstrip(":")) for k in QUEUE_KEYS} | {("GK", k.part.rstrip(":")) for k in TENANT_GROUP_KEYS}
    used = set(re.findall(r"\b(QK|GK)\.([a-z_]+)", code))
    assert used <= known, used - known
    assert not re.search(r"G \.\. '[a-z_]+", code), "a tenant key part spelled inline"
    assert not re.search(r"queue_key\([^)]*'[a-z_]+'\)", code), "a queue key part spelled inline"


@pytest.mark.parametrize("name", scripts.NAMES)
def test_loaded_scripts_carry_the_literal_parts(name: str) -> None:
    source = scripts.source(name)
    assert lua_prelude() in source
    assert not re.search(r"\b(QK|GK)\.[a-z]", source), "every key part was replaced by its literal"


def test_the_ready_field_is_lib_luas() -> None:
    from fairway.queue.protocol.keys import READY_FIELD

    lib = (Path(__file__).resolve().parents[3] / "worker/fairway/queue/protocol/scripts/lib.lua").read_text()
    assert f"local READY = '{READY_FIELD.replace(chr(9), chr(92) + 't')}'" in lib
