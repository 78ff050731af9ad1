"""The malformed-input harness: corpus loader, generator, the full run and its tests (issue 22)."""
