#!/usr/bin/env bash
# Post the comparison on the pull request, or update the comment an earlier push posted (the
# one whose body starts with the marker). A token that may not write (a pull request from a
# fork) leaves a warning: the comparison is in the job's summary all the same.
set -uo pipefail
: "${AG_TOKEN:?}" "${AG_PR_NUMBER:?}" "${AG_MARKDOWN:?}" "${GITHUB_REPOSITORY:?}"

marker="<!-- agentgauge-compare -->"
issues="${GITHUB_API_URL:-https://api.github.com}/repos/${GITHUB_REPOSITORY}/issues"
headers=(-H "Authorization: Bearer $AG_TOKEN" -H "Accept: application/vnd.github+json")
body=$(jq -Rs '{body: .}' < "$AG_MARKDOWN")

existing=""
page=1
while [ -z "$existing" ]; do
  listed=$(curl -fsS "${headers[@]}" "$issues/$AG_PR_NUMBER/comments?per_page=100&page=$page") || {
    echo "::warning::agentgauge: cannot read the pull request's comments; see the job summary"
    exit 0
  }
  [ "$(jq length <<< "$listed")" -eq 0 ] && break
  existing=$(jq -r --arg m "$marker" \
    '[.[] | select(.body | startswith($m))][0].id // empty' <<< "$listed")
  page=$((page + 1))
done

if [ -n "$existing" ]; then
  request=(-X PATCH "$issues/comments/$existing")
else
  request=(-X POST "$issues/$AG_PR_NUMBER/comments")
fi
curl -fsS "${headers[@]}" "${request[@]}" -d "$body" > /dev/null || {
  echo "::warning::agentgauge: cannot post the comment (a read-only token?); see the job summary"
  exit 0
}
