"""The reconcile kit both MPIJob controllers (Kubeflow and T9k) are built on.

* :mod:`.context`: what a sync needs (API client, recorder, clock, creation
  expectations), which each kind extends with its listers and settings;
* :mod:`.owner`: the MPIJob a sync works for (:class:`~.owner.Owner`, built once per
  sync), the ownership check and create-or-adopt of its children;
* :mod:`.pods`: pod creation in slow-start batches under creation expectations;
* :mod:`.objects`: accessors of pods, batch Jobs and conditions;
* :mod:`.writes`: the status write and the events that go with it;
* :mod:`.progress`: spacing of progress-only writes while a job fans out;
* :mod:`.pod_cache`: the slim pods the informers keep;
* :mod:`.on_demand`: a child kind's cache started by the first sync that needs it
  (its CRD is optional).

The two kinds keep their own syncers, state machines and builders.
"""
