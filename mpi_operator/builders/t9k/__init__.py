"""Pure builders of the children of a T9k MPIJob (``batch.tensorstack.dev/v1beta1``).

Like :mod:`mpi_operator.builders`, they take a defaulted, valid job and return
wire-form objects, with no I/O and no clock. The launcher is a bare Pod
``<job>-launcher`` (restartPolicy Never), not a batch Job: its phase and exit
code are the job's result, pause deletes it with the workers, and debug mode
keeps it up with ``sleep inf``, all without a Job controller in between.
"""
