"""The worker runtime: fetch, run, settle (the ledger), housekeeping, drain and shutdown."""
