"""Supervisor planning: which pools a spec asks for, each pool's worker settings, and how many
processes each gets (the balancing arithmetic). Pure, except `load`, which reads Redis for it."""
