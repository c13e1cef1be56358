"""The checkpoint tests' settings (their loopback Hub is in tests/conftest.py)."""

# Run by hand with torch (the `peer` extra) to write the fixtures; the tests never import it.
collect_ignore = ["fixtures/write_torch_fixtures.py"]
