import sys

from torchmsa.cli import exit_with, run_command

exit_with(run_command(sys.argv[1:]))
