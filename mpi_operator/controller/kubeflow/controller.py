"""The Kubeflow MPIJob controller: its informers (label-filtered child caches), the
sync handler and the event handlers, on the shared queue machinery of
:class:`~mpi_operator.controller.queue_controller.QueueController`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Unpack

from mpi_operator.api.v2beta1 import API_VERSION, KIND
from mpi_operator.client import (
    CONFIGMAPS,
    JOBS,
    MPIJOBS,
    PODS,
    SECRETS,
    SERVICES,
    KubeClient,
    SharedInformer,
    split_key,
)
from mpi_operator.client.kubeapi import PRIORITY_CLASSES
from mpi_operator.controller.core.crds import GANG_SCHEDULING_FLAG
from mpi_operator.controller.core.objects import slim_pod
from mpi_operator.controller.core.on_demand import OnDemandCache
from mpi_operator.controller.handlers import ChildHandlers, Urgent
from mpi_operator.controller.kubeflow.children import ThroughLauncherJob, pod_group_resource
from mpi_operator.controller.kubeflow.context import (
    OPERATOR_SELECTOR,
    WORKERS_INDEX,
    Listers,
    SyncContext,
    job_reference,
    workers_index,
)
from mpi_operator.controller.kubeflow.metrics import ControllerMetrics
from mpi_operator.controller.kubeflow.policy import replacing_failed
from mpi_operator.controller.kubeflow.sync import MPIJobSyncer
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.queue_controller import (
    JobInformers,
    QueueController,
    Wiring,
)
from mpi_operator.controller.runner import SyncRunner

QUEUE_NAME = "mpijob"


class MPIJobController(QueueController):
    informers: Informers

    def __init__(
        self, client: KubeClient, options: ControllerOptions, **wiring: Unpack[Wiring]
    ) -> None:
        super().__init__(QUEUE_NAME, client, options, reference=job_reference, **wiring)
        self.metrics = ControllerMetrics.create(self.registry)
        self.state.also_forget(lambda key: self.metrics.forget_job(*split_key(key)))
        self.informers = self._informers()
        self.syncer = MPIJobSyncer(
            SyncContext(
                client=client,
                listers=self.informers.listers(),
                recorder=self.recorder,
                clock=self.clock,
                options=options,
                metrics=self.metrics,
                state=self.state,
                requeue=self.continue_later,
                continuing=self.queue.continuing,
                requeue_after=self.queue.add_after,
            )
        )
        self.runner = SyncRunner(
            QUEUE_NAME,
            self.queue,
            self.scoped_sync(self.syncer.sync),
            self.metrics.reconcile_duration,
            self.state.failures,
            threadiness=options.threadiness,
        )
        self.connect_handlers(
            ChildHandlers(
                API_VERSION,
                KIND,
                self.informers.mpijobs.lister,
                self.enqueue_batched,
                ThroughLauncherJob(self.informers.jobs.lister),
                # A RestartFailed restart's steps each wait on one or two children (the
                # failed workers, the old launcher Job, the new workers being Ready):
                # a batch delay at each step would be most of the restart's time.
                urgent=Urgent(replacing_failed, self.enqueue),
            ),
        )

    def _informers(self) -> Informers:
        f = self.factory
        gang = self.options.gang
        # Children carry the operator label; caching only those keeps memory
        # flat on clusters with many unrelated pods (a deliberate difference).
        return Informers(
            mpijobs=f.informer_for(MPIJOBS),
            pods=f.informer_for(
                PODS,
                label_selector=OPERATOR_SELECTOR,
                indexers={WORKERS_INDEX: workers_index},
                transform=slim_pod,
            ),
            jobs=f.informer_for(JOBS, label_selector=OPERATOR_SELECTOR),
            services=f.informer_for(SERVICES, label_selector=OPERATOR_SELECTOR),
            configmaps=f.informer_for(CONFIGMAPS, label_selector=OPERATOR_SELECTOR),
            secrets=f.informer_for(SECRETS, label_selector=OPERATOR_SELECTOR),
            # Not started with the others but by the first sync that needs it, once a
            # LIST shows its API served: a cluster without the gang scheduler's API
            # (its CRD, or the Workload API's feature gates) fails only the jobs that
            # need a PodGroup, with an event naming what is missing, instead of the
            # initial sync of every cache never ending (or its LIST failing in a loop).
            pod_groups=f.on_demand(
                SharedInformer(
                    self.client,
                    pod_group_resource(gang),
                    namespace=self.options.namespace,
                    clock=self.clock,
                )
            )
            if gang
            else None,
            priority_classes=f.informer_for(PRIORITY_CLASSES) if gang else None,
        )


@dataclass(slots=True)
class Informers(JobInformers):
    jobs: SharedInformer
    services: SharedInformer
    configmaps: SharedInformer
    secrets: SharedInformer
    pod_groups: SharedInformer | None = None
    priority_classes: SharedInformer | None = None
    LISTER_ONLY: ClassVar[tuple[str, ...]] = ("priority_classes",)

    def listers(self) -> Listers:
        return Listers(
            mpijobs=self.mpijobs.lister,
            pods=self.pods.lister,
            jobs=self.jobs.lister,
            services=self.services.lister,
            configmaps=self.configmaps.lister,
            secrets=self.secrets.lister,
            pod_groups=(
                OnDemandCache(self.pod_groups, GANG_SCHEDULING_FLAG) if self.pod_groups else None
            ),
            priority_classes=self.priority_classes.lister if self.priority_classes else None,
        )
