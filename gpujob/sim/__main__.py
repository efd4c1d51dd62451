import sys

from gpujob.sim.daemon import main

sys.exit(main())
