"""Benchmarks: scripts that append tidy rows to ``benchmarks/results/*.csv``.

Every benchmark times processes that compute by themselves: the command's warm server
(``torchmsa/daemon``, decision 0058) is off for them and their children, except where a
benchmark measures it on purpose (``cold_start``'s ``served`` regime sets it on in that
regime's environment).
"""

import os

os.environ["TORCHMSA_DAEMON"] = "off"
