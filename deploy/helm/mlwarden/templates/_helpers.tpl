{{/* The chart's name, truncated to 63 characters as Kubernetes names are. */}}
{{- define "mlwarden.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the release name, with the chart's unless it contains it. */}}
{{- define "mlwarden.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mlwarden.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mlwarden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mlwarden.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "mlwarden.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: admission
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "mlwarden.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "mlwarden.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "mlwarden.tlsSecretName" -}}
{{- .Values.tls.secretName | default (printf "%s-tls" (include "mlwarden.fullname" .)) -}}
{{- end -}}

{{/*
The image reference: repository:tag, with @digest when image.digest is set.
"latest" is refused, and a digest must be sha256:<64 hex>.
*/}}
{{- define "mlwarden.image" -}}
{{- $tag := .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: latest is refused: set a release tag (and image.digest)" -}}
{{- end -}}
{{- with .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" .) -}}
{{- fail (printf "image.digest %q is not sha256:<64 hex digits>" .) -}}
{{- end -}}
{{- printf "%s:%s@%s" $.Values.image.repository $tag . -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
The config file: .Values.config with serve.scan-deadline derived from the
webhook's timeout when it is not set (3 s of margin for the answer), and
serve.harbor.token-file set to the mounted harbor.existingSecret when
serve.harbor is not set.
*/}}
{{- define "mlwarden.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $serve := get $cfg "serve" | default dict -}}
{{- if not (hasKey $serve "scan-deadline") -}}
{{- $timeout := int .Values.webhook.timeoutSeconds -}}
{{- if lt $timeout 4 -}}
{{- fail "webhook.timeoutSeconds must be at least 4 when config.serve.scan-deadline is not set" -}}
{{- end -}}
{{- $_ := set $serve "scan-deadline" (printf "%ds" (sub $timeout 3)) -}}
{{- end -}}
{{- if and .Values.harbor.existingSecret (not (hasKey $serve "harbor")) -}}
{{- $_ := set $serve "harbor" (dict "token-file" "/etc/mlwarden/harbor/token") -}}
{{- end -}}
{{- $_ := set $cfg "serve" $serve -}}
{{- toYaml $cfg -}}
{{- end -}}
