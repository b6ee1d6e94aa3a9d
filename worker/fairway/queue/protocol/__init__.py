"""The wire protocol (docs/protocol.md): documents, keys, script calls, scripts, the weighted draw."""
