"""The plan file: the `Plan` and order models, the rules a plan read back keeps, its runs
file (`runs.jsonl`) and the seal of hand-written run tables, and writing and reading
`plan.toml` and `order.toml`."""
