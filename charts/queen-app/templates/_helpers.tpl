{{/* Names and labels. */}}
{{- define "queen-app.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "queen-app.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "queen-app.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "queen-app.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: queen-app
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
An object's annotations: commonAnnotations and its own, (list $ $own); nothing when both are
empty. Under metadata: with include ... nindent 2, so that nothing leaves no blank line.
*/}}
{{- define "queen-app.annotations" -}}
{{- $all := merge (dict) (index . 1 | default dict) ((index . 0).Values.commonAnnotations | default dict) -}}
{{- with $all -}}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
What every pod shares beyond the containers: priorityClassName, and the CA bundle and
extraVolumes. caBundle mounts one file at caBundleFile and SSL_CERT_FILE points Go's TLS there
(GitHub Enterprise behind an internal CA, rediss:// with a private CA).
*/}}
{{- define "queen-app.caBundleDir" -}}/etc/queen-app/ca{{- end -}}
{{- define "queen-app.caBundle" -}}
{{- $c := .Values.caBundle -}}
{{- if and $c.configMap.name $c.secret.name -}}
{{- include "queen-app.fail" "caBundle: set caBundle.configMap.name or caBundle.secret.name, not both" -}}
{{- end -}}
{{- if or $c.configMap.name $c.secret.name }}true{{ end -}}
{{- end -}}
{{- define "queen-app.podExtras" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- end -}}
{{- define "queen-app.extraEnv" -}}
{{- if include "queen-app.caBundle" . }}
- name: SSL_CERT_FILE
  value: {{ include "queen-app.caBundleDir" . }}/ca.crt
{{- end }}
{{- end -}}
{{- define "queen-app.extraMounts" -}}
{{- if include "queen-app.caBundle" . }}
- name: ca-bundle
  mountPath: {{ include "queen-app.caBundleDir" . }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- define "queen-app.extraVolumes" -}}
{{- $c := .Values.caBundle -}}
{{- if $c.configMap.name }}
- name: ca-bundle
  configMap:
    name: {{ $c.configMap.name }}
    items:
      - key: {{ $c.configMap.key }}
        path: ca.crt
{{- else if $c.secret.name }}
- name: ca-bundle
  secret:
    secretName: {{ $c.secret.name }}
    items:
      - key: {{ $c.secret.key }}
        path: ca.crt
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
HTTPS on the claims API's port from api.tls.secretName: the pair mounted read-only at apiTLSDir
(a directory, never subPath, so the kubelet's renewal reaches the files the webhook re-reads).
apiTLS is "true" when on, after refusing a half-set pair in the binary's words.
*/}}
{{- define "queen-app.apiTLSDir" -}}/etc/queen-app/api-tls{{- end -}}
{{- define "queen-app.apiTLS" -}}
{{- $t := .Values.api.tls | default dict -}}
{{- if $t.secretName -}}
{{- if not $t.certKey -}}
{{- include "queen-app.fail" "api.tls.certKey (QUEEN_API_TLS_CERT_FILE): is required with QUEEN_API_TLS_KEY_FILE" -}}
{{- end -}}
{{- if not $t.keyKey -}}
{{- include "queen-app.fail" "api.tls.keyKey (QUEEN_API_TLS_KEY_FILE): is required with QUEEN_API_TLS_CERT_FILE" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}
{{- define "queen-app.apiScheme" -}}{{ ternary "https" "http" (eq (include "queen-app.apiTLS" .) "true") }}{{- end -}}
{{/* The claims API's in-cluster URL: what the Queen in the cluster and helm test's doctor call. */}}
{{- define "queen-app.apiURL" -}}
{{- printf "%s://%s-api.%s.svc:%d" (include "queen-app.apiScheme" .) (include "queen-app.fullname" .) .Release.Namespace (int .Values.service.api.port) -}}
{{- end -}}

{{/* Selector labels of one component: (list $ "webhook"). */}}
{{- define "queen-app.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "queen-app.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "queen-app.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "queen-app.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "queen-app.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "queen-app.onOff" -}}
{{- if . }}on{{ else }}off{{ end -}}
{{- end -}}

{{/*
Secrets. Each credential lives in a Secret the user names (existingSecret.name) or, for trying the
chart out, in one the chart renders from inline values with the same keys. These helpers give the
Secret's name and each key, so both cases share one path.
*/}}
{{- define "queen-app.github.secret" -}}
{{- .Values.github.existingSecret.name | default (printf "%s-github" (include "queen-app.fullname" .)) -}}
{{- end -}}
{{- define "queen-app.github.appIdKey" -}}{{ .Values.github.existingSecret.appIdKey | default "app-id" }}{{- end -}}
{{- define "queen-app.github.privateKeyKey" -}}{{ .Values.github.existingSecret.privateKeyKey | default "private-key.pem" }}{{- end -}}
{{- define "queen-app.github.webhookSecretKey" -}}{{ .Values.github.existingSecret.webhookSecretKey | default "webhook-secret" }}{{- end -}}
{{- define "queen-app.github.webhookSecretPreviousKey" -}}{{ .Values.github.existingSecret.webhookSecretPreviousKey | default "webhook-secret-previous" }}{{- end -}}

{{- define "queen-app.api.secret" -}}
{{- .Values.api.existingSecret.name | default (printf "%s-api" (include "queen-app.fullname" .)) -}}
{{- end -}}
{{- define "queen-app.api.tokenKey" -}}{{ .Values.api.existingSecret.tokenKey | default "token" }}{{- end -}}

{{- define "queen-app.export.secret" -}}
{{- .Values.export.existingSecret.name | default (printf "%s-export" (include "queen-app.fullname" .)) -}}
{{- end -}}
{{- define "queen-app.export.tokenKey" -}}{{ .Values.export.existingSecret.tokenKey | default "token" }}{{- end -}}

{{- define "queen-app.redis.secret" -}}
{{- .Values.redis.existingSecret.name | default (printf "%s-redis" (include "queen-app.fullname" .)) -}}
{{- end -}}
{{- define "queen-app.redis.passwordKey" -}}{{ .Values.redis.existingSecret.passwordKey | default "password" }}{{- end -}}
{{- define "queen-app.redis.hasPassword" -}}
{{- if or .Values.redis.existingSecret.name .Values.redis.password }}true{{ end -}}
{{- end -}}

{{- define "queen-app.sentinel.secret" -}}
{{- .Values.redis.sentinel.existingSecret.name | default (printf "%s-redis-sentinel" (include "queen-app.fullname" .)) -}}
{{- end -}}
{{- define "queen-app.sentinel.passwordKey" -}}{{ .Values.redis.sentinel.existingSecret.passwordKey | default "password" }}{{- end -}}
{{- define "queen-app.sentinel.hasPassword" -}}
{{- if or .Values.redis.sentinel.existingSecret.name .Values.redis.sentinel.password }}true{{ end -}}
{{- end -}}

{{/*
QUEEN_REDIS_URL from the redis values, never with a password in it (the passwords go in
through QUEEN_REDIS_PASSWORD and QUEEN_REDIS_SENTINEL_PASSWORD from Secrets).
*/}}
{{- define "queen-app.redisURL" -}}
{{- $r := .Values.redis -}}
{{- $forms := 0 -}}
{{- range (list $r.url $r.host $r.sentinel.addresses $r.cluster.addresses) -}}
{{- if . }}{{ $forms = add1 $forms }}{{ end -}}
{{- end -}}
{{- if gt $forms 1 -}}
{{- include "queen-app.fail" "redis: set only one of redis.url, redis.host, redis.sentinel.addresses and redis.cluster.addresses" -}}
{{- end -}}
{{- $user := "" -}}
{{- if $r.username }}{{ $user = printf "%s@" $r.username }}{{ end -}}
{{- if $r.url -}}
{{- if regexMatch "^[a-z+]+://[^/@]*:[^/@]*@" $r.url -}}
{{- include "queen-app.fail" "redis.url must not contain a password: put it in the Secret named by redis.existingSecret.name" -}}
{{- end -}}
{{- $r.url -}}
{{- else if $r.host -}}
{{- printf "%s://%s%s:%d/%d" (ternary "rediss" "redis" $r.tls) $user $r.host (int $r.port) (int $r.db) -}}
{{- else if $r.sentinel.addresses -}}
{{- $s := $r.sentinel -}}
{{- include "queen-app.required" (list "redis.sentinel.masterName is required with redis.sentinel.addresses" $s.masterName) -}}
{{- $master := $s.masterName -}}
{{- printf "%s://%s%s/%s/%d" (ternary "rediss+sentinel" "redis+sentinel" $s.tls) $user (join "," $s.addresses) $master (int $s.db) -}}
{{- else if $r.cluster.addresses -}}
{{- printf "%s://%s%s" (ternary "rediss+cluster" "redis+cluster" $r.cluster.tls) $user (join "," $r.cluster.addresses) -}}
{{- else -}}
{{- include "queen-app.required" (list "redis.url (or redis.host, redis.sentinel.addresses or redis.cluster.addresses) is required: an external Redis with maxmemory-policy noeviction" "") -}}
{{- end -}}
{{- end -}}

{{/* Where the App's private key is mounted in both containers. */}}
{{- define "queen-app.keyDir" -}}/etc/queen-app/github{{- end -}}
{{- define "queen-app.keyFile" -}}{{ include "queen-app.keyDir" . }}/private-key.pem{{- end -}}

{{/*
Checks that need more than the schema: a credential from an existing Secret or inline (never
both, never neither), and lengths the binaries enforce at start.
*/}}
{{- define "queen-app.validate" -}}
{{- include "queen-app.validateAsTheBinaries" . -}}
{{- $g := .Values.github -}}
{{- if $g.existingSecret.name -}}
{{- if or $g.appId $g.privateKey $g.webhookSecret $g.webhookSecretPrevious -}}
{{- include "queen-app.fail" "github: set github.existingSecret.name or the inline github.appId, github.privateKey and github.webhookSecret, not both" -}}
{{- end -}}
{{- else -}}
{{- $_ := include "queen-app.required" (list "github.existingSecret.name is required (or, only to try the chart out, the inline github.appId, github.privateKey and github.webhookSecret)" (toString $g.privateKey)) -}}
{{- $_ := include "queen-app.required" (list "github.appId is required with the inline github.privateKey (or use github.existingSecret.name)" (toString $g.appId)) -}}
{{- $_ := include "queen-app.required" (list "github.webhookSecret is required with the inline github.privateKey (or use github.existingSecret.name)" $g.webhookSecret) -}}
{{- if lt (len $g.webhookSecret) 16 -}}
{{- include "queen-app.fail" "github.webhookSecret must be at least 16 characters" -}}
{{- end -}}
{{- end -}}
{{- if .Values.api.existingSecret.name -}}
{{- if .Values.api.token -}}
{{- include "queen-app.fail" "api: set api.existingSecret.name or the inline api.token, not both" -}}
{{- end -}}
{{- else -}}
{{- $_ := include "queen-app.required" (list "api.existingSecret.name is required (or, only to try the chart out, the inline api.token)" .Values.api.token) -}}
{{- if lt (len .Values.api.token) 16 -}}
{{- include "queen-app.fail" "api.token must be at least 16 characters" -}}
{{- end -}}
{{- if not (regexMatch "^[!-~]+$" .Values.api.token) -}}
{{- include "queen-app.fail" "api.token (QUEEN_API_TOKEN): must be one line of visible ASCII characters (no spaces): it is sent in an HTTP header" -}}
{{- end -}}
{{- end -}}
{{- $e := .Values.export -}}
{{- if $e.url -}}
{{- $_ := include "queen-app.required" (list "export.repo (owner/name) is required with export.url" $e.repo) -}}
{{- if $e.existingSecret.name -}}
{{- if $e.token -}}
{{- include "queen-app.fail" "export: set export.existingSecret.name or the inline export.token, not both" -}}
{{- end -}}
{{- else -}}
{{- $_ := include "queen-app.required" (list "export.existingSecret.name is required with export.url (or, only to try the chart out, the inline export.token)" $e.token) -}}
{{- if lt (len $e.token) 16 -}}
{{- include "queen-app.fail" "export.token must be at least 16 characters" -}}
{{- end -}}
{{- if not (regexMatch "^[!-~]+$" $e.token) -}}
{{- include "queen-app.fail" "export.token (QUEEN_EXPORT_TOKEN): must be one line of visible ASCII characters (no spaces): it is sent in an HTTP header" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with .Values.redis.password -}}
{{- if lt (len .) 16 -}}
{{- include "queen-app.fail" "redis.password must be at least 16 characters" -}}
{{- end -}}
{{- end -}}
{{- with .Values.redis.sentinel.password -}}
{{- if lt (len .) 16 -}}
{{- include "queen-app.fail" "redis.sentinel.password must be at least 16 characters" -}}
{{- end -}}
{{- end -}}
{{- with $g.webhookSecretPrevious -}}
{{- if lt (len .) 16 -}}
{{- include "queen-app.fail" "github.webhookSecretPrevious must be at least 16 characters" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.redis.existingSecret.name .Values.redis.password -}}
{{- include "queen-app.fail" "redis: set redis.existingSecret.name or the inline redis.password, not both" -}}
{{- end -}}
{{- if and .Values.redis.sentinel.existingSecret.name .Values.redis.sentinel.password -}}
{{- include "queen-app.fail" "redis.sentinel: set redis.sentinel.existingSecret.name or the inline redis.sentinel.password, not both" -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) -}}
{{- include "queen-app.fail" "ingress.host is required with ingress.enabled: the public host of https://HOST/webhook" -}}
{{- end -}}
{{- if and .Values.apiIngress.enabled (not .Values.apiIngress.host) -}}
{{- include "queen-app.fail" "apiIngress.host is required with apiIngress.enabled: the host the Queen calls, QUEEN_API_URL=https://HOST" -}}
{{- end -}}
{{- $_ := include "queen-app.apiTLS" . -}}
{{- end -}}

{{/* The env both binaries read: the App id from its Secret, the key's path. */}}
{{- define "queen-app.commonSecretEnv" -}}
- name: GITHUB_APP_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "queen-app.github.secret" . }}
      key: {{ include "queen-app.github.appIdKey" . }}
