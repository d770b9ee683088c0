{{/*
Name of a component's resources: <release>-<component>, the release cut to 40 characters. A StatefulSet's
name must leave room in 63 for its pods' controller-revision-hash label (52 at most), and cutting the whole
name instead made <release>-<component> and <release>-<component>-pods the same for long release names.
*/}}
{{- define "butterfly.release" -}}
{{- .root.Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "butterfly.name" -}}
{{- printf "%s-%s" (include "butterfly.release" .) .component -}}
{{- end -}}

{{/* The headless Service that gives each pod of a component a stable DNS name. */}}
{{- define "butterfly.headless" -}}
{{- printf "%s-%s-pods" (include "butterfly.release" .) .component -}}
{{- end -}}

{{/* Stable DNS name of pod <i> of a component: <release>-<component>-<i>.<headless>.<ns>.svc.<domain>. */}}
{{- define "butterfly.podHost" -}}
{{- printf "%s-%d.%s.%s.svc.%s" (include "butterfly.name" .) (int .index) (include "butterfly.headless" .) .root.Release.Namespace .root.Values.clusterDomain -}}
{{- end -}}

{{- define "butterfly.labels" -}}
app.kubernetes.io/name: butterfly
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "butterfly.selector" -}}
app.kubernetes.io/name: butterfly
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Image of a service module, e.g. butterfly/butterfly-worker-service:0.1.0, or of the tools (module "cli":
butterfly/butterfly-cli, built from butterfly-cli). */}}
{{- define "butterfly.image" -}}
{{- $img := .root.Values.image -}}
{{- $repo := printf "%s-%s" $img.prefix .module -}}
{{- if $img.registry }}{{ $repo = printf "%s/%s" $img.registry $repo }}{{ end -}}
{{- printf "%s:%s" $repo (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* Environment every service container gets: its pod's name and IP, its JVM options, bind on all interfaces. */}}
{{- define "butterfly.env" -}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: POD_IP
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
- name: BUTTERFLY_BIND_ADDRESS
  value: 0.0.0.0
- name: JAVA_TOOL_OPTIONS
  value: {{ printf "%s -Xmx%s %s" .root.Values.jvmOptions .heap (default "" .jvm) | trim | quote }}
{{- with .root.Values.logging.format }}
- name: LOGGING_STRUCTURED_FORMAT_CONSOLE
  value: {{ . | quote }}
{{- end }}
- name: MANAGEMENT_TRACING_SAMPLING_PROBABILITY
  value: {{ .root.Values.tracing.samplingProbability | quote }}
{{- with .root.Values.tracing.otlpEndpoint }}
- name: MANAGEMENT_OPENTELEMETRY_TRACING_EXPORT_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- if .root.Values.consul.enabled }}
- name: SPRING_PROFILES_ACTIVE
  value: consul
- name: CONSUL_HOST
  value: {{ .root.Values.consul.host | quote }}
- name: CONSUL_PORT
  value: {{ .root.Values.consul.port | quote }}
- name: SPRING_CLOUD_CONSUL_DISCOVERY_IPADDRESS
  value: $(POD_IP)
{{- end }}
{{- end -}}

{{/* The Actuator probes on the container's http port. */}}
{{- define "butterfly.probes" -}}
{{- $p := .root.Values.probes -}}
startupProbe:
  httpGet: {path: /actuator/health/liveness, port: http}
  periodSeconds: {{ $p.startup.periodSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
livenessProbe:
  httpGet: {path: /actuator/health/liveness, port: http}
  periodSeconds: {{ $p.liveness.periodSeconds }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
readinessProbe:
  httpGet: {path: /actuator/health/readiness, port: http}
  periodSeconds: {{ $p.readiness.periodSeconds }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
{{- end -}}

{{/* The publisher's public key only, as a Spring config tree: the file name is the property it sets. */}}
{{- define "butterfly.trustVolume" -}}
- name: trusted-publisher
  secret:
    secretName: {{ .root.Values.publisher.secretName }}
    items:
      - key: identity.pub
        path: {{ .property }}
{{- end -}}

{{/* A data volume claim of a StatefulSet. */}}
{{- define "butterfly.dataClaim" -}}
volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      {{- with .root.Values.storageClassName }}
      storageClassName: {{ . }}
      {{- end }}
      resources:
        requests:
          storage: {{ .storage }}
{{- end -}}

{{/* "id=host:port,..." of every pod of a component (Raft peers, replica endpoints, Hazelcast members). */}}
{{- define "butterfly.podList" -}}
{{- $out := list -}}
{{- range $i := until (int .replicas) -}}
{{- $ctx := dict "root" $.root "component" $.component "index" $i -}}
{{- $host := include "butterfly.podHost" $ctx -}}
{{- if $.withId -}}
{{- $out = append $out (printf "%s-%d=%s:%d" (include "butterfly.name" $ctx) $i $host (int $.port)) -}}
{{- else -}}
{{- $out = append $out (printf "%s:%d" $host (int $.port)) -}}
{{- end -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* Pod security (the Pod Security Standards' restricted profile): the images' non-root user, the runtime's
default seccomp profile; volumes (data claims, Secrets) readable by its group. */}}
{{- define "butterfly.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  fsGroup: 10001
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{/* Every container: no privilege escalation, no capabilities, a read-only root file system (what a service
writes goes to its data volume or /tmp). */}}
{{- define "butterfly.containerSecurity" -}}
securityContext:
  runAsNonRoot: true
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{/* /tmp, the one writable place besides the data volume: the JVM's, Tomcat's and Netty's temporary files. */}}
{{- define "butterfly.tmpVolume" -}}
- name: tmp
  emptyDir: {sizeLimit: 512Mi}
{{- end -}}

{{/* Mutual TLS: this pod's certificate and key, and the cluster CA, from its component's Secret (tls.yaml). */}}
{{- define "butterfly.tlsArgs" -}}
{{- if .Values.tls.enabled -}}
- --butterfly.tls.certificate=/etc/butterfly/tls/$(POD_NAME).crt
- --butterfly.tls.private-key=/etc/butterfly/tls/$(POD_NAME).key
- --butterfly.tls.ca=/etc/butterfly/tls/ca.crt
{{- else -}}
- --butterfly.tls.enabled=false
{{- end -}}
{{- end -}}

{{- define "butterfly.tlsMount" -}}
{{- if .root.Values.tls.enabled -}}
- {name: tls, mountPath: /etc/butterfly/tls, readOnly: true}
{{- end -}}
{{- end -}}

{{- define "butterfly.tlsVolume" -}}
{{- if .root.Values.tls.enabled -}}
- name: tls
  secret:
    secretName: {{ include "butterfly.name" . }}-tls
    defaultMode: 0440
{{- end -}}
{{- end -}}

{{/* Where Prometheus scrapes a pod: Actuator's Prometheus endpoint on the http port. */}}
{{- define "butterfly.metricsAnnotations" -}}
prometheus.io/scrape: {{ .root.Values.metrics.scrape | quote }}
prometheus.io/path: /actuator/prometheus
prometheus.io/port: {{ .port | quote }}
{{- end -}}

{{/* Where the registry's store is mounted when it is shared with the workers (registry.sharedStoreClaim). */}}
{{- define "butterfly.sharedStorePath" -}}/srv/butterfly/store{{- end -}}

{{/* Every pod of this release. */}}
{{- define "butterfly.releaseSelector" -}}
app.kubernetes.io/name: butterfly
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/* One flow the NetworkPolicies allow, at its destination: pods of component .to (all of the release's when
empty) take connections on port .port from pods of the components .from, or from the NetworkPolicy peers .peers
(anyone when both are empty). */}}
{{- define "butterfly.ingressFlow" -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "butterfly.release" . }}-{{ .name }}
  labels: {{- include "butterfly.labels" (dict "root" .root "component" "network") | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- if .to }}
      {{- include "butterfly.selector" (dict "root" .root "component" .to) | nindent 6 }}
      {{- else }}
      {{- include "butterfly.releaseSelector" . | nindent 6 }}
      {{- end }}
  policyTypes: [Ingress]
  ingress:
    - ports: [{protocol: TCP, port: {{ .port }}}]
      {{- if .from }}
      from:
        {{- range .from }}
        - podSelector:
            matchLabels: {{- include "butterfly.selector" (dict "root" $.root "component" .) | nindent 14 }}
        {{- end }}
      {{- else if .peers }}
      from: {{- toYaml .peers | nindent 8 }}
      {{- end }}
{{- end -}}

{{/*
The Secret API keys are read from, or nothing with auth.enabled=false; keys are required otherwise, so a rendering
with auth on and no Secret named fails rather than leaving every endpoint open.
*/}}
{{- define "butterfly.apiKeysSecret" -}}
{{- if .Values.auth.enabled -}}
{{- required "auth.enabled (the default) needs apiKeys.secretName: a Secret with the entries api-keys and admin-api-keys (docs/security.md); auth.enabled=false leaves every endpoint open" .Values.apiKeys.secretName -}}
{{- end -}}
{{- end -}}

{{/* The API keys Secret's entries a container reads (names listed in "items"), mounted at /etc/butterfly/api-keys. */}}
{{- define "butterfly.apiKeysVolume" -}}
- name: api-keys
  secret:
    secretName: {{ .root.Values.apiKeys.secretName }}
    items:
      {{- range .items }}
      - {key: {{ . }}, path: {{ . }}}
      {{- end }}
{{- end -}}
