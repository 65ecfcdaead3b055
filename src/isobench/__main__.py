"""`python -m isobench`: the same command, through the same error frame."""

from isobench.cli.entry import main

main()
