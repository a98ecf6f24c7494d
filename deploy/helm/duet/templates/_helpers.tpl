{{/* The chart's name, and the release-qualified name of its objects. */}}
{{- define "duet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "duet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "duet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "duet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "duet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "duet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "duet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "duet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "duet.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The names the Service is reached by inside the cluster. */}}
{{- define "duet.allowedHosts" -}}
{{- $svc := include "duet.fullname" . }}
{{- $hosts := list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) }}
{{- range .Values.ingress.hosts }}{{ $hosts = append $hosts .host }}{{ end }}
{{- range .Values.allowedHosts }}{{ $hosts = append $hosts . }}{{ end }}
{{- join "," (uniq $hosts) }}
{{- end }}

{{/*
The container of a Duet process. Arguments: a dict of
  root: the chart's context, args: the duet command, component: serve | worker | migrate,
  workers: DUET_WORKERS (absent for migrate), browser: whether Chromium runs in it.
*/}}
{{- define "duet.container" -}}
{{- $root := .root }}
{{- $v := $root.Values -}}
- name: duet
  image: {{ include "duet.image" $root | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args: {{ toJson .args }}
  env:
    - name: DUET_DATABASE_URL_FILE
      value: /run/secrets/duet/database-url
    - name: DUET_MASTER_KEY_FILE
      value: /run/secrets/duet/master-key
    {{- if $v.gatewayKeys.existingSecret }}
    - name: DUET_GATEWAY_API_KEYS_FILE
      value: /run/secrets/duet/gateway-keys
    {{- end }}
    {{- range $v.secretFiles }}
    {{- if not (hasSuffix "_FILE" .env) }}{{ fail (printf "secretFiles: env %q must be a *_FILE setting" .env) }}{{ end }}
    - name: {{ .env }}
      value: /run/secrets/duet/{{ .env | lower | replace "_" "-" }}
    {{- end }}
    - name: DUET_HOME
      value: /var/lib/duet
    - name: DUET_ARTIFACT_DIR
      value: {{ $v.artifacts.mountPath | quote }}
    - name: DUET_ARTIFACT_RETENTION
      value: {{ $v.artifacts.retention | quote }}
    {{- if ne .component "migrate" }}
    - name: DUET_WORKERS
      value: {{ .workers | quote }}
    {{- end }}
    {{- if eq .component "serve" }}
    - name: DUET_ADDR
      value: "0.0.0.0:8420"
    - name: DUET_ALLOWED_HOSTS
      value: {{ include "duet.allowedHosts" $root | quote }}
    {{- end }}
    {{- if .browser }}
    - name: DUET_PARALLEL
      value: {{ $v.worker.parallel | quote }}
    - name: DUET_BROWSERS
      value: {{ $v.worker.browsers | quote }}
    - name: DUET_BROWSER_SANDBOX
      value: {{ ternary "on" "off" $v.browser.sandbox | quote }}
    {{- end }}
    {{- if and (ne .component "migrate") (or $v.metrics.enabled (eq .component "worker")) }}
    - name: DUET_METRICS
      value: {{ printf "0.0.0.0:%v" $v.metrics.port | quote }}
    {{- end }}
    {{- range $name, $value := $v.env }}
    - name: {{ $name }}
      value: {{ $value | toString | quote }}
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- if ne .component "migrate" }}
  ports:
    {{- if eq .component "serve" }}
    - name: http
      containerPort: 8420
      protocol: TCP
    {{- end }}
    {{- if or $v.metrics.enabled (eq .component "worker") }}
    - name: metrics
      containerPort: {{ $v.metrics.port }}
      protocol: TCP
    {{- end }}
  {{- $port := ternary "http" "metrics" (eq .component "serve") }}
  {{- /* The probes name the host: Duet answers only the host names it knows (DUET_ALLOWED_HOSTS), and loopback always. */}}
  startupProbe:
    httpGet: {path: /healthz, port: {{ $port }}, httpHeaders: [{name: Host, value: localhost}]}
    periodSeconds: 2
    failureThreshold: 60
  livenessProbe:
    httpGet: {path: /healthz, port: {{ $port }}, httpHeaders: [{name: Host, value: localhost}]}
    periodSeconds: 10
    timeoutSeconds: 5
    failureThreshold: 3
  readinessProbe:
    httpGet: {path: /readyz, port: {{ $port }}, httpHeaders: [{name: Host, value: localhost}]}
    periodSeconds: 5
    timeoutSeconds: 5
    failureThreshold: 2
  {{- end }}
  {{- if and (eq .component "serve") $v.serve.preStopSleepSeconds }}
  lifecycle:
    preStop:
      exec:
        command: ["/bin/sleep", {{ $v.serve.preStopSleepSeconds | quote }}]
  {{- end }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
    {{- if or (not .browser) (not $v.browser.sandbox) }}
    seccompProfile:
      type: RuntimeDefault
    {{- end }}
  volumeMounts:
    - name: secrets
      mountPath: /run/secrets/duet
      readOnly: true
    - name: home
      mountPath: /var/lib/duet
    - name: tmp
      mountPath: /tmp
    - name: user-home
      mountPath: /home/duet
    {{- if ne .component "migrate" }}
    - name: artifacts
      mountPath: {{ $v.artifacts.mountPath | quote }}
    {{- end }}
    {{- if .browser }}
    - name: shm
      mountPath: /dev/shm
    {{- end }}
{{- end }}

{{/* The volumes of a Duet pod; argument: the same dict as duet.container. */}}
{{- define "duet.volumes" -}}
{{- $root := .root }}
{{- $v := $root.Values -}}
- name: secrets
  projected:
    defaultMode: 0440
    sources:
      - secret:
          name: {{ required "database.existingSecret: name the Secret that holds the PostgreSQL URL" $v.database.existingSecret }}
          items: [{key: {{ $v.database.key | quote }}, path: database-url}]
      - secret:
          name: {{ required "masterKey.existingSecret: name the Secret that holds the master key" $v.masterKey.existingSecret }}
          items: [{key: {{ $v.masterKey.key | quote }}, path: master-key}]
      {{- if $v.gatewayKeys.existingSecret }}
      - secret:
          name: {{ $v.gatewayKeys.existingSecret }}
          items: [{key: {{ $v.gatewayKeys.key | quote }}, path: gateway-keys}]
      {{- end }}
      {{- range $v.secretFiles }}
      - secret:
          name: {{ .secret }}
          items: [{key: {{ .key | quote }}, path: {{ .env | lower | replace "_" "-" }}}]
      {{- end }}
- name: home
  emptyDir: {}
- name: tmp
  emptyDir: {}
- name: user-home
  emptyDir: {}
{{- if ne .component "migrate" }}
- name: artifacts
  {{- if $v.artifacts.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ $v.artifacts.persistence.existingClaim | default (printf "%s-artifacts" (include "duet.fullname" $root)) }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}
{{- if .browser }}
- name: shm
  emptyDir:
    medium: Memory
    sizeLimit: {{ $v.worker.shmSize }}
{{- end }}
{{- end }}

{{/* The pod-level fields every Duet pod shares. */}}
{{- define "duet.podCommon" -}}
serviceAccountName: {{ include "duet.serviceAccountName" . }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}
