import sys

from tools.reliability.runner import main

sys.exit(main())
