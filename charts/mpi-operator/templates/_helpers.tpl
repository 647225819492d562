{{/* The labels of every object: the Go operator's, so that its Deployment's selector matches. */}}
{{- define "mpi-operator.labels" -}}
app: mpi-operator
app.kubernetes.io/component: mpijob
app.kubernetes.io/name: mpi-operator
kustomize.component: mpi-operator
{{- end -}}

{{/* The chart's name: nameOverride, else the chart's. */}}
{{- define "mpi-operator.name" -}}
{{ .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The name of the operator's objects: fullnameOverride, else the chart's name. Unlike
     the `helm create` scaffold it is not prefixed with the release's name: the objects
     keep the names of deploy/ and of the Go operator, whatever the release is called. */}}
{{- define "mpi-operator.fullname" -}}
{{ .Values.fullnameOverride | default (include "mpi-operator.name" .) | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The operator's ServiceAccount: serviceAccount.name, else the full name (also when the
     chart does not create it: the user then brings a ServiceAccount of that name). */}}
{{- define "mpi-operator.serviceAccountName" -}}
{{ .Values.serviceAccount.name | default (include "mpi-operator.fullname" .) }}
{{- end -}}

{{/* The pod's annotations: podAnnotations over the chart's own. */}}
{{- define "mpi-operator.podAnnotations" -}}
{{ merge (dict) .Values.podAnnotations (dict "sidecar.istio.io/inject" "false") | toYaml }}
{{- end -}}

{{- define "mpi-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "mpi-operator.lockNamespace" -}}
{{ .Values.leaderElection.lockNamespace | default .Release.Namespace }}
{{- end -}}

{{/* The namespaces a namespaced operator watches: watchNamespaces, else the release's. */}}
{{- define "mpi-operator.watchNamespaces" -}}
{{ (.Values.rbac.watchNamespaces | default (list .Release.Namespace)) | join "," }}
{{- end -}}

{{- define "mpi-operator.validate" -}}
{{- if not (has .Values.rbac.scope (list "cluster" "namespaced")) -}}
{{- fail (printf "rbac.scope must be cluster or namespaced, not %q" .Values.rbac.scope) -}}
{{- end -}}
{{- if and .Values.rbac.watchNamespaces (ne .Values.rbac.scope "namespaced") -}}
{{- fail "rbac.watchNamespaces needs rbac.scope=namespaced" -}}
{{- end -}}
{{- range $key, $_ := fromYaml (include "mpi-operator.labels" .) -}}
{{- if hasKey $.Values.podLabels $key -}}
{{- fail (printf "podLabels must not set %s: the Deployment's selector sets it" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* What the operator does with the API (manifests/rbac/cluster/cluster-role.yaml's rules,
     without PriorityClasses, which only a ClusterRole can grant). */}}
{{- define "mpi-operator.rules" -}}
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs"]
  verbs: ["list", "watch", "delete"]
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs/status"]
  verbs: ["update"]
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "deletecollection"]
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["list", "watch", "create", "update"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["jobs/status"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["scheduling.volcano.sh", "scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["list", "watch", "create", "update", "delete"]
- apiGroups: ["scheduling.k8s.io"]
  resources: ["podgroups"]
  verbs: ["list", "watch", "create", "delete"]
{{- end -}}

{{- define "mpi-operator.priorityClassRules" -}}
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["list", "watch"]
{{- end -}}

{{/* manifests/components/t9k/rbac-rules.yaml */}}
{{- define "mpi-operator.t9kRules" -}}
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["mpijobs"]
  verbs: ["list", "watch"]
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["mpijobs/status"]
  verbs: ["update"]
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["mpijobs/finalizers"]
  verbs: ["update"]
- apiGroups: ["scheduler.tensorstack.dev"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
{{- end -}}
