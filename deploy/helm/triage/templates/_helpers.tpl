{{/* The chart's name, cut to 63 characters (a label value's limit). */}}
{{- define "triage.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name of the release's objects: <release>-agent. */}}
{{- define "triage.fullname" -}}
{{- printf "%s-agent" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The namespace the agent's objects go to. */}}
{{- define "triage.namespace" -}}
{{- if .Values.namespace.create -}}
{{- .Values.namespace.name -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: stable across upgrades (a DaemonSet's selector is immutable). */}}
{{- define "triage.selectorLabels" -}}
app.kubernetes.io/name: triage-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "triage.labels" -}}
{{ include "triage.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The image reference. */}}
{{- define "triage.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Where the TLS Secret is mounted. */}}
{{- define "triage.tlsDir" -}}/run/secrets/triage-tls{{- end -}}
