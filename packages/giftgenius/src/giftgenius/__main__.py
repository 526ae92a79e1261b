"""`python -m giftgenius` runs the command line."""

from giftgenius.cli import main

main()
