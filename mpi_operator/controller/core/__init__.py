"""The reconcile kit both MPIJob controllers (Kubeflow and T9k) are built on.

* :mod:`.context`: what a sync needs (API client, recorder, clock, per-job state),
  which each kind extends with its listers and settings;
* :mod:`.state`: what is kept per MPIJob between syncs, forgotten in one place;
* :mod:`.owner`: the MPIJob a sync works for, the ownership check, create-or-adopt
  and delete of its children, concurrent calls;
* :mod:`.pods`: pod creation in slow-start batches, pod deletion, the slim pods the
  informers keep, and deleting a job's pods as one collection;
* :mod:`.objects`: accessors of pods, batch Jobs, conditions and times;
* :mod:`.job_sync`: one sync of one MPIJob as one value (context, owner, job, key),
  and the one finish of either kind: write the decision, then act on it;
* :mod:`.writes`: the decision both kinds' status code returns, the status write and
  its events;
* :mod:`.crds`: child kinds whose CRD may be missing, and their on-demand caches.
"""
