"""`python -m engram_client.hooks <event>`: `engram-hook` where its script is not on PATH."""

from engram_client.hooks.commands import main

main()
