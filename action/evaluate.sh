#!/usr/bin/env bash
# The action's evaluation: the traces scored into the stored runs, tagged with the branch on a
# push (branch:NAME) or with the pull request (pr:NUMBER). A usage or set-up error (exit 2) stops
# here; a run below --fail-under (1) or failing a gate (3) goes on to the comparison and the
# comment, and the last step exits with its status.
set -uo pipefail
: "${AG_TRACES:?}" "${AG_DB:?}" "${AG_SUITE:?}" "${AG_FORMAT:?}" "${GITHUB_OUTPUT:?}"

mkdir -p "$(dirname "$AG_DB")"
if [ -n "${AG_PR_NUMBER:-}" ]; then
  tag="pr:${AG_PR_NUMBER}"
else
  tag="branch:${GITHUB_REF_NAME:?}"
fi
args=(
  --suite "$AG_SUITE" --format "$AG_FORMAT" --db "$AG_DB" --name "${GITHUB_SHA:-local}"
  --tag "$tag" --json agentgauge-results.json --html agentgauge-report.html --overwrite
  --no-progress
)
if [ -n "${AG_FAIL_UNDER:-}" ]; then
  args+=(--fail-under "$AG_FAIL_UNDER")
fi
# results of an earlier run in this folder must not pass for this one's
rm -f agentgauge-results.json agentgauge-report.html
# the trace paths (globs expanded) and the extra arguments are split on spaces, as written
# shellcheck disable=SC2086
agentgauge evaluate $AG_TRACES "${args[@]}" ${AG_ARGS:-}
status=$?
if [ "$status" -eq 2 ] || [ ! -f agentgauge-results.json ]; then
  exit "$status"
fi
run_id=$(python -c 'import json; print(json.load(open("agentgauge-results.json"))["run_id"])')
echo "run-id=$run_id" >> "$GITHUB_OUTPUT"
echo "status=$status" >> "$GITHUB_OUTPUT"
