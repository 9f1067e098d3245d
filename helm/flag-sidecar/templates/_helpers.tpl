{{/*
Two kinds of named templates live here.

1. The pod-spec fragments an app chart includes (flag-sidecar.containers, flag-sidecar.initContainers,
   flag-sidecar.container, flag-sidecar.volumes, flag-sidecar.podLabels, flag-sidecar.appEnv). They read only
   `.Values` (this chart's values) and, when given, `.Capabilities` and `.Release`, so the caller passes a dict:

     {{- $fs := dict "Values" .Values.flagSidecar "Capabilities" .Capabilities "Release" .Release }}
     containers:
       {{- include "flag-sidecar.containers" $fs | nindent 8 }}

   (`.Values.flagSidecar` holds this chart's values, defaults merged in, when the app chart lists it as a
   dependency with alias flagSidecar; without an alias it is `index .Values "flag-sidecar"`.)

2. Helpers of this chart's own resources (names, labels), which also need `.Chart` and `.Release`.
*/}}

{{/* The chart's name in kebab case: an app chart's dependency alias (e.g. flagSidecar) becomes .Chart.Name, and
resource names must be lower case. */}}
{{- define "flag-sidecar.chartName" -}}
{{- regexReplaceAll "([a-z0-9])([A-Z])" .Chart.Name "${1}-${2}" | lower }}
{{- end }}

