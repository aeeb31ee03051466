"""``python -m aliasflow``: the command line."""
from .cli import main

main()
