"""`python -m isobench`: the same command, through the same error frame."""

from isobench.entry import main

main()
