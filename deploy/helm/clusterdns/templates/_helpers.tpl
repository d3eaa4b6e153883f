{{/*
The chart's named templates. Names: the full name is fullnameOverride, else the release name
(`coredns` for kubeadm's names); cluster-scoped names carry it after "system:".
*/}}

{{- define "clusterdns.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "clusterdns.deploymentName" -}}
{{- default (include "clusterdns.fullname" .) .Values.deployment.name -}}
{{- end -}}

{{- define "clusterdns.serviceName" -}}
{{- default (include "clusterdns.fullname" .) .Values.service.name -}}
{{- end -}}

{{- define "clusterdns.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "clusterdns.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "clusterdns.clusterRoleName" -}}
{{- default (printf "system:%s" (include "clusterdns.fullname" .)) .Values.clusterRole.nameOverride -}}
{{- end -}}

{{- define "clusterdns.autoscalerName" -}}
{{- default (printf "%s-autoscaler" (include "clusterdns.fullname" .)) .Values.autoscaler.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The k8s-app label of the pods and the Service. */}}
{{- define "clusterdns.k8sApp" -}}
{{- default .Chart.Name .Values.k8sAppLabelOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The metadata every object has: name, namespace (unless clusterScoped), then labels (`labels`
and customLabels) and annotations (`annotations` and customAnnotations), each left out when
empty.
*/}}
{{- define "clusterdns.metadata" -}}
metadata:
  name: {{ .name }}
  {{- if not .clusterScoped }}
  namespace: {{ default .root.Release.Namespace .namespace }}
  {{- end }}
  {{- with merge (dict) (default (dict) .labels) .root.Values.customLabels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with merge (dict) (default (dict) .annotations) .root.Values.customAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
The server blocks of `servers`, checked (values.schema.json checks the types), with their
defaults: zones [.], port 53. JSON, for fromJsonArray.
*/}}
{{- define "clusterdns.servers" -}}
{{- $servers := list -}}
{{- range $index, $server := .Values.servers -}}
{{- $port := int (default 53 $server.port) -}}
{{- $zones := list -}}
{{- range $z, $zone := (default (list (dict "zone" ".")) $server.zones) -}}
{{- $scheme := default "" $zone.scheme -}}
{{- if not (has $scheme (list "" "dns://")) -}}
{{- fail (printf "servers[%d].zones[%d].scheme: %q is not served by clusterdns (dns:// or nothing)" $index $z $scheme) -}}
{{- end -}}
{{- $zones = append $zones (dict "key" (printf "%s%s:%d" $scheme (default "." $zone.zone) $port) "tcp" (default false $zone.use_tcp)) -}}
{{- end -}}
{{- if not $server.plugins -}}
{{- fail (printf "servers[%d].plugins: a server block without plugins answers nothing" $index) -}}
{{- end -}}
{{- $keys := list -}}
{{- range $zones }}{{ $keys = append $keys .key }}{{ end -}}
{{- $servers = append $servers (dict "key" (join " " $keys) "port" $port "zones" $zones "plugins" $server.plugins "servicePort" (default $port $server.servicePort | int) "nodePort" (default 0 $server.nodePort | int) "hostPort" (default 0 $server.hostPort | int)) -}}
{{- end -}}
{{- if not $servers -}}
{{- fail "servers: at least one server block" -}}
{{- end -}}
{{- toJson $servers -}}
{{- end -}}

{{/* The port of a listening plugin's address parameter (`:9153`, `0.0.0.0:9153`), else `default`. */}}
{{- define "clusterdns.pluginPort" -}}
{{- $address := toString (default "" .plugin.parameters) | trim -}}
{{- if $address -}}
{{- $port := last (splitList ":" (first (splitList " " $address))) -}}
{{- if not (regexMatch "^[0-9]+$" $port) -}}
{{- fail (printf "servers[].plugins[%s].parameters: %q has no port (expected [ADDRESS]:PORT)" .plugin.name $address) -}}
{{- end -}}
{{- $port -}}
{{- else -}}
{{- .default -}}
{{- end -}}
{{- end -}}

{{/*
The ports the servers listen on, in order: each server port over UDP (named dns, or dns-PORT)
and over TCP where a zone has use_tcp (dns-tcp, dns-tcp-PORT); each prometheus address
(metrics, metrics-PORT); health's (liveness-probe) and ready's (readiness-probe). JSON: name,
containerPort, protocol, and for the Service (`service`): port, nodePort. hostPort too.
*/}}
{{- define "clusterdns.ports" -}}
{{- $ports := list -}}
{{- $seen := dict -}}
{{- $servers := include "clusterdns.servers" . | fromJsonArray -}}
{{- range $servers -}}
{{- $port := int .port -}}
{{- $tcp := false -}}
{{- range .zones }}{{ if .tcp }}{{ $tcp = true }}{{ end }}{{ end -}}
{{- $suffix := ternary "" (printf "-%d" $port) (eq $port 53) -}}
{{- if not (hasKey $seen (printf "UDP/%d" $port)) -}}
{{- $_ := set $seen (printf "UDP/%d" $port) true -}}
{{- $ports = append $ports (dict "name" (printf "dns%s" $suffix) "containerPort" $port "protocol" "UDP" "service" true "port" (int .servicePort) "nodePort" (int .nodePort) "hostPort" (int .hostPort)) -}}
{{- end -}}
{{- if and $tcp (not (hasKey $seen (printf "TCP/%d" $port))) -}}
{{- $_ := set $seen (printf "TCP/%d" $port) true -}}
{{- $ports = append $ports (dict "name" (printf "dns-tcp%s" $suffix) "containerPort" $port "protocol" "TCP" "service" true "port" (int .servicePort) "nodePort" (int .nodePort) "hostPort" (int .hostPort)) -}}
{{- end -}}
{{- end -}}
{{- $metrics := list -}}
{{- $health := "" -}}
{{- $ready := "" -}}
{{- range $servers -}}
{{- range .plugins -}}
{{- if eq .name "prometheus" -}}
{{- $port := include "clusterdns.pluginPort" (dict "plugin" . "default" "9153") -}}
{{- if not (has $port $metrics) }}{{ $metrics = append $metrics $port }}{{ end -}}
{{- else if and (eq .name "health") (not $health) -}}
{{- $health = include "clusterdns.pluginPort" (dict "plugin" . "default" "8080") -}}
{{- else if and (eq .name "ready") (not $ready) -}}
{{- $ready = include "clusterdns.pluginPort" (dict "plugin" . "default" "8181") -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $index, $port := $metrics -}}
{{- $ports = append $ports (dict "name" (ternary "metrics" (printf "metrics-%s" $port) (eq $index 0)) "containerPort" (int $port) "protocol" "TCP" "service" true "port" (int $port) "nodePort" 0 "hostPort" 0) -}}
{{- end -}}
{{- with $health -}}
{{- $ports = append $ports (dict "name" "liveness-probe" "containerPort" (int .) "protocol" "TCP" "service" false "nodePort" 0 "hostPort" 0) -}}
{{- end -}}
{{- with $ready -}}
{{- $ports = append $ports (dict "name" "readiness-probe" "containerPort" (int .) "protocol" "TCP" "service" false "nodePort" 0 "hostPort" 0) -}}
{{- end -}}
{{- toJson $ports -}}
{{- end -}}
