"""`python -m api.cli`: the same as the `watershed` command."""

from watershed.api.cli import main

main()