- name: GITHUB_APP_PRIVATE_KEY_FILE
  value: {{ include "queen-app.keyFile" . }}
{{- end -}}

{{/*
Every other credential is a file too, never an environment value (which `kubectl describe`,
/proc/PID/environ and crash dumps show): one read-only projected volume per pod at secretsDir,
holding the files its binary reads through the *_FILE variables. secretFiles lists them for a
component, (list $ "webhook"), as JSON: the Secret, its key, the file and the variable.
*/}}
{{- define "queen-app.secretsDir" -}}/etc/queen-app/secrets{{- end -}}

{{- define "queen-app.secretFiles" -}}
{{- $ := index . 0 -}}
{{- $c := index . 1 -}}
{{- $out := list -}}
{{- if eq $c "webhook" -}}
{{- $gh := include "queen-app.github.secret" $ -}}
{{- $out = append $out (dict "secret" $gh "key" (include "queen-app.github.webhookSecretKey" $) "file" "webhook-secret" "var" "GITHUB_WEBHOOK_SECRET_FILE") -}}
{{- /* Present only while rotating: an absent file is no previous secret. */ -}}
{{- $out = append $out (dict "secret" $gh "key" (include "queen-app.github.webhookSecretPreviousKey" $) "file" "webhook-secret-previous" "var" "GITHUB_WEBHOOK_SECRET_PREVIOUS_FILE" "optional" true) -}}
{{- end -}}
{{- /* The helm test Pod (queenctl doctor) asks the claims API and the export as they do. */ -}}
{{- if has $c (list "webhook" "doctor") -}}
{{- $out = append $out (dict "secret" (include "queen-app.api.secret" $) "key" (include "queen-app.api.tokenKey" $) "file" "api-token" "var" "QUEEN_API_TOKEN_FILE") -}}
{{- end -}}
{{- if and (has $c (list "worker" "doctor")) $.Values.export.url -}}
{{- $out = append $out (dict "secret" (include "queen-app.export.secret" $) "key" (include "queen-app.export.tokenKey" $) "file" "export-token" "var" "QUEEN_EXPORT_TOKEN_FILE") -}}
{{- end -}}
{{- if include "queen-app.redis.hasPassword" $ -}}
{{- $out = append $out (dict "secret" (include "queen-app.redis.secret" $) "key" (include "queen-app.redis.passwordKey" $) "file" "redis-password" "var" "QUEEN_REDIS_PASSWORD_FILE") -}}
{{- end -}}
{{- if and $.Values.redis.sentinel.addresses (include "queen-app.sentinel.hasPassword" $) -}}
{{- $out = append $out (dict "secret" (include "queen-app.sentinel.secret" $) "key" (include "queen-app.sentinel.passwordKey" $) "file" "sentinel-password" "var" "QUEEN_REDIS_SENTINEL_PASSWORD_FILE") -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The *_FILE variables of a component's secret files: (list $ "webhook"). */}}
{{- define "queen-app.secretFileEnv" -}}
{{- $dir := include "queen-app.secretsDir" (index . 0) -}}
{{- range include "queen-app.secretFiles" . | fromJsonArray }}
- name: {{ .var }}
  value: {{ printf "%s/%s" $dir .file }}
{{- end }}
{{- end -}}

{{/* The mount of a component's secret files, when it has any: (list $ "webhook"). */}}
{{- define "queen-app.secretsMount" -}}
{{- if include "queen-app.secretFiles" . | fromJsonArray }}
- name: secrets
  mountPath: {{ include "queen-app.secretsDir" (index . 0) }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* Their volume: each file one item of its Secret, readable by the pod's group only. */}}
{{- define "queen-app.secretsVolume" -}}
{{- with include "queen-app.secretFiles" . | fromJsonArray }}
- name: secrets
  projected:
    defaultMode: 0440
    sources:
      {{- range . }}
      - secret:
          name: {{ .secret }}
          {{- if .optional }}
          optional: true
          {{- end }}
          items:
            - key: {{ .key }}
              path: {{ .file }}
      {{- end }}
{{- end }}
{{- end -}}

{{/* The private key as a read-only file: a volume of the one key only. */}}
{{- define "queen-app.keyVolume" -}}
- name: github-app-key
  secret:
    secretName: {{ include "queen-app.github.secret" . }}
    defaultMode: 0440
    items:
      - key: {{ include "queen-app.github.privateKeyKey" . }}
        path: {{ base (include "queen-app.keyFile" .) }}
{{- end -}}

{{/* Rolls the pods when the settings or an inline Secret change. */}}
{{- define "queen-app.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
checksum/secrets: {{ include (print .Template.BasePath "/secrets.yaml") . | sha256sum }}
{{- end -}}

{{/*
What the binaries refuse at start, refused at render in the binaries' words (internal/config),
each naming the value and the variable it becomes: a release that renders starts.
*/}}
{{- define "queen-app.validateAsTheBinaries" -}}
{{- $urls := list
  (list "github.apiURL" "GITHUB_API_URL" .Values.github.apiURL)
  (list "github.graphqlURL" "GITHUB_GRAPHQL_URL" .Values.github.graphqlURL)
  (list "github.gitURL" "GITHUB_GIT_URL" .Values.github.gitURL)
  (list "export.url" "QUEEN_EXPORT_URL" .Values.export.url) -}}
{{- range $urls -}}
{{- $value := index . 0 -}}{{- $var := index . 1 -}}{{- $u := index . 2 | default "" -}}
{{- if $u -}}
{{- $p := urlParse $u -}}
{{- /* The schema has held them to http(s) without user@. */ -}}
{{- $host := $p.hostname -}}
{{- $loopback := or (eq (lower $host) "localhost") (regexMatch "^127\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $host) (eq $host "::1") -}}
{{- if and (eq $p.scheme "http") (not $.Values.flags.allowInsecureURLs) (not $loopback) -}}
{{- include "queen-app.fail" (printf "%s (%s): must be https:// unless on loopback (or set QUEEN_ALLOW_INSECURE_URLS=on), here flags.allowInsecureURLs: true" $value $var) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $b := toString .Values.settings.baseBranch -}}
{{- $badBranch := or (has $b (list "" "@" "HEAD")) (hasPrefix "-" $b) (hasSuffix "." $b) (contains ".." $b) (contains "@{" $b) (regexMatch "[\\x00-\\x20\\x7f~^:?*\\[\\\\]" $b) -}}
{{- range splitList "/" $b -}}
{{- if or (eq . "") (hasPrefix "." .) (hasSuffix ".lock" .) }}{{ $badBranch = true }}{{ end -}}
{{- end -}}
{{- if $badBranch -}}
{{- include "queen-app.fail" "settings.baseBranch (QUEEN_BASE_BRANCH): is not a valid git branch name" -}}
{{- end -}}
{{- $r := .Values.redis -}}
{{- $urlUser := and $r.url (regexMatch "^[a-z+]+://[^/@:]+@" $r.url) -}}
{{- if and (or $r.username $urlUser) (not (include "queen-app.redis.hasPassword" .)) -}}
{{- include "queen-app.fail" "redis.username (QUEEN_REDIS_URL): names a user without a password: use user:password@ or QUEEN_REDIS_PASSWORD (redis.existingSecret.name)" -}}
{{- end -}}
{{- with .Values.github.privateKey -}}
{{- if contains "PUBLIC KEY-----" . -}}
{{- include "queen-app.fail" "github.privateKey (GITHUB_APP_PRIVATE_KEY_FILE): is a public key; GitHub's App private key is the .pem file the App's settings download (Generate a private key)" -}}
{{- end -}}
{{- if not (regexMatch "-----BEGIN (RSA )?PRIVATE KEY-----[A-Za-z0-9+/=\\s]+-----END (RSA )?PRIVATE KEY-----" .) -}}
{{- include "queen-app.fail" "github.privateKey (GITHUB_APP_PRIVATE_KEY_FILE): is not a PEM-encoded RSA private key" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
queen-app.fail refuses the values with its message, and so does helm lint: lint's own fail and
required only log at INFO and go on (Helm's LintMode), which let a chart without its required
values pass lint --strict. Past fail only lint runs on, and including a template named by the
message is an error carrying it.
*/}}
{{- define "queen-app.fail" -}}
{{- fail . -}}
{{- include . nil -}}
{{- end -}}

{{/* queen-app.required (list MESSAGE VALUE) is required, refusing in helm lint too (queen-app.fail). */}}
{{- define "queen-app.required" -}}
{{- $v := index . 1 -}}
{{- if or (kindIs "invalid" $v) (and (kindIs "string" $v) (eq $v "")) -}}
{{- include "queen-app.fail" (index . 0) -}}
{{- end -}}
{{- end -}}
