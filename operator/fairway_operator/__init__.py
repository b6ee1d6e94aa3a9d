"""The Fairway Kubernetes operator (kopf). Import `fairway_operator.handlers` to register handlers."""
