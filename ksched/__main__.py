"""``python -m ksched`` is the ``ksched`` command."""

from ksched.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
