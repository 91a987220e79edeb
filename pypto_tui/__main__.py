"""`python -m pypto_tui` runs the same CLI as the `pypto-tui` script."""

from pypto_tui.cli import main

if __name__ == "__main__":
    main()
