#!/usr/bin/env bash
# The table of a GPU run: every part's steps.tsv under the directories given (each a part's --out
# directory, or one holding several), as one Markdown table of part x step (passed, FAILED,
# skipped and why), with each part's totals and its bench verdicts.
#
#   bash report.sh DIR... > report.md
set -u
[ $# -gt 0 ] || { echo "usage: $0 RESULTS-DIR..." >&2; exit 2; }
tables=$(find "$@" -name steps.tsv | sort)
[ -n "$tables" ] || { echo "no steps.tsv under $*" >&2; exit 1; }
echo "| part | step | result | why |"
echo "|---|---|---|---|"
for table in $tables; do
  awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$table"
done
echo
for table in $tables; do
  part=$(head -n 1 "$table" | cut -f1)
  awk -F'\t' -v part="$part" '
    $3 == "passed" { p++ } $3 == "FAILED" { f++ } $3 == "skipped" { s++ }
    END { printf "%s: %d passed, %d failed, %d skipped\n\n", part, p, f, s }' "$table"
  dir=$(dirname "$table")
  for verdicts in "$dir"/gpu_bench.txt "$dir"/virtual_arrays_gpu.txt; do
    [ -f "$verdicts" ] || continue
    grep -E "verdict|goal|noisy" "$verdicts" | sed "s/^/    $part $(basename "$verdicts"): /"
  done
done
