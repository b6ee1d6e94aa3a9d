"""The producer, admin and read side: what writes jobs and what people and the balancer read."""
