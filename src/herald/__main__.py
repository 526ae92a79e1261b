"""`python -m herald`: the `herald` command."""

from herald.cli.main import main

main()
