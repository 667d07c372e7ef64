"""Start Transformer Explorer: ``python main.py [checkpoint.ckpt | model folder] [--device cpu] [--lang zh]``."""

import sys

from explorer.app import main

if __name__ == "__main__":
    sys.exit(main())
