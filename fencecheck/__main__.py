"""`python -m fencecheck` and the `fencecheck` console script."""

from fencecheck.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
