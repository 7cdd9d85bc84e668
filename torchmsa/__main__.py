import sys

from torchmsa.cli import main

sys.exit(main())
