"""Helpers shared by the tests, imported as ``support`` (tests/ is on the path, as for
``testsite``)."""
