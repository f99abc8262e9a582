"""``python -m harvestman.cli``: the ``harvestman`` command."""

from harvestman.cli import main

main()
