#!/usr/bin/env bash
# The pull request's run against the newest stored run of its base branch, as Markdown: the
# comment's text, also added to the job's summary.
set -uo pipefail
: "${AG_DB:?}" "${AG_RUN_ID:?}" "${AG_BASE_REF:?}" "${GITHUB_OUTPUT:?}"

out="$PWD/agentgauge-comment.md"
base=$(agentgauge runs --db "$AG_DB" --tag "branch:$AG_BASE_REF" --ids --limit 1)
status=0
if [ -z "$base" ]; then
  {
    echo "<!-- agentgauge-compare -->"
    echo "### agentgauge"
    echo
    echo "No run of the base branch \`$AG_BASE_REF\` is stored yet to compare with: the"
    echo "workflow stores one on each push to \`$AG_BASE_REF\`."
  } > "$out"
else
  args=(compare "$base" "$AG_RUN_ID" --db "$AG_DB" --markdown "$out" --overwrite)
  if [ -n "${AG_REPORT_URL:-}" ]; then
    args+=(--report-url "$AG_REPORT_URL")
  fi
  if [ "${AG_FAIL_IF_WORSE:-false}" = "true" ]; then
    args+=(--fail-if-worse)
  fi
  agentgauge "${args[@]}"
  status=$?
  if [ "$status" -eq 2 ]; then
    exit 2
  fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$out" >> "$GITHUB_STEP_SUMMARY"
fi
echo "markdown=$out" >> "$GITHUB_OUTPUT"
echo "base-run-id=$base" >> "$GITHUB_OUTPUT"
echo "status=$status" >> "$GITHUB_OUTPUT"
