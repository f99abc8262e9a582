"""``python -m harvestman.cli``: the ``harvestman`` command."""

from harvestman.cli.app import main

main()
