"""oasis.cluster: the local-cluster launcher, the cluster TOML and the cluster commands (up, down, status,
search, index, demo). The top of the house, beside the CLI."""
