"""The `herald` command (`herald.cli.main`): record MCP traffic, lint it, and look at it.

This package's `__init__` imports nothing, so that `giftgenius serve` can use the lean
`herald.cli.checks` without loading typer and rich.
"""
