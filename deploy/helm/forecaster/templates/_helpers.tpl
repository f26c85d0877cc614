{{/* Labels on every object: the Kustomize base's two plus Helm's usual ones. */}}
{{- define "forecaster.labels" -}}
app.kubernetes.io/name: forecaster
app.kubernetes.io/part-of: forecaster
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "forecaster.selector" -}}
app.kubernetes.io/name: forecaster
app.kubernetes.io/component: daemon
{{- end }}

{{- define "forecaster.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* The pod security context every pod of ours runs with (Pod Security "restricted"). */}}
{{- define "forecaster.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile: {type: RuntimeDefault}
{{- end }}

{{- define "forecaster.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end }}

{{- define "forecaster.checkovSkips" -}}
checkov.io/skip1: "CKV_K8S_11=no CPU limit on purpose: requests reserve CPU, a limit would only throttle a tick (CFS) and delay the lease renewal"
checkov.io/skip2: "CKV_K8S_43=the image is one value the operator sets (kustomize images: or Helm image.digest); pin it by digest at release"
checkov.io/skip3: "CKV_K8S_38=this pod talks to the API server (placeholders, Lease, state, NodePools): it needs its ServiceAccount token"
{{- end }}

{{/* The placeholders' own namespace (values placeholders.namespace, else <release>-placeholders). */}}
{{- define "forecaster.placeholdersNamespace" -}}
{{ .Values.placeholders.namespace | default (printf "%s-placeholders" .Release.Namespace) }}
{{- end }}

{{/* forecaster.yaml, built from the values (the keys of config/forecaster.yaml). */}}
{{- define "forecaster.config" -}}
{{- $pools := deepCopy .Values.pools -}}
{{- $config := dict -}}
{{- $_ := set $config "source" (dict "kind" "prometheus" "prometheus" (dict "url" .Values.prometheus.url)) -}}
{{- $_ = set $config "models_dir" "/var/lib/forecaster/models" -}}
{{- $_ = set $config "models_store" "configmap" -}}
{{- $_ = set $config "dry_run" false -}}
{{- $_ = set $config "reconcile_every_seconds" .Values.reconcileEverySeconds -}}
{{- $_ = set $config "namespace" .Release.Namespace -}}
{{- $planning := dict "budgets" (deepCopy .Values.budgets) "placeholders" (dict "namespace" (include "forecaster.placeholdersNamespace" .)) "protect_nodepools" .Values.protectNodePools "actuation" .Values.actuation -}}
{{- $_ = set $config "planning" $planning -}}
{{- $_ = set $config "pools" $pools -}}
{{- toYaml (mergeOverwrite $config (deepCopy .Values.extraConfig)) -}}
{{- end }}

{{- define "forecaster.configVolume" -}}
- name: config
  configMap: {name: forecaster-config}
{{- end }}

{{/* Pod spec of the cleanup commands (expiry CronJob, uninstall hook): root, args. They read
no config - only the namespace - so a config that does not validate cannot stop them. */}}
{{- define "forecaster.cleanupPod" -}}
serviceAccountName: {{ if has "--expired" .args }}forecaster-expire{{ else }}forecaster-cleanup{{ end }}
restartPolicy: Never
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  seccompProfile: {type: RuntimeDefault}
containers:
  - name: {{ if has "--expired" .args }}expire{{ else }}cleanup{{ end }}
    image: {{ include "forecaster.image" .root }}
    imagePullPolicy: {{ .root.Values.image.pullPolicy }}
    args: {{ concat .args (list "--namespace" .root.Release.Namespace "--placeholders-namespace" (include "forecaster.placeholdersNamespace" .root)) | toJson }}
    resources:
      requests: {cpu: 50m, memory: 128Mi}
      limits: {memory: 256Mi}
    securityContext:
      {{- include "forecaster.containerSecurity" .root | nindent 6 }}
{{- end }}
