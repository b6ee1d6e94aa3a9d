from support.kopf_kmock import k8s  # noqa: F401  (the test API server, over HTTP)
