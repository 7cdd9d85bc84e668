"""The warm server behind the ``torchmsa`` command (decision 0058).

A fresh ``torchmsa align`` process spends most of its time before aligning: importing torch
(1.3 s on two cores), loading numba's and Triton's cached code, starting CUDA. The command
therefore hands its work to a warm process of the same installation and environment when one
is running, and starts one after a run that found none. The warm process runs the very same
``torchmsa.cli.main`` on the caller's arguments, working directory, environment, standard
input and output, so results, files and exit statuses are those of a local run.

* ``where``: when the server is used, its key (installation, interpreter, environment) and
  its socket and lock paths. Standard library only: the command's client side stays light.
* ``wire``: the framed messages both sides exchange.
* ``client``: forwards one command to the server, or says it could not; starts a server.
* ``server``: the warm process (``python -m torchmsa.daemon.server``).
"""
