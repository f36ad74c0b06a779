{{/* Names and labels shared by every object of the chart. */}}
{{- define "switchboard.fullname" -}}
{{- printf "%s-switchboard" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "switchboard.labels" -}}
app.kubernetes.io/name: switchboard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "switchboard.selector" -}}
app.kubernetes.io/name: switchboard
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Environment every process gets: the ConfigMap, then the operator's Secret. */}}
{{- define "switchboard.envFrom" -}}
- configMapRef:
    name: {{ include "switchboard.fullname" . }}
- secretRef:
    name: {{ required "existingSecret: name the Secret holding JWT_SECRET, ENCRYPTION_KEYS, PLATFORM_ADMIN_TOKEN and MONGODB_URI" .Values.existingSecret }}
{{- end -}}

{{/* The Temporal client certificate (mTLS), when one is configured. */}}
{{- define "switchboard.tlsVolumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.temporal.clientCertSecret }}
- name: temporal-tls
  mountPath: /etc/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "switchboard.tlsVolumes" -}}
# tsx keeps its transpile cache in the temp dir; the root filesystem is read-only.
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- if .Values.temporal.clientCertSecret }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.clientCertSecret }}
{{- end }}
{{- end -}}

{{/* An image reference: by digest when one is given (recommended), else by its pinned tag. */}}
{{- define "switchboard.image" -}}
{{- if .image.digest -}}
{{ printf "%s@%s" .image.repository .image.digest | quote }}
{{- else -}}
{{ printf "%s:%s" .image.repository (required "images.*.tag: pin a version" .image.tag) | quote }}
{{- end -}}
{{- end -}}

{{/* An ingress rule admitting scrapers to a metrics port (nothing when metrics are off). */}}
{{- define "switchboard.metricsIngress" -}}
{{- if .root.Values.metrics.enabled }}
    - ports:
        - port: {{ .port }}
          protocol: TCP
      from:
        - namespaceSelector:
            {{- with .root.Values.metrics.scraperNamespaceLabels }}
            matchLabels:
              {{- toYaml . | nindent 14 }}
            {{- else }}
            {}
            {{- end }}
{{- end }}
{{- end }}
