"""Helpers of the dashboard's end-to-end tests: a real ``harvestman serve`` and Chromium."""
