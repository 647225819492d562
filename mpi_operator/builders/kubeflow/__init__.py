"""Builders of a Kubeflow MPIJob's children (``kubeflow.org/v2beta1``): the launcher
Job, the worker pods, the Service, the hostfile ConfigMap, the SSH Secret and the
PodGroup, exactly as the reference operator v0.8.2 builds them."""
