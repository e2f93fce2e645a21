"""The plan file: the `Plan` and order models, the rules a plan read back keeps, the compact
text of its runs and its seal, and writing and reading `plan.toml` and `order.toml`."""
