"""``python -m analysim``: the same command as the ``analysim`` console script."""

from analysim.faces.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