{{/* Chart name, at most 63 characters. */}}
{{- define "flag-sidecar.name" -}}
{{- default (include "flag-sidecar.chartName" .) .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of this release's resources, at most 63 characters. */}}
{{- define "flag-sidecar.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "flag-sidecar.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart label value: name-version. */}}
{{- define "flag-sidecar.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource of this release. */}}
{{- define "flag-sidecar.labels" -}}
helm.sh/chart: {{ include "flag-sidecar.chart" . }}
{{ include "flag-sidecar.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: flag-sidecar
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of this release. */}}
{{- define "flag-sidecar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flag-sidecar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Selector labels of the relay's pods and Service. */}}
{{- define "flag-sidecar.relaySelectorLabels" -}}
{{ include "flag-sidecar.selectorLabels" . }}
app.kubernetes.io/component: relay
{{- end }}

{{/* Labels of the relay's resources. */}}
{{- define "flag-sidecar.relayLabels" -}}
{{ include "flag-sidecar.labels" . }}
app.kubernetes.io/component: relay
{{- end }}

{{/* The image reference: repository@digest when a digest is set, else repository:tag. */}}
{{- define "flag-sidecar.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}
{{- end }}

{{/* FLAG_SIDECAR_PROJECTS from .Values.projects: "id:phc_token,id". Ids go through int64 so large ids never
render in float notation. */}}
{{- define "flag-sidecar.projects" -}}
{{- $items := list }}
{{- range .Values.projects }}
{{- $token := get . "token" }}
{{- if $token }}
{{- $items = append $items (printf "%d:%s" (int64 (get . "id")) $token) }}
{{- else }}
{{- $items = append $items (printf "%d" (int64 (get . "id"))) }}
{{- end }}
{{- end }}
{{- join "," $items }}
{{- end }}

{{/* The environment variable of each key of .Values.config (the setting names of src/config/spec.ts). */}}
{{- define "flag-sidecar.configEnvNames" -}}
pollInterval: FLAG_SIDECAR_POLL_INTERVAL
logLevel: FLAG_SIDECAR_LOG_LEVEL
accessLog: FLAG_SIDECAR_ACCESS_LOG
accessLogRate: FLAG_SIDECAR_ACCESS_LOG_RATE
authCacheTtl: FLAG_SIDECAR_AUTH_CACHE_TTL
authNegativeTtl: FLAG_SIDECAR_AUTH_NEGATIVE_TTL
authGrace: FLAG_SIDECAR_AUTH_GRACE
authCacheMax: FLAG_SIDECAR_AUTH_CACHE_MAX
keyChecksMaxInFlight: FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT
keyChecksRate: FLAG_SIDECAR_KEY_CHECKS_RATE
cacheMaxBytes: FLAG_SIDECAR_CACHE_MAX_BYTES
cacheMaxEntries: FLAG_SIDECAR_CACHE_MAX_ENTRIES
cacheTtl: FLAG_SIDECAR_CACHE_TTL
cacheActivityTtl: FLAG_SIDECAR_CACHE_ACTIVITY_TTL
cacheNotFoundTtl: FLAG_SIDECAR_CACHE_NOT_FOUND_TTL
cacheStaleMax: FLAG_SIDECAR_CACHE_STALE_MAX
endpointRunTtl: FLAG_SIDECAR_ENDPOINT_RUN_TTL
endpointRunMaxBytes: FLAG_SIDECAR_ENDPOINT_RUN_MAX_BYTES
endpointVersionTtl: FLAG_SIDECAR_ENDPOINT_VERSION_TTL
endpointMetricNames: FLAG_SIDECAR_ENDPOINT_METRIC_NAMES
maxRequestBody: FLAG_SIDECAR_MAX_REQUEST_BODY
maxConnections: FLAG_SIDECAR_MAX_CONNECTIONS
opsMaxConnections: FLAG_SIDECAR_OPS_MAX_CONNECTIONS
writeSyncTimeout: FLAG_SIDECAR_WRITE_SYNC_TIMEOUT
flagsAnswerCacheMaxBytes: FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES
staticCohortMaxPersons: FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS
staticCohortRefresh: FLAG_SIDECAR_STATIC_COHORT_REFRESH
staticCohortReread: FLAG_SIDECAR_STATIC_COHORT_REREAD
staticCohortPullTimeout: FLAG_SIDECAR_STATIC_COHORT_PULL_TIMEOUT
upstreamTimeout: FLAG_SIDECAR_UPSTREAM_TIMEOUT
upstreamConnectTimeout: FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT
upstreamMaxBody: FLAG_SIDECAR_UPSTREAM_MAX_BODY
shutdownTimeout: FLAG_SIDECAR_SHUTDOWN_TIMEOUT
redisMode: FLAG_SIDECAR_REDIS_MODE
redisSentinelMaster: FLAG_SIDECAR_REDIS_SENTINEL_MASTER
redisPrefix: FLAG_SIDECAR_REDIS_PREFIX
redisTimeout: FLAG_SIDECAR_REDIS_TIMEOUT
fleetLease: FLAG_SIDECAR_FLEET_LEASE
fleetOutageBudget: FLAG_SIDECAR_FLEET_OUTAGE_BUDGET
fleetFetchRate: FLAG_SIDECAR_FLEET_FETCH_RATE
eventsUrl: FLAG_SIDECAR_EVENTS_URL
eventsAnyToken: FLAG_SIDECAR_EVENTS_ANY_TOKEN
ofrepRequireKey: FLAG_SIDECAR_OFREP_REQUIRE_KEY
eventsQueueMaxBytes: FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES
eventsQueueMaxEvents: FLAG_SIDECAR_EVENTS_QUEUE_MAX_EVENTS
eventsSpoolMax: FLAG_SIDECAR_EVENTS_SPOOL_MAX
eventsIntakeMaxBytes: FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES
eventsBatchSize: FLAG_SIDECAR_EVENTS_BATCH_SIZE
eventsBatchMaxBytes: FLAG_SIDECAR_EVENTS_BATCH_MAX_BYTES
eventsLinger: FLAG_SIDECAR_EVENTS_LINGER
{{- end }}

{{/* config.eventsSpoolMax (the events spool's bound, FLAG_SIDECAR_EVENTS_SPOOL_MAX; default 256MiB) in MiB, rounded up. */}}
{{- define "flag-sidecar.spoolMaxMiB" -}}
{{- $text := .Values.config.eventsSpoolMax | default "256MiB" | toString | trim }}
{{- $number := regexFind "^[0-9]+" $text }}
{{- $unit := trim (trimPrefix $number $text) }}
{{- $factors := dict "" 1 "B" 1 "KiB" 1024 "MiB" 1048576 "GiB" 1073741824 }}
{{- if or (not $number) (not (hasKey $factors $unit)) }}
{{- fail (printf "config.eventsSpoolMax %q is not a size (use e.g. 512KiB, 64MiB)" $text) }}
{{- end }}
{{- div (add (mul (int64 $number) (get $factors $unit)) 1048575) 1048576 }}
{{- end }}

{{/* config.pollInterval in seconds (500ms, 30s, 5m, 1h; 1.5s too), as a plain number. */}}
{{- define "flag-sidecar.pollIntervalSeconds" -}}
{{- $text := .Values.config.pollInterval | default "30s" | toString }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $text }}
{{- $unit := trimPrefix $number $text }}
{{- $factor := get (dict "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0) $unit }}
{{- if not $factor }}
{{- fail (printf "config.pollInterval %q is not a duration (use e.g. 500ms, 30s, 5m, 1h)" $text) }}
{{- end }}
{{- mulf (float64 $number) $factor }}
{{- end }}

{{/* A value as environment text: whole numbers without float notation (values files parse 1000000 as a float,
which toString would print as 1e+06). */}}
{{- define "flag-sidecar.envText" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) }}
{{- printf "%d" (int64 .) }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{/*
Checks of the upstream settings at render time, so a configuration the sidecar would refuse at start fails
`helm install` / `helm template` with a message instead of showing as a crash loop (an app chart's install prints
no NOTES of this chart). Renders nothing. Context: {Values}.
*/}}
{{- define "flag-sidecar.validate" -}}
{{- $keyVars := list "FLAG_SIDECAR_UPSTREAM_KEY" "FLAG_SIDECAR_UPSTREAM_KEY_FILE" -}}
{{- $keySources := list -}}
{{- $projectsVar := false -}}
{{- if .Values.upstream.existingSecret -}}
{{- $keySources = append $keySources (printf "upstream.existingSecret (%s)" .Values.upstream.existingSecret) -}}
{{- end -}}
{{- range $name, $value := .Values.env -}}
{{- if ne (include "flag-sidecar.envText" $value) "" -}}
{{- if has $name $keyVars -}}
{{- $keySources = append $keySources (printf "env.%s" $name) -}}
{{- else if eq $name "FLAG_SIDECAR_PROJECTS" -}}
{{- $projectsVar = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range .Values.extraEnv -}}
{{- $name := get . "name" -}}
{{- if or (get . "value") (get . "valueFrom") -}}
{{- if has $name $keyVars -}}
{{- $keySources = append $keySources (printf "extraEnv %s" $name) -}}
{{- else if eq $name "FLAG_SIDECAR_PROJECTS" -}}
{{- $projectsVar = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if gt (len $keySources) 1 -}}
{{- fail (printf "flag-sidecar: the upstream key is set more than once (%s); the sidecar refuses to start with two key sources, so keep one" (join ", " $keySources)) -}}
{{- end -}}
{{- if and .Values.upstream.url .Values.upstream.relay.service -}}
{{- fail (printf "flag-sidecar: upstream.url (%s) and upstream.relay.service (%s) both name the upstream; keep one" .Values.upstream.url .Values.upstream.relay.service) -}}
{{- end -}}
{{- if and .Values.upstream.relay.service .Values.redis.existingSecret (not (get . "relay")) -}}
{{- fail "flag-sidecar: app pods behind a relay tier (upstream.relay.service) take no Redis: the relay replicas share it and poll PostHog once for all pods. Leave redis.existingSecret empty here and set it in the relay's release" -}}
{{- end -}}
{{- $upstream := include "flag-sidecar.upstreamUrl" . -}}
{{- if $upstream -}}
{{- if not $keySources -}}
{{- fail (printf "flag-sidecar: the upstream is %s but the sidecar has no upstream key, so it would exit at start. Set upstream.existingSecret to a Secret holding a project secret key (phs_...) or a personal key (phx_...) with feature_flag:read (behind a relay: a key the relay accepts, e.g. of its keys file; entry upstream.secretKey, default upstream-key), or set FLAG_SIDECAR_UPSTREAM_KEY / FLAG_SIDECAR_UPSTREAM_KEY_FILE through env or extraEnv. For offline mode, leave upstream.url and upstream.relay.service empty." $upstream) -}}
{{- end -}}
{{- if not (or .Values.projects $projectsVar) -}}
{{- fail (printf "flag-sidecar: the upstream is %s but projects is empty, so the sidecar would exit at start: list the projects to poll, e.g. projects: [{id: 12345, token: phc_...}]" $upstream) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* FLAG_SIDECAR_UPSTREAM_URL: upstream.url, or the relay tier's Service URL when upstream.relay.service is set
(the short Service name resolves in the pod's own namespace); empty: offline. Context: {Values}. */}}
{{- define "flag-sidecar.upstreamUrl" -}}
{{- $relay := .Values.upstream.relay }}
{{- if $relay.service }}
{{- $host := $relay.service }}
{{- with $relay.namespace }}
{{- $host = printf "%s.%s.svc" $relay.service . }}
{{- end }}
{{- printf "http://%s:%v" $host (int64 $relay.port) }}
{{- else }}
{{- .Values.upstream.url }}
{{- end }}
{{- end }}

{{/*
Environment of the sidecar container (a list of EnvVar). Context: {Values, relay?}.
*/}}
{{- define "flag-sidecar.env" -}}
{{- $relay := get . "relay" }}
{{- $host := .Values.listen.host }}
{{- if $relay }}
{{- $host = .Values.relay.listenHost }}
{{- end -}}
- name: FLAG_SIDECAR_LISTEN
  value: {{ printf "%s:%v" $host (int64 .Values.ports.api.port) | quote }}
- name: FLAG_SIDECAR_OPS_LISTEN
  value: {{ printf "%s:%v" .Values.listen.opsHost (int64 .Values.ports.ops.port) | quote }}
- name: FLAG_SIDECAR_SNAPSHOT_DIR
  value: {{ .Values.snapshot.mountPath | quote }}
{{- with include "flag-sidecar.upstreamUrl" . }}
- name: FLAG_SIDECAR_UPSTREAM_URL
  value: {{ . | quote }}
{{- end }}
{{- if .Values.upstream.existingSecret }}
{{- if .Values.upstream.mountAsFile }}
- name: FLAG_SIDECAR_UPSTREAM_KEY_FILE
  value: {{ printf "%s/%s" (trimSuffix "/" .Values.upstream.keyMountPath) .Values.upstream.secretKey | quote }}
{{- else }}
- name: FLAG_SIDECAR_UPSTREAM_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.upstream.existingSecret | quote }}
      key: {{ .Values.upstream.secretKey | quote }}
{{- end }}
{{- end }}
{{- if .Values.redis.existingSecret }}
{{- if .Values.redis.mountAsFile }}
- name: FLAG_SIDECAR_REDIS_URL_FILE
  value: {{ printf "%s/%s" (trimSuffix "/" .Values.redis.mountPath) .Values.redis.secretKey | quote }}
{{- else }}
- name: FLAG_SIDECAR_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret | quote }}
      key: {{ .Values.redis.secretKey | quote }}
{{- end }}
{{- with .Values.redis.fleetSecretKey }}
{{- if $.Values.redis.mountAsFile }}
- name: FLAG_SIDECAR_FLEET_SECRET_FILE
  value: {{ printf "%s/%s" (trimSuffix "/" $.Values.redis.mountPath) . | quote }}
{{- else }}
- name: FLAG_SIDECAR_FLEET_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.redis.existingSecret | quote }}
      key: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- with include "flag-sidecar.projects" . }}
- name: FLAG_SIDECAR_PROJECTS
  value: {{ . | quote }}
{{- end }}
{{- if .Values.bootstrap.existingConfigMap }}
- name: FLAG_SIDECAR_BOOTSTRAP_FILE
  value: {{ printf "%s/%s" (trimSuffix "/" .Values.bootstrap.mountPath) .Values.bootstrap.key | quote }}
{{- end }}
{{- if .Values.keysFile.existingConfigMap }}
- name: FLAG_SIDECAR_KEYS_FILE
  value: {{ printf "%s/%s" (trimSuffix "/" .Values.keysFile.mountPath) .Values.keysFile.key | quote }}
{{- end }}
{{- $names := include "flag-sidecar.configEnvNames" . | fromYaml }}
{{- range $key, $value := .Values.config }}
{{- if not (kindIs "invalid" $value) }}
{{- $text := include "flag-sidecar.envText" $value }}
{{- if ne $text "" }}
- name: {{ required (printf "config.%s is not a flag-sidecar setting" $key) (get $names $key) }}
  value: {{ $text | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $value := .Values.env }}
- name: {{ $name | quote }}
  value: {{ include "flag-sidecar.envText" $value | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The sidecar container, as one item of a container list. Context: {Values, Capabilities?, relay?}.
With nativeSidecar.enabled (and not for the relay) it carries restartPolicy: Always and belongs under
initContainers; flag-sidecar.containers / flag-sidecar.initContainers place it for you.
*/}}
{{- define "flag-sidecar.container" -}}
{{- $relay := get . "relay" }}
{{- $native := and .Values.nativeSidecar.enabled (not $relay) }}
{{- if and $native (get . "Capabilities") }}
{{- if semverCompare "<1.29-0" .Capabilities.KubeVersion.Version }}
{{- fail (printf "nativeSidecar.enabled needs Kubernetes >= 1.29 (init containers with restartPolicy: Always); this cluster is %s. With `helm template`, pass --kube-version." .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- end }}
{{- $_ := include "flag-sidecar.validate" . }}
{{- $resources := .Values.resources }}
{{- if and $relay .Values.relay.resources }}
{{- $resources = .Values.relay.resources }}
{{- end }}
{{- /* An ordinary sidecar gets SIGTERM together with the app: a preStop sleep keeps it serving while the app
drains. The image has no shell, so only the sleep action works, which needs Kubernetes >= 1.30. */}}
{{- $lifecycle := .Values.lifecycle }}
{{- if and (not $lifecycle) (not $native) (not $relay) .Values.preStopSleepSeconds (get . "Capabilities") }}
{{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version }}
{{- $lifecycle = dict "preStop" (dict "sleep" (dict "seconds" (int64 .Values.preStopSleepSeconds))) }}
{{- end }}
{{- end -}}
- name: {{ .Values.containerName | quote }}
  image: {{ include "flag-sidecar.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if $native }}
  restartPolicy: Always
  {{- end }}
  {{- with .Values.args }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: {{ .Values.ports.api.name | quote }}
      containerPort: {{ .Values.ports.api.port }}
      protocol: TCP
    - name: {{ .Values.ports.ops.name | quote }}
      containerPort: {{ .Values.ports.ops.port }}
      protocol: TCP
  env:
    {{- include "flag-sidecar.env" . | nindent 4 }}
  {{- if .Values.probes.startup.enabled }}
  startupProbe:
    httpGet:
      path: /readyz
      port: {{ .Values.ports.ops.name }}
    {{- with omit .Values.probes.startup "enabled" }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  {{- if .Values.probes.liveness.enabled }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: {{ .Values.ports.ops.name }}
    {{- with omit .Values.probes.liveness "enabled" }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  {{- if .Values.probes.readiness.enabled }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: {{ .Values.ports.ops.name }}
    {{- with omit .Values.probes.readiness "enabled" }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  {{- with $resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $lifecycle }}
  lifecycle:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  terminationMessagePolicy: FallbackToLogsOnError
  volumeMounts:
    - name: {{ .Values.containerName }}-snapshots
      mountPath: {{ .Values.snapshot.mountPath | quote }}
    {{- if and .Values.upstream.existingSecret .Values.upstream.mountAsFile }}
    - name: {{ .Values.containerName }}-upstream-key
      mountPath: {{ .Values.upstream.keyMountPath | quote }}
      readOnly: true
    {{- end }}
    {{- if and .Values.redis.existingSecret .Values.redis.mountAsFile }}
    - name: {{ .Values.containerName }}-redis-url
      mountPath: {{ .Values.redis.mountPath | quote }}
      readOnly: true
    {{- end }}
    {{- if .Values.bootstrap.existingConfigMap }}
    - name: {{ .Values.containerName }}-bootstrap
      mountPath: {{ .Values.bootstrap.mountPath | quote }}
      readOnly: true
    {{- end }}
    {{- if .Values.keysFile.existingConfigMap }}
    - name: {{ .Values.containerName }}-keys
      mountPath: {{ .Values.keysFile.mountPath | quote }}
      readOnly: true
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/* The sidecar for a pod's `containers:` list; renders nothing when nativeSidecar.enabled. */}}
{{- define "flag-sidecar.containers" -}}
{{- if not .Values.nativeSidecar.enabled }}
{{- include "flag-sidecar.container" . }}
{{- end }}
{{- end }}

{{/* The sidecar for a pod's `initContainers:` list; renders nothing unless nativeSidecar.enabled. */}}
{{- define "flag-sidecar.initContainers" -}}
{{- if .Values.nativeSidecar.enabled }}
{{- include "flag-sidecar.container" . }}
{{- end }}
{{- end }}

{{/* The sidecar's volumes, as items of a pod's `volumes:` list. Context: {Values}. */}}
{{- define "flag-sidecar.volumes" -}}
{{- $emptyDir := dict }}
{{- with .Values.snapshot.medium }}
{{- $_ := set $emptyDir "medium" . }}
{{- end }}
{{- $sizeLimit := .Values.snapshot.sizeLimit | toString }}
{{- if eq $sizeLimit "auto" }}
{{- $sizeLimit = printf "%dMi" (add (include "flag-sidecar.spoolMaxMiB" . | int64) 64) }}
{{- end }}
{{- with $sizeLimit }}
{{- $_ := set $emptyDir "sizeLimit" . }}
{{- end -}}
- name: {{ .Values.containerName }}-snapshots
  emptyDir:
    {{- toYaml $emptyDir | nindent 4 }}
{{- if and .Values.upstream.existingSecret .Values.upstream.mountAsFile }}
- name: {{ .Values.containerName }}-upstream-key
  secret:
    secretName: {{ .Values.upstream.existingSecret | quote }}
    items:
      - key: {{ .Values.upstream.secretKey | quote }}
        path: {{ .Values.upstream.secretKey | quote }}
{{- end }}
{{- if and .Values.redis.existingSecret .Values.redis.mountAsFile }}
- name: {{ .Values.containerName }}-redis-url
  secret:
    secretName: {{ .Values.redis.existingSecret | quote }}
    items:
      - key: {{ .Values.redis.secretKey | quote }}
        path: {{ .Values.redis.secretKey | quote }}
      {{- with .Values.redis.fleetSecretKey }}
      - key: {{ . | quote }}
        path: {{ . | quote }}
      {{- end }}
{{- end }}
{{- if .Values.bootstrap.existingConfigMap }}
- name: {{ .Values.containerName }}-bootstrap
  configMap:
    name: {{ .Values.bootstrap.existingConfigMap | quote }}
    items:
      - key: {{ .Values.bootstrap.key | quote }}
        path: {{ .Values.bootstrap.key | quote }}
{{- end }}
{{- if .Values.keysFile.existingConfigMap }}
- name: {{ .Values.containerName }}-keys
  configMap:
    name: {{ .Values.keysFile.existingConfigMap | quote }}
    items:
      - key: {{ .Values.keysFile.key | quote }}
        path: {{ .Values.keysFile.key | quote }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Labels for the app's pod template (metadata.labels): sidecarPodLabels, and flag-sidecar/instance: <release name>
when the dict carries .Release. metrics.podMonitor selects this release's pods by both, so several app releases
in one namespace, each with its PodMonitor, never scrape each other's pods. Context: {Values, Release}.
*/}}
{{- define "flag-sidecar.podLabels" -}}
{{- $release := get . "Release" }}
{{- if and (not $release) .Values.metrics.podMonitor.enabled (not .Values.metrics.podMonitor.allReleases) }}
{{- fail "flag-sidecar.podLabels needs the release to render the flag-sidecar/instance label that metrics.podMonitor selects: pass it in the dict, e.g. dict \"Values\" .Values.flagSidecar \"Capabilities\" .Capabilities \"Release\" .Release" }}
{{- end }}
{{- $labels := dict }}
{{- range $key, $value := .Values.sidecarPodLabels }}
{{- $_ := set $labels $key $value }}
{{- end }}
{{- with $release }}
{{- $_ := set $labels "flag-sidecar/instance" .Name }}
{{- end }}
{{- with $labels }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* Value of the flag_sidecar_instance label this release's PodMonitor and ServiceMonitor put on every series
they scrape, and which this release's alerts select: <release namespace>/<release name>. */}}
{{- define "flag-sidecar.instanceId" -}}
{{- printf "%s/%s" .Release.Namespace .Release.Name }}
{{- end }}

{{/* The sidecar's API URL as the app's containers reach it: listen.host, with a wildcard host replaced by the
loopback address. Context: {Values}. */}}
{{- define "flag-sidecar.appUrl" -}}
{{- $host := .Values.listen.host }}
{{- if or (eq $host "0.0.0.0") (eq $host "") }}
{{- $host = "127.0.0.1" }}
{{- else if eq $host "[::]" }}
{{- $host = "[::1]" }}
{{- end }}
{{- printf "http://%s:%v" $host (int64 .Values.ports.api.port) }}
{{- end }}

{{/* Environment for the app's container: where the sidecar's API is (FLAG_SIDECAR_URL, e.g. the PostHog
SDK's `host`). Context: {Values}. */}}
{{- define "flag-sidecar.appEnv" -}}
- name: FLAG_SIDECAR_URL
  value: {{ include "flag-sidecar.appUrl" . | quote }}
{{- end }}
