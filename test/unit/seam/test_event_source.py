"""Parity of the events' source with the reference operator.

kubeflow/mpi-operator v0.8.2 records MPIJob events with a recorder whose source
component is its controllerAgentName, ``mpi-job-controller`` (client-go copies the
component into ``reportingComponent``). An operator replaced in place must keep a
job's events under that source, so that ``kubectl get events --field-selector
source=mpi-job-controller`` and alerts on it keep matching. Both kinds use it.
"""

from __future__ import annotations

import pytest
from seam_objects import MPIJobBuilder, T9kJobBuilder
from sync_fixtures import own_recorder

# Spelled out, not imported: a change of the code's constant must fail here.
REFERENCE_COMPONENT = "mpi-job-controller"


@pytest.mark.parametrize("kind", ["kubeflow", "t9k"])
def test_events_have_the_reference_controllers_source(kind: str) -> None:
    recorder = own_recorder(kind)
    job = (MPIJobBuilder("pi") if kind == "kubeflow" else T9kJobBuilder("pi")).obj()
    event = recorder.make_event(job, "Normal", "MPIJobCreated", "created")
    assert event["source"] == {"component": REFERENCE_COMPONENT}
    assert event["reportingComponent"] == REFERENCE_COMPONENT
