from torchmsa.cli import exit_with, main

exit_with(main())
