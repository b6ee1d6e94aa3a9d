"""`fairway simulate`: replay an arrival trace through the real planner and its baselines."""
