# %% The pi example through the Python SDK: create the MPIJob, wait until it
# succeeded, print the launcher's log, delete it. Run from the repository's root
# (python examples/sdk/pi.py) or cell by cell in a notebook.
from mpi_operator.sdk import MPIJobClient, SDKError

client = MPIJobClient()  # the kubeconfig's current context and namespace, else in cluster

# %% Create it from the example's YAML (a v2beta1.MPIJob model works too).
job = client.create_from_yaml("examples/v2beta1/pi/pi.yaml")
print(f"created {job.namespace}/{job.name}")

# %% Wait for Succeeded, printing a line whenever its status changes.
job = client.wait(job.name, "Succeeded", timeout=600, progress=True)
assert job.status is not None
print(f"succeeded at {job.status.completion_time}")

# %% The launcher's log (where the node serves it).
try:
    for line in client.logs(job.name, follow=True):
        print(line)
except SDKError as e:
    print(f"no log: {e}")

# %% Clean up.
client.delete(job.name, wait=True)
print("deleted")
