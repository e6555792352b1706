"""`python -m api.cli`: the same as the `watershed` command."""

from api.cli import main

main()
