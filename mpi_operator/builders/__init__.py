"""Pure functions from an MPIJob to the child objects the operator manages.

Builders take a defaulted, valid MPIJob and return plain Kubernetes objects in
wire (JSON) form, with empty fields omitted as Go's ``omitempty`` omits them.
They do no I/O and read no clock; the SSH key generator is injected.

:mod:`.kubeflow` and :mod:`.t9k` build each kind's children over the shared
:mod:`.meta` (owner references, object metadata, copying) and :mod:`.ssh` (the key
pair, its Secret and volume).
"""
